package io.pgjobs.worker;

import io.pgjobs.store.ClaimedJob;

/**
 * A job this worker holds in the database: claimed, and not yet given up by a confirmed write (its
 * outcome, or a give-back). While held it is heartbeated; a cancellation announced for it is recorded
 * here even before its handler starts.
 */
final class HeldJob {
  private final ClaimedJob job;
  private final long claimedAtNanos;
  private volatile boolean started;
  private volatile boolean cancelRequested;

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

  /** A lane has taken the job: from now on it is no longer "prefetched". */
  void markStarted() {
    started = true;
  }

  boolean started() {
    return started;
  }

  void requestCancel() {
    cancelRequested = true;
  }

  boolean cancelRequested() {
    return cancelRequested;
  }
}
