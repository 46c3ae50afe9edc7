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
 * @param message the exception's message; for an exception without one, its class name and the first
 *     message of its causes (never the text {@code "null"})
 * @param stackHead the first lines of the stack trace, or null
 * @param worker the worker that ran the attempt
 * @param cause the exception's causes, one {@code class: message} line each, outermost first (at most
 *     {@value #MAX_CAUSES}), or null when it had none or the entry predates this field
 */
public record JobError(
    int attempt,
    Instant at,
    String kind,
    String errorClass,
    String message,
    String stackHead,
    String worker,
    String cause) {
  /** Most causes recorded per error: {@value}. */
  public static final int MAX_CAUSES = 8;

  /** An error without a cause chain (as written before causes were recorded). */
  public JobError(
      int attempt,
      Instant at,
      String kind,
      String errorClass,
      String message,
      String stackHead,
      String worker) {
    this(attempt, at, kind, errorClass, message, stackHead, worker, null);
  }
}
