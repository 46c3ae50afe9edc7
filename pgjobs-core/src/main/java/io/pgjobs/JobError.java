package io.pgjobs;

import java.time.Instant;

/**
 * One failed attempt, as kept in the job's error history (oldest first).
 *
 * @param attempt the attempt that failed (1-based)
 * @param at when the failure was recorded
 * @param kind {@code error}, {@code timeout}, {@code discarded}, {@code unknown_type}, {@code worker_lost},
 *     {@code transaction_rolled_back}, {@code invalid_payload}, {@code invalid_output},
 *     {@code unstorable_output}, {@code cancelled} or {@code shutdown}
 * @param errorClass the exception's class name, or null
 * @param message the exception's message
 * @param stackHead the first lines of the stack trace, or null
 * @param worker the worker that ran the attempt
 */
public record JobError(
    int attempt, Instant at, String kind, String errorClass, String message, String stackHead, String worker) {}
