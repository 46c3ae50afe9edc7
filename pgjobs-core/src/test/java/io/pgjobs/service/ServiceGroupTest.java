package io.pgjobs.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** {@link ServiceGroup}: start in order, stop in reverse, each awaited before the next is stopped. */
class ServiceGroupTest {
  private final List<String> log = new CopyOnWriteArrayList<>();

  private BackgroundService service(String name, boolean failsToStart) {
    return new BackgroundService() {
      @Override
      public BackgroundService start() {
        if (failsToStart) {
          throw new IllegalStateException(name + " cannot start");
        }
        log.add("start " + name);
        return this;
      }

      @Override
      public void stop() {
        log.add("stop " + name);
      }

      @Override
      public boolean awaitStopped(Duration timeout) {
        log.add("await " + name);
        return true;
      }
    };
  }

  @Test
  void stopsInReverseOrderOfStartAwaitingEachBeforeTheNext() {
    ServiceGroup group = new ServiceGroup()
        .add("a", service("a", false), Duration.ofSeconds(1))
        .add("b", service("b", false), Duration.ofSeconds(1))
        .add("c", service("c", false), Duration.ofSeconds(1));
    group.start();
    assertThat(group.stopOrder()).containsExactly("c", "b", "a");
    group.stop();
    group.stop(); // a second stop does nothing
    assertThat(log)
        .containsExactly(
            "start a", "start b", "start c", "stop c", "await c", "stop b", "await b", "stop a",
            "await a");
  }

  @Test
  void aServiceThatFailsToStartStopsThoseStartedBeforeIt() {
    ServiceGroup group = new ServiceGroup()
        .add("a", service("a", false), Duration.ofSeconds(1))
        .add("b", service("b", false), Duration.ofSeconds(1))
        .add("c", service("c", true), Duration.ofSeconds(1));
    assertThatIllegalStateException().isThrownBy(group::start).withMessage("c cannot start");
    assertThat(log).containsExactly("start a", "start b", "stop b", "await b", "stop a", "await a");
  }
}
