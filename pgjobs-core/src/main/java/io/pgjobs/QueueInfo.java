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
 * @param unrunnable its waiting jobs that need a capability no live worker of the queue declares
 * @param unserved true while jobs wait in it and no live worker serves the queue at all (a typo in a queue
 *     name, a worker not started): they wait until one does
 */
public record QueueInfo(
    String name,
    Map<JobState, Long> counts,
    long scheduled,
    Duration oldestDueAge,
    boolean paused,
    Unrunnable unrunnable,
    boolean unserved) {

  /** A queue that some live worker serves, or where nothing waits (the components before {@code unserved}). */
  public QueueInfo(
      String name,
      Map<JobState, Long> counts,
      long scheduled,
      Duration oldestDueAge,
      boolean paused,
      Unrunnable unrunnable) {
    this(name, counts, scheduled, oldestDueAge, paused, unrunnable, false);
  }

  /** A queue whose jobs every live worker could run (the components before {@code unrunnable}). */
  public QueueInfo(
      String name,
      Map<JobState, Long> counts,
      long scheduled,
      Duration oldestDueAge,
      boolean paused) {
    this(name, counts, scheduled, oldestDueAge, paused, Unrunnable.NONE);
  }

  /**
   * Waiting jobs (queued or retrying, due or scheduled) that need a capability which no live worker
   * serving their queue has declared: they stay queued (they are not failed) until such a worker starts.
   *
   * @param count how many
   * @param capabilities the capabilities they need, sorted
   */
  public record Unrunnable(long count, java.util.List<String> capabilities) {
    /** None. */
    public static final Unrunnable NONE = new Unrunnable(0, java.util.List.of());
  }

  /** The count of one state. */
  public long count(JobState state) {
    return counts.getOrDefault(state, 0L);
  }
}
