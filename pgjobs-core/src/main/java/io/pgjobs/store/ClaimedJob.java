package io.pgjobs.store;

import java.time.Instant;
import java.util.UUID;

/**
 * What the worker needs of a job it has just claimed.
 *
 * @param attempt the attempt this claim started (1-based); identifies the claim in every later write
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
    Long timeoutMs) {}
