package io.pgjobs.worker;

import io.pgjobs.store.ClaimedJob;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A job this worker holds in the database: claimed, and not yet given up by a confirmed write (its
 * outcome, or a give-back). While held it is heartbeated; a cancellation announced for it is recorded
 * here even before its handler starts.
 */
final class HeldJob {
  private final ClaimedJob job;
  private final long claimedAtNanos;
  /** {@link #WAITING}, {@link #MARKED} or {@link #STARTED}. */
  private final AtomicInteger phase = new AtomicInteger(WAITING);

  private volatile boolean cancelRequested;

  /** Claimed, not started, and no heartbeat has marked it {@code prefetched} in the database. */
  static final int WAITING = 0;
  /** Claimed, not started, and a heartbeat has marked it {@code prefetched} (or is about to). */
  static final int MARKED = 1;
  /** A lane has taken it. */
  static final int STARTED = 2;

  HeldJob(ClaimedJob job, long claimedAtNanos) {
    this.job = job;
    this.claimedAtNanos = claimedAtNanos;
  }

  ClaimedJob job() {
    return job;
  }

  long claimedAtNanos() {
    return claimedAtNanos;
  }

  /**
   * A lane takes the job. True if no heartbeat has marked it {@code prefetched}: it can start at once.
   * False if one has: the caller must clear the mark in the database before the handler runs (see
   * {@link HeldJobs#startMarked}), or a worker dying mid-run would have the attempt given back.
   */
  boolean startUnmarked() {
    return phase.compareAndSet(WAITING, STARTED);
  }

  /** For the heartbeat, under its lock: true if the job has not started (it is then marked). */
  boolean markIfWaiting() {
    return phase.compareAndSet(WAITING, MARKED) || phase.get() == MARKED;
  }

  void setStarted() {
    phase.set(STARTED);
  }

  boolean started() {
    return phase.get() == STARTED;
  }

  void requestCancel() {
    cancelRequested = true;
  }

  boolean cancelRequested() {
    return cancelRequested;
  }
}
