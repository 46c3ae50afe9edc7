package io.pgjobs;

import java.time.Duration;
import java.util.Map;

/**
 * A queue as the dashboard and the API show it.
 *
 * @param name queue name
 * @param counts jobs per state (finished ones while kept); every state present
 * @param scheduled queued jobs not yet due
 * @param oldestDueAge how long the oldest due job has been waiting, or null if none is due
 * @param paused true if workers do not claim from it
 */
public record QueueInfo(String name, Map<JobState, Long> counts, long scheduled, Duration oldestDueAge, boolean paused) {
  /** The count of one state. */
  public long count(JobState state) {
    return counts.getOrDefault(state, 0L);
  }
}
