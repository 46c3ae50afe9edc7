package io.pgjobs.worker;

import io.pgjobs.JobError;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimedJob;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Builds the error entries appended to a job's history. Every text is made storable: U+0000, which jsonb
 * cannot hold, becomes U+FFFD, and messages are cut to a bounded length, so writing a failure can never
 * fail because of what an exception said.
 */
final class ErrorEntries {
  private static final int STACK_HEAD_LINES = 12;
  private static final int MAX_MESSAGE_CHARS = 4_000;

  private ErrorEntries() {}

  /**
   * An entry for {@code failure} (may be null), with {@code message} or else the exception's message; an
   * exception without a message is described by its class and its causes' first message, never as
   * {@code "null"}.
   */
  static String of(
      PayloadCodec codec,
      ClaimedJob job,
      String workerId,
      String kind,
      Throwable failure,
      String message) {
    String text = message != null ? message : failure == null ? kind : describe(failure);
    return entry(
        codec,
        job,
        workerId,
        kind,
        failure == null ? null : failure.getClass().getName(),
        text,
        stackHead(failure),
        causes(failure));
  }

  /** An entry from its parts; a JSON array of one error object. */
  static String entry(
      PayloadCodec codec,
      ClaimedJob job,
      String workerId,
      String kind,
      String errorClass,
      String message,
      String stackHead) {
    return entry(codec, job, workerId, kind, errorClass, message, stackHead, null);
  }

  private static String entry(
      PayloadCodec codec,
      ClaimedJob job,
      String workerId,
      String kind,
      String errorClass,
      String message,
      String stackHead,
      String cause) {
    return codec.write(List.of(new JobError(
        job.attempt(),
        Instant.now(),
        kind,
        storable(errorClass),
        storable(bounded(message == null ? "" : message)),
        storable(stackHead),
        workerId,
        storable(cause == null ? null : bounded(cause)))));
  }

  /** The exception's message, or, when it has none, its class name and the first message among its causes. */
  static String describe(Throwable failure) {
    String own = failure.getMessage();
    if (own != null && !own.isBlank()) {
      return own;
    }
    int depth = 0;
    for (Throwable t = failure.getCause();
        t != null && t != t.getCause() && depth < JobError.MAX_CAUSES;
        t = t.getCause(), depth++) {
      if (t.getMessage() != null && !t.getMessage().isBlank()) {
        return failure.getClass().getName() + " without a message; caused by "
            + t.getClass().getName() + ": " + t.getMessage();
      }
    }
    return failure.getClass().getName() + " without a message";
  }

  /** One {@code class: message} line per cause, outermost first; null without causes. */
  static String causes(Throwable failure) {
    if (failure == null || failure.getCause() == null) {
      return null;
    }
    StringBuilder out = new StringBuilder();
    int depth = 0;
    for (Throwable t = failure.getCause();
        t != null && depth < JobError.MAX_CAUSES;
        t = t.getCause(), depth++) {
      if (!out.isEmpty()) {
        out.append('\n');
      }
      out.append(t.getClass().getName());
      if (t.getMessage() != null && !t.getMessage().isBlank()) {
        out.append(": ").append(t.getMessage().strip().replaceAll("\\s*\\R\\s*", " "));
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return out.toString();
  }

  private static String bounded(String text) {
    return text.length() > MAX_MESSAGE_CHARS ? text.substring(0, MAX_MESSAGE_CHARS) + "…" : text;
  }

  private static String storable(String text) {
    return text == null || text.indexOf('\u0000') < 0 ? text : text.replace('\u0000', '\uFFFD');
  }

  private static String stackHead(Throwable failure) {
    if (failure == null) {
      return null;
    }
    StringWriter out = new StringWriter();
    failure.printStackTrace(new PrintWriter(out));
    return out.toString().lines().limit(STACK_HEAD_LINES).collect(Collectors.joining("\n"));
  }
}
