package io.pgjobs.bench;

import io.pgjobs.worker.JobWorker;

/** The worker defaults the sweep compares against. */
final class JobWorkerDefaults {
  static final int CLAIM_BATCH = JobWorker.DEFAULT_CLAIM_BATCH;

  private JobWorkerDefaults() {}
}
