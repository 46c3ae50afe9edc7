package io.pgjobs.store;

import java.time.Instant;
import java.util.UUID;

/**
 * A validated job ready to be inserted. At most one of {@code runAt} and {@code delayMs} is set; with
 * neither the job is due at once. A unique job ({@code unique} set) has the base of its unique key
 * ({@code uniqueBase}, a SHA-256 without the period; see {@link EnqueueSql#INSERT_UNIQUE}).
 * {@code traceContext} is the W3C trace context of the enqueue ({@code traceparent[;tracestate]}, see
 * {@link io.pgjobs.tracing.JobTracing}), or null. {@code limitKey} is its partition in a partitioned queue
 * ({@link io.pgjobs.QueueLimits}), or null.
 */
public record NewJob(
    UUID id,
    String type,
    String queue,
    String payloadJson,
    int priority,
    int maxAttempts,
    Instant runAt,
    Long delayMs,
    String context,
    String idempotencyKey,
    Long timeoutMs,
    String idempotencyFingerprint,
    UUID parentId,
    byte[] uniqueBase,
    io.pgjobs.UniqueOptions unique,
    String capability,
    String traceContext,
    String limitKey) {

  /** A job outside any partition (the components before {@code limitKey}). */
  public NewJob(
      UUID id,
      String type,
      String queue,
      String payloadJson,
      int priority,
      int maxAttempts,
      Instant runAt,
      Long delayMs,
      String context,
      String idempotencyKey,
      Long timeoutMs,
      String idempotencyFingerprint,
      UUID parentId,
      byte[] uniqueBase,
      io.pgjobs.UniqueOptions unique,
      String capability,
      String traceContext) {
    this(
        id,
        type,
        queue,
        payloadJson,
        priority,
        maxAttempts,
        runAt,
        delayMs,
        context,
        idempotencyKey,
        timeoutMs,
        idempotencyFingerprint,
        parentId,
        uniqueBase,
        unique,
        capability,
        traceContext,
        null);
  }

  /** A job without a trace context. */
  public NewJob(
      UUID id,
      String type,
      String queue,
      String payloadJson,
      int priority,
      int maxAttempts,
      Instant runAt,
      Long delayMs,
      String context,
      String idempotencyKey,
      Long timeoutMs,
      String idempotencyFingerprint,
      UUID parentId,
      byte[] uniqueBase,
      io.pgjobs.UniqueOptions unique,
      String capability) {
    this(
        id,
        type,
        queue,
        payloadJson,
        priority,
        maxAttempts,
        runAt,
        delayMs,
        context,
        idempotencyKey,
        timeoutMs,
        idempotencyFingerprint,
        parentId,
        uniqueBase,
        unique,
        capability,
        null);
  }

  /** A job that needs no capability, without a trace context. */
  public NewJob(
      UUID id,
      String type,
      String queue,
      String payloadJson,
      int priority,
      int maxAttempts,
      Instant runAt,
      Long delayMs,
      String context,
      String idempotencyKey,
      Long timeoutMs,
      String idempotencyFingerprint,
      UUID parentId,
      byte[] uniqueBase,
      io.pgjobs.UniqueOptions unique) {
    this(
        id,
        type,
        queue,
        payloadJson,
        priority,
        maxAttempts,
        runAt,
        delayMs,
        context,
        idempotencyKey,
        timeoutMs,
        idempotencyFingerprint,
        parentId,
        uniqueBase,
        unique,
        null,
        null);
  }

  /** A job that is neither unique nor needs a capability, without a trace context. */
  public NewJob(
      UUID id,
      String type,
      String queue,
      String payloadJson,
      int priority,
      int maxAttempts,
      Instant runAt,
      Long delayMs,
      String context,
      String idempotencyKey,
      Long timeoutMs,
      String idempotencyFingerprint,
      UUID parentId) {
    this(
        id,
        type,
        queue,
        payloadJson,
        priority,
        maxAttempts,
        runAt,
        delayMs,
        context,
        idempotencyKey,
        timeoutMs,
        idempotencyFingerprint,
        parentId,
        null,
        null,
        null,
        null);
  }

  /** This job in partition {@code limitKey}. */
  public NewJob withLimitKey(String limitKey) {
    return new NewJob(
        id,
        type,
        queue,
        payloadJson,
        priority,
        maxAttempts,
        runAt,
        delayMs,
        context,
        idempotencyKey,
        timeoutMs,
        idempotencyFingerprint,
        parentId,
        uniqueBase,
        unique,
        capability,
        traceContext,
        limitKey);
  }

  /** This job with {@code traceContext}. */
  public NewJob withTraceContext(String traceContext) {
    return new NewJob(
        id,
        type,
        queue,
        payloadJson,
        priority,
        maxAttempts,
        runAt,
        delayMs,
        context,
        idempotencyKey,
        timeoutMs,
        idempotencyFingerprint,
        parentId,
        uniqueBase,
        unique,
        capability,
        traceContext,
        limitKey);
  }
}
