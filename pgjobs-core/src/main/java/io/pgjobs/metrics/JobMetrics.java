package io.pgjobs.metrics;

import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Receives what pgjobs measures. The default methods do nothing; {@link #NONE} is used when no metrics
 * are configured. Implementations must be thread-safe and fast: they are called on the job path.
 */
public interface JobMetrics {
  /** Records nothing. */
  JobMetrics NONE = new JobMetrics() {};

  /** {@code count} jobs of {@code type} were enqueued. */
  default void enqueued(String type, int count) {}

  /** An attempt of a job of {@code type} started. */
  default void started(String type) {}

  /** An attempt ended with {@code outcome} after running for {@code duration}. */
  default void completed(String type, String outcome, Duration duration) {}

  /**
   * Offers a source of due jobs per queue, for a queue depth gauge. Called once per worker; the
   * supplier runs a query, so implementations should cache its value for a few seconds.
   */
  default void queueDepth(Supplier<Map<String, Long>> depthByQueue) {}

  /**
   * The limited queues' usage ({@code JobClient.limitsStatus()}), read when a registry is scraped (at most
   * every few seconds).
   */
  default void queueLimits(Supplier<java.util.List<io.pgjobs.QueueLimitsStatus>> statuses) {}

  /** Offers the number of stuck lanes of worker {@code workerId}, for a gauge. Called once per worker. */
  default void stuckLanes(String workerId, java.util.function.IntSupplier stuckLanes) {}

  /** Offers how many times worker {@code workerId} has fenced itself, for a counter. Called once per worker. */
  default void fences(String workerId, java.util.function.LongSupplier fences) {}

  /**
   * Offers how many graph children worker {@code workerId} has started by hand-off (in the statement
   * that recorded their last parent's success), for a counter. Called once per worker.
   */
  default void handOffs(String workerId, java.util.function.LongSupplier handOffs) {}

  /** A worker serves {@code queue}: report its depth from now on. */
  default void watchQueue(String queue) {}
}
