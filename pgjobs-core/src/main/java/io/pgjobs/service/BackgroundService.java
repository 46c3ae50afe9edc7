package io.pgjobs.service;

import java.time.Duration;

/**
 * A loop that runs in the background: the poller of a queue, the LISTEN connection, the heartbeat, the
 * maintenance leader's tasks, the completer's writer. One lifecycle for all of them (like River's
 * {@code BaseStartStop}): {@link #start()}, then {@link #stop()} to ask it to end, then
 * {@link #awaitStopped(Duration)} to wait for it within a deadline. Stopping is split from waiting so
 * that a group can ask many loops to stop at once and then wait for each ({@link ServiceGroup}).
 */
public interface BackgroundService {
  /**
   * Starts the loop on a thread of its own and returns at once (after any set-up the loop needs before
   * it runs). Calling it twice does nothing; a stopped service does not restart.
   *
   * @return this service
   */
  BackgroundService start();

  /** Asks the loop to end and returns at once. Idempotent; harmless before {@link #start()}. */
  void stop();

  /**
   * Waits at most {@code timeout} for the loop to end after {@link #stop()}, then releases what it
   * holds (its connection, its registration). An interrupt ends the wait early and stays set.
   *
   * @return true if the loop has ended (or never started)
   */
  boolean awaitStopped(Duration timeout);

  /** Stops and waits at most {@code timeout}: {@link #stop()} then {@link #awaitStopped(Duration)}. */
  default boolean stopAndAwait(Duration timeout) {
    stop();
    return awaitStopped(timeout);
  }

  /**
   * Waits for {@code thread} to end within {@code timeout}; on an interrupt it stops waiting and keeps
   * the interrupt flag. For implementations whose loop is one thread.
   *
   * @return true if the thread has ended, or is null (never started)
   */
  static boolean join(Thread thread, Duration timeout) {
    if (thread == null) {
      return true;
    }
    try {
      return thread.join(timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !thread.isAlive();
    }
  }
}
