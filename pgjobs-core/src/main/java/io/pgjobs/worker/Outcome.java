package io.pgjobs.worker;

import io.pgjobs.store.ClaimedJob;

/**
 * How one attempt of a job ends: one record per way, each carrying the claim it ends and what its
 * statement needs. {@link JobRunner} decides which (from what the handler did and why it was stopped);
 * {@link JobCompleter#record} maps each to its statement and is the only one to write it, so the
 * runner neither picks SQL nor touches the claim token. A record is all an outcome costs: a success is
 * the very object the completer queues for its next batch.
 */
sealed interface Outcome {
  /** The claim this outcome ends: the job's id and claim token, which fence its statement. */
  ClaimedJob job();

  /**
   * The handler returned {@code outputJson} (JSON, or null): queued and written with the next batch
   * ({@code SUCCEED_BATCH}), {@code durationNanos} after it started.
   */
  record Succeeded(ClaimedJob job, String outputJson, long durationNanos) implements Outcome {}

  /** A failed attempt with attempts left: {@code retrying}, due in {@code delayMs} ({@code RETRY_LATER}). */
  record Retry(ClaimedJob job, long delayMs, String errorJson) implements Outcome {}

  /**
   * Run again in {@code delayMs} without spending the attempt ({@code SNOOZE}): the handler asked, or no
   * handler here knows the job's type yet. A negative delay: once the jobs it waits for have ended
   * ({@code SnoozeJobException.untilDependenciesEnd()}).
   */
  record Snooze(ClaimedJob job, long delayMs) implements Outcome {}

  /** The last attempt failed, or the job can never run (its payload, its type): {@code failed}. */
  record Failed(ClaimedJob job, String errorJson) implements Outcome {}

  /** The handler discarded the job ({@code DiscardJobException}): {@code failed}, counted as discarded. */
  record Discarded(ClaimedJob job, String errorJson) implements Outcome {}

  /** Its cancellation was asked while it ran, and the handler stopped or returned: {@code cancelled}. */
  record Cancelled(ClaimedJob job, String errorJson) implements Outcome {}

  /**
   * The worker stopped the handler (shutdown, or lost contact with the database): back to the queue,
   * due now ({@code RELEASE}).
   */
  record Released(ClaimedJob job, String errorJson) implements Outcome {}
}
