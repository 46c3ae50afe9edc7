package io.pgjobs;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The state of a job. The lowercase name is what the database, the HTTP API and the metrics use.
 *
 * <pre>
 * queued ──claim──▶ running ──▶ succeeded
 *    ▲                 │  ├────▶ failed     (attempts exhausted, or discarded: the dead letters)
 *    │                 │  └────▶ cancelled
 *    └──── retrying ◀──┘        (failed attempt; waits for run_at, then is claimed again)
 * </pre>
 *
 * A job of a {@link JobGraph} starts {@code blocked} while jobs it depends on have not ended, and is then
 * queued (or cancelled). A queued job whose {@code run_at} lies in the future is <em>scheduled</em>; that is not a separate state.
 */
public enum JobState {
  /** Waiting to be claimed once {@code run_at} has passed. */
  QUEUED,
  /** Claimed by a worker; its handler is running. */
  RUNNING,
  /** An attempt failed; the job waits for {@code run_at} and then runs again. */
  RETRYING,
  /** Finished: the handler returned normally. */
  SUCCEEDED,
  /** Finished: attempts exhausted or discarded. These are the dead letters. */
  FAILED,
  /** Finished: cancelled before or while it ran. */
  CANCELLED,
  /**
   * Waits for the jobs it depends on to end ({@link JobGraph}); then it is queued, or cancelled if one
   * of them failed and its dependency says so. No claim reads a blocked job.
   */
  BLOCKED;

  /** The name used in SQL, JSON and metrics: {@code queued}, {@code running}, ... */
  public String value() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** True for {@link #SUCCEEDED}, {@link #FAILED} and {@link #CANCELLED}: the job will not run again by itself. */
  public boolean isTerminal() {
    return this == SUCCEEDED || this == FAILED || this == CANCELLED;
  }

  /**
   * Parses a state name, case-insensitively.
   *
   * @throws IllegalArgumentException naming the allowed values when {@code value} is none of them
   */
  public static JobState parse(String value) {
    if (value != null) {
      for (JobState state : values()) {
        if (state.value().equalsIgnoreCase(value.trim())) {
          return state;
        }
      }
    }
    throw new IllegalArgumentException(
        "unknown job state '" + value + "'; allowed: " + allowedValues());
  }

  /** The allowed state names, comma-separated, for error messages. */
  public static String allowedValues() {
    return Arrays.stream(values()).map(JobState::value).collect(Collectors.joining(", "));
  }
}
