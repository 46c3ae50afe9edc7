package io.pgjobs;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * A job as stored: a read-only snapshot.
 *
 * @param id UUIDv7, time-ordered
 * @param type the job type's name
 * @param queue queue
 * @param payload the payload as JSON
 * @param priority higher runs first
 * @param state current state
 * @param attempts claims so far (the running one included)
 * @param maxAttempts most attempts
 * @param runAt earliest (next) start
 * @param createdAt when it was enqueued
 * @param attemptedAt when the latest attempt started, or null
 * @param finishedAt when it reached a terminal state, or null
 * @param lockedBy the worker running it, or for a finished job the worker of its last attempt
 * @param heartbeatAt last heartbeat while running, or null
 * @param context debugging text given at enqueue, or null
 * @param idempotencyKey its idempotency key, or null
 * @param timeout per-job timeout override, or null
 * @param progressPercent last reported progress, or null
 * @param progressMessage last reported progress message, or null
 * @param errors one entry per failed attempt, oldest first
 * @param output the handler's output for a succeeded job, or null
 * @param cancelRequested true when cancellation was asked for a running job
 * @param parentId the job whose handler enqueued this one, or null
 * @param capability the capability a worker must declare to run it, or null if any worker may
 * @param snoozes how often its handler snoozed it ({@link SnoozeJobException}); a snooze does not count as
 *     an attempt
 */
public record Job(
    UUID id,
    String type,
    String queue,
    JsonNode payload,
    int priority,
    JobState state,
    int attempts,
    int maxAttempts,
    Instant runAt,
    Instant createdAt,
    Instant attemptedAt,
    Instant finishedAt,
    String lockedBy,
    Instant heartbeatAt,
    String context,
    String idempotencyKey,
    Duration timeout,
    Integer progressPercent,
    String progressMessage,
    List<JobError> errors,
    JsonNode output,
    boolean cancelRequested,
    UUID parentId,
    String capability,
    int snoozes) {

  /** A job never snoozed (the components before {@code snoozes}). */
  public Job(
      UUID id,
      String type,
      String queue,
      JsonNode payload,
      int priority,
      JobState state,
      int attempts,
      int maxAttempts,
      Instant runAt,
      Instant createdAt,
      Instant attemptedAt,
      Instant finishedAt,
      String lockedBy,
      Instant heartbeatAt,
      String context,
      String idempotencyKey,
      Duration timeout,
      Integer progressPercent,
      String progressMessage,
      List<JobError> errors,
      JsonNode output,
      boolean cancelRequested,
      UUID parentId,
      String capability) {
    this(
        id,
        type,
        queue,
        payload,
        priority,
        state,
        attempts,
        maxAttempts,
        runAt,
        createdAt,
        attemptedAt,
        finishedAt,
        lockedBy,
        heartbeatAt,
        context,
        idempotencyKey,
        timeout,
        progressPercent,
        progressMessage,
        errors,
        output,
        cancelRequested,
        parentId,
        capability,
        0);
  }

  /** A job that needs no capability (the components before {@code capability}). */
  public Job(
      UUID id,
      String type,
      String queue,
      JsonNode payload,
      int priority,
      JobState state,
      int attempts,
      int maxAttempts,
      Instant runAt,
      Instant createdAt,
      Instant attemptedAt,
      Instant finishedAt,
      String lockedBy,
      Instant heartbeatAt,
      String context,
      String idempotencyKey,
      Duration timeout,
      Integer progressPercent,
      String progressMessage,
      List<JobError> errors,
      JsonNode output,
      boolean cancelRequested,
      UUID parentId) {
    this(
        id,
        type,
        queue,
        payload,
        priority,
        state,
        attempts,
        maxAttempts,
        runAt,
        createdAt,
        attemptedAt,
        finishedAt,
        lockedBy,
        heartbeatAt,
        context,
        idempotencyKey,
        timeout,
        progressPercent,
        progressMessage,
        errors,
        output,
        cancelRequested,
        parentId,
        null);
  }

  /** True for a queued job whose {@code runAt} is still in the future. */
  public boolean isScheduled() {
    return state == JobState.QUEUED && runAt.isAfter(Instant.now());
  }
}
