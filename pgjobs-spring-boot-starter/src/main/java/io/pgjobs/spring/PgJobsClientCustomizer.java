package io.pgjobs.spring;

import io.pgjobs.JobClient;

/**
 * Changes the auto-configured client's builder after the {@code pgjobs.*} properties were applied: e.g.
 * {@code knownTypes(...)} for enqueueing by name, or a JSON mapper. Every bean of this interface is
 * called, in {@code @Order}.
 */
@FunctionalInterface
public interface PgJobsClientCustomizer {
  /** Changes {@code builder}. */
  void customize(JobClient.Builder builder);
}
