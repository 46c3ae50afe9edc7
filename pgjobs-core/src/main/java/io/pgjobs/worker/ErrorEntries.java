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

  /** An entry for {@code failure} (may be null), with {@code message} or else the exception's message. */
  static String of(PayloadCodec codec, ClaimedJob job, String workerId, String kind, Throwable failure, String message) {
    String text = message != null ? message : failure == null ? kind : String.valueOf(failure.getMessage());
    return entry(codec, job, workerId, kind, failure == null ? null : failure.getClass().getName(), text,
        stackHead(failure));
  }

  /** An entry from its parts; a JSON array of one error object. */
  static String entry(
      PayloadCodec codec, ClaimedJob job, String workerId, String kind, String errorClass, String message,
      String stackHead) {
    String text = message == null ? "" : message;
    if (text.length() > MAX_MESSAGE_CHARS) {
      text = text.substring(0, MAX_MESSAGE_CHARS) + "…";
    }
    return codec.write(List.of(new JobError(job.attempt(), Instant.now(), kind, storable(errorClass),
        storable(text), storable(stackHead), workerId)));
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
