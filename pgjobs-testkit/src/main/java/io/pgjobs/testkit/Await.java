package io.pgjobs.testkit;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The one wait of the tests for a job (or anything with a state) to reach a state. Independent of
 * pgjobs-core like the rest of the testkit, so the job is read through a function, typically {@code
 * client::get}:
 *
 * <pre>{@code
 * Job done = Await.awaitState(client::get, id, Job::state, JobState.SUCCEEDED);
 * }</pre>
 *
 * <p>It polls every {@link #POLL} (a job's state changes within milliseconds of its cause, so a slower
 * poll only adds to every test's time), and on timeout fails with the last state seen.
 */
public final class Await {
  /** How long {@link #awaitState(Function, Object, Function, Object)} waits. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

  /** How often the state is read. */
  public static final Duration POLL = Duration.ofMillis(10);

  private Await() {}

  /**
   * Waits at most {@link #DEFAULT_TIMEOUT} until {@code read.apply(id)} is present and in {@code state},
   * and returns it as read then.
   *
   * @throws AssertionError with the last state seen, on timeout
   */
  public static <K, J, S> J awaitState(
      Function<K, Optional<J>> read, K id, Function<J, S> stateOf, S state) {
    return awaitState(read, id, stateOf, state, DEFAULT_TIMEOUT);
  }

  /** Same with a timeout of its own. */
  public static <K, J, S> J awaitState(
      Function<K, Optional<J>> read, K id, Function<J, S> stateOf, S state, Duration timeout) {
    return awaitState(() -> read.apply(id), stateOf, state, timeout, () -> String.valueOf(id));
  }

  /**
   * The general form: waits until {@code read} gives something in {@code state}, and returns it;
   * {@code what} names it in the failure.
   */
  public static <J, S> J awaitState(
      Supplier<Optional<J>> read,
      Function<J, S> stateOf,
      S state,
      Duration timeout,
      Supplier<String> what) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Object last = "absent";
    while (true) {
      Optional<J> current = read.get();
      if (current.isPresent()) {
        S seen = stateOf.apply(current.get());
        if (Objects.equals(seen, state)) {
          return current.get();
        }
        last = seen;
      }
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError(
            what.get() + " not " + state + " within " + timeout + " (last seen: " + last + ")");
      }
      try {
        Thread.sleep(POLL);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(
            "interrupted while waiting for " + what.get() + " to be " + state, e);
      }
    }
  }
}
