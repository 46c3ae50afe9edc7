package io.pgjobs;

import java.time.Instant;
import java.util.List;

/**
 * A limited queue's limits and what they hold back now, as the API, CLI and dashboard show it.
 *
 * @param queue the queue
 * @param limits its limits
 * @param source who set them: {@code code} (a worker's declaration) or {@code api} (at run time)
 * @param updatedAt when they were last set
 * @param running its jobs running now (what {@link QueueLimits#globalConcurrency()} counts)
 * @param waiting its due jobs waiting to start
 * @param nextStart when the queue's rate allows the next start, or null if it allows one now (or has no
 *     rate)
 * @param waitingFor why due jobs wait, if they do: {@link #AT_GLOBAL_LIMIT}, {@link #RATE_LIMITED}, or
 *     {@link #PARTITIONS_BUSY} (every partition with due jobs is at its own limit); null if none waits for a
 *     limit (they wait for a lane, or none waits)
 * @param partitions the busiest partitions (running plus waiting), at most 50, busiest first; empty for an
 *     unpartitioned queue
 */
public record QueueLimitsStatus(
    String queue,
    QueueLimits limits,
    String source,
    Instant updatedAt,
    long running,
    long waiting,
    Instant nextStart,
    String waitingFor,
    List<Partition> partitions) {

  /** Due jobs wait because the queue's global concurrency is reached. */
  public static final String AT_GLOBAL_LIMIT = "at_global_limit";
  /** Due jobs wait because the queue's (or their partition's) rate allows no start now. */
  public static final String RATE_LIMITED = "rate_limited";
  /** Due jobs wait because their partition runs as many as its concurrency allows. */
  public static final String PARTITION_BUSY = "partition_busy";
  /** Every partition with due jobs is at its own limit. */
  public static final String PARTITIONS_BUSY = "partitions_busy";

  /**
   * One partition's usage.
   *
   * @param partition its key ({@code ""}: jobs without one)
   * @param running its jobs running now
   * @param waiting its due jobs waiting
   * @param nextStart when its rate allows the next start, or null if now (or no partition rate)
   * @param waitingFor {@link #PARTITION_BUSY}, {@link #RATE_LIMITED}, or null
   */
  public record Partition(
      String partition, long running, long waiting, Instant nextStart, String waitingFor) {}
}
