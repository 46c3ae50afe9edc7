package io.pgjobs;

/**
 * What {@link JobClient#cancel} did (the three-way semantics of seed 003, plus not found).
 *
 * @param outcome what happened
 * @param state the job's state after the call: {@code cancelled}, {@code running} (pending on its
 *     worker), the terminal state it already had, or null when not found
 */
public record CancelResult(Outcome outcome, JobState state) {
  /** The possible outcomes. */
  public enum Outcome {
    /** It was waiting (queued, scheduled or retrying) and is now cancelled. HTTP 200. */
    CANCELLED,
    /** It is running: its cancel flag is set and its worker will stop it. HTTP 202. */
    PENDING_ON_WORKER,
    /** It had already finished; nothing changed. HTTP 409. */
    ALREADY_TERMINAL,
    /** No job has that id. HTTP 404. */
    NOT_FOUND
  }
}
