package io.pgjobs.store;

import java.time.Instant;
import java.util.UUID;

/**
 * What the worker needs of a job it has just claimed.
 *
 * @param attempt the attempt this claim started (1-based), as shown to the handler and in errors
 * @param claimToken the claim's fence token: every later write to the running job matches on it, so a
 *     write from a claim that is no longer the job's current one changes nothing (see {@link ExecutionSql})
 * @param traceContext the W3C trace context stored at enqueue ({@code traceparent[;tracestate]}), or null
 * @param snoozes how many times the job was snoozed before this attempt
 * @param hasDependents whether jobs of a graph wait on this one (its success may unblock them), as
 *     far as the claim said (a limited queue's claim does not say: false)
 */
public record ClaimedJob(
    UUID id,
    String type,
    String queue,
    String payloadJson,
    int priority,
    int attempt,
    int maxAttempts,
    Instant runAt,
    Instant createdAt,
    String context,
    Long timeoutMs,
    long claimToken,
    String traceContext,
    int snoozes,
    boolean hasDependents) {

  /** A claimed job with no dependents (the components before {@code hasDependents}). */
  public ClaimedJob(
      UUID id,
      String type,
      String queue,
      String payloadJson,
      int priority,
      int attempt,
      int maxAttempts,
      Instant runAt,
      Instant createdAt,
      String context,
      Long timeoutMs,
      long claimToken,
      String traceContext,
      int snoozes) {
    this(
        id,
        type,
        queue,
        payloadJson,
        priority,
        attempt,
        maxAttempts,
        runAt,
        createdAt,
        context,
        timeoutMs,
        claimToken,
        traceContext,
        snoozes,
        false);
  }

  /** A claimed job never snoozed (the components before {@code snoozes}). */
  public ClaimedJob(
      UUID id,
      String type,
      String queue,
      String payloadJson,
      int priority,
      int attempt,
      int maxAttempts,
      Instant runAt,
      Instant createdAt,
      String context,
      Long timeoutMs,
      long claimToken,
      String traceContext) {
    this(
        id,
        type,
        queue,
        payloadJson,
        priority,
        attempt,
        maxAttempts,
        runAt,
        createdAt,
        context,
        timeoutMs,
        claimToken,
        traceContext,
        0);
  }

  /** A claimed job without a trace context. */
  public ClaimedJob(
      UUID id,
      String type,
      String queue,
      String payloadJson,
      int priority,
      int attempt,
      int maxAttempts,
      Instant runAt,
      Instant createdAt,
      String context,
      Long timeoutMs,
      long claimToken) {
    this(
        id,
        type,
        queue,
        payloadJson,
        priority,
        attempt,
        maxAttempts,
        runAt,
        createdAt,
        context,
        timeoutMs,
        claimToken,
        null);
  }
}
