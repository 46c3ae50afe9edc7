package io.pgjobs;

import java.util.UUID;

/**
 * Why one waiting job of a limited queue has not started yet ({@link JobClient#limitsWait}), computed for
 * its own partition.
 *
 * @param jobId the job
 * @param queue its queue
 * @param partition its partition ({@code ""}: none, as for a queue without a partition rule)
 * @param waitingFor the first limit that holds it back, in the order the claim applies them:
 *     {@link QueueLimitsStatus#AT_GLOBAL_LIMIT}, {@link QueueLimitsStatus#RATE_LIMITED} (the queue's rate),
 *     {@link QueueLimitsStatus#PARTITION_BUSY}, or {@link #PARTITION_RATE_LIMITED}; null if no limit does
 *     (it waits for a worker's free lane and its turn)
 */
public record JobWait(UUID jobId, String queue, String partition, String waitingFor) {
  /** The job waits because its partition's rate allows no start now. */
  public static final String PARTITION_RATE_LIMITED = "partition_rate_limited";

  /** Whether a limit holds the job back (rather than a lane). */
  public boolean heldByLimit() {
    return waitingFor != null;
  }
}
