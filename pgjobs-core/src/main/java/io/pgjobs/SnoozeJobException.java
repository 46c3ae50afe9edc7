package io.pgjobs;

import java.time.Duration;
import java.util.Objects;

/**
 * Thrown by a handler to run the job again later <em>without spending an attempt</em> (for example
 * while a rate limit is in force). The job goes back to {@code queued} with {@code run_at = now + delay}
 * and its attempt count is what it was before this run.
 *
 * <pre>{@code throw new SnoozeJobException(Duration.ofSeconds(30));}</pre>
 */
public class SnoozeJobException extends RuntimeException {
  private final Duration delay;
  private final boolean untilDependenciesEnd;

  /** @param delay how long to wait; zero or positive, at most {@link RetryPolicy#MAX_DELAY} */
  public SnoozeJobException(Duration delay) {
    super("snoozed for " + delay, null, false, false);
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative()) {
      throw new IllegalArgumentException("snooze delay must be zero or positive, was " + delay);
    }
    if (delay.compareTo(RetryPolicy.MAX_DELAY) > 0) {
      // A longer snooze could not be written (the job stayed running until rescue): the handler's
      // throw of this constructor fails the attempt instead, with this message.
      throw new IllegalArgumentException("snooze delay must be at most "
          + RetryPolicy.MAX_DELAY.toDays() + " days (RetryPolicy.MAX_DELAY), was " + delay);
    }
    this.delay = delay;
    this.untilDependenciesEnd = false;
  }

  private SnoozeJobException() {
    super("snoozed until the jobs it waits for end", null, false, false);
    this.delay = Duration.ZERO;
    this.untilDependenciesEnd = true;
  }

  /**
   * Snoozes the job until every job it waits for has ended: it goes {@code blocked}, counted down by
   * their ends as a job of a graph is, and is queued by the last of them (at once if none is left). A
   * workflow awaiting the jobs it started ({@code WorkflowContext.awaitJobs}) waits so, without a lane; a
   * job that waits for nothing is queued again at once.
   */
  public static SnoozeJobException untilDependenciesEnd() {
    return new SnoozeJobException();
  }

  /** True when the job waits for the jobs it depends on ({@link #untilDependenciesEnd()}), not for a delay. */
  public boolean waitsForDependencies() {
    return untilDependenciesEnd;
  }

  /** How long the job waits before it can be claimed again. */
  public Duration delay() {
    return delay;
  }
}
