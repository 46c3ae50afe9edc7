package io.pgjobs.service;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Background services started in the order they were added and stopped in reverse: a loop started later
 * (it may depend on those started before it) is stopped, and waited for, before any started earlier. Each
 * service is waited for within its own budget before the next is asked to stop, so one that drains work
 * (running jobs) still has the services it needs (the completer, the heartbeat) while it drains.
 *
 * <pre>{@code
 * ServiceGroup group = new ServiceGroup()
 *     .add("heartbeat", heartbeat, Duration.ofSeconds(5))
 *     .add("pollers", pollers, Duration.ofSeconds(10));
 * group.start();   // heartbeat, then pollers
 * group.stop();    // pollers (awaited), then heartbeat (awaited)
 * }</pre>
 */
public final class ServiceGroup {
  private static final Logger log = LoggerFactory.getLogger(ServiceGroup.class);

  private record Member(String name, BackgroundService service, Duration budget) {}

  private final List<Member> members = new ArrayList<>();
  private final List<Member> started = new ArrayList<>();

  /**
   * Adds {@code service}, started after those added before it and stopped before them; {@link #stop()}
   * waits for it at most {@code budget}.
   */
  public synchronized ServiceGroup add(String name, BackgroundService service, Duration budget) {
    members.add(new Member(
        Objects.requireNonNull(name, "name"),
        Objects.requireNonNull(service, "service"),
        Objects.requireNonNull(budget, "budget")));
    return this;
  }

  /**
   * Starts each service in the order added. If one fails to start, those already started are stopped
   * (in reverse) and the failure is thrown.
   */
  public synchronized void start() {
    for (Member m : members) {
      if (started.contains(m)) {
        continue;
      }
      try {
        m.service().start();
      } catch (RuntimeException e) {
        stop();
        throw e;
      }
      started.add(m);
    }
  }

  /** The names of the started services in the order they will be stopped (the reverse of starting). */
  public synchronized List<String> stopOrder() {
    return started.reversed().stream().map(Member::name).toList();
  }

  /**
   * Stops the started services in reverse order of start: asks each to stop and waits for it within its
   * budget before moving on to the one started before it. A service that does not end in time is logged
   * and left behind (its threads are daemons).
   */
  public void stop() {
    List<Member> toStop;
    synchronized (this) {
      toStop = new ArrayList<>(started.reversed());
      started.clear();
    }
    for (Member m : toStop) {
      if (!m.service().stopAndAwait(m.budget())) {
        log.warn("{} did not stop within {}", m.name(), m.budget());
      }
    }
  }
}
