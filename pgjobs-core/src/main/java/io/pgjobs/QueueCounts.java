package io.pgjobs;

import java.util.Map;

/**
 * How many jobs one queue holds in each state. {@code scheduled} counts the queued jobs whose
 * {@code run_at} lies in the future (they are included in the {@code queued} count too).
 *
 * @param queue queue name
 * @param counts count per state; every state is present, zero when empty
 * @param scheduled queued jobs not yet due
 */
public record QueueCounts(String queue, Map<JobState, Long> counts, long scheduled) {
  /** The count of one state. */
  public long count(JobState state) {
    return counts.getOrDefault(state, 0L);
  }
}
