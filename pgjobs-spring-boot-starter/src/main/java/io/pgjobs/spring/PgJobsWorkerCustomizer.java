package io.pgjobs.spring;

import io.pgjobs.worker.JobWorker;

/**
 * Changes the auto-configured worker's builder after the {@code pgjobs.worker.*} properties and the
 * handler beans were applied: for settings without a property (heartbeat interval, HTTP timeouts, a JSON
 * mapper, ...). Every bean of this interface is called, in {@code @Order}.
 */
@FunctionalInterface
public interface PgJobsWorkerCustomizer {
  /** Changes {@code builder}. */
  void customize(JobWorker.Builder builder);
}
