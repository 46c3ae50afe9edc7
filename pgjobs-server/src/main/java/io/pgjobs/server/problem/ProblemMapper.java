package io.pgjobs.server.problem;

import io.javalin.http.Context;
import io.javalin.http.HttpResponseException;
import io.pgjobs.IdempotencyKeyReusedException;
import io.pgjobs.InvalidJobException;
import io.pgjobs.InvalidPayloadException;
import io.pgjobs.PayloadValidator;
import io.pgjobs.replication.DatabaseRole;
import java.io.IOException;
import java.io.InputStream;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.eclipse.jetty.io.EofException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/**
 * The one place where exceptions become {@code application/problem+json} responses. Problems the
 * client caused say precisely what was wrong; anything else is logged with the request id and
 * answered with a generic 500 (or 503 when the database is away) whose text never echoes the
 * exception.
 */
public final class ProblemMapper {
  /** Prefix of every problem type URI. */
  public static final String TYPE_PREFIX = "urn:pgjobs:problem:";

  private static final Logger log = LoggerFactory.getLogger(ProblemMapper.class);

  private final JsonMapper json;
  private final long maxBodyBytes;
  private final long drainLimit;

  /** Writes problems with {@code json} (the server's snake_case mapper); {@code maxBodyBytes} is named in 413s. */
  public ProblemMapper(JsonMapper json, long maxBodyBytes) {
    this.json = json;
    this.maxBodyBytes = maxBodyBytes;
    this.drainLimit = Math.min(2 * maxBodyBytes + 65_536, 16L << 20);
  }

  /** Answers {@code ctx} with the problem {@code error} stands for. */
  public void respond(Context ctx, Throwable error) {
    Problem problem = toProblem(error, ctx.path(), requestId(ctx), ctx.method() + " " + ctx.path());
    drainBody(ctx);
    write(ctx, problem);
  }

  /**
   * Reads and drops what is left of the request body before an error answer (at most twice the body
   * limit plus 64 KiB). A server that answers before the body has arrived closes the connection with
   * bytes still coming; the kernel answers those with a reset, and a client still sending its body
   * loses the answer (Java's HttpClient: "header parser received no bytes"). Reading the rest lets
   * the 413 (or 401, 415…) arrive and keeps the connection usable. A body declared larger than that
   * is not read: the connection is closed as before.
   */
  private void drainBody(Context ctx) {
    long declared = ctx.req().getContentLengthLong(); // -1: chunked or no body
    if (declared == 0 || declared > drainLimit) {
      return;
    }
    try {
      InputStream in = ctx.req().getInputStream();
      byte[] buffer = new byte[8192];
      long left = drainLimit;
      int n;
      while (left > 0 && (n = in.read(buffer, 0, (int) Math.min(buffer.length, left))) != -1) {
        left -= n;
      }
    } catch (IOException | RuntimeException e) {
      // The client went away, or the body was already read another way: nothing left to drain.
    }
  }

  /** Writes a problem document as the response. */
  public void write(Context ctx, Problem problem) {
    ctx.status(problem.status());
    if (problem.status() == 401) {
      ctx.header("WWW-Authenticate", "Bearer realm=\"pgjobs\"");
    }
    ctx.contentType(Problem.MEDIA_TYPE);
    ctx.result(json.writeValueAsBytes(problem));
  }

  /** The problem document for {@code error}. Internal errors are logged here. */
  public Problem toProblem(Throwable error, String instance, String requestId, String what) {
    if (error instanceof ApiProblem p) {
      return new Problem(
          p.type(),
          p.title(),
          p.status(),
          p.getMessage(),
          instance,
          requestId,
          p.errors(),
          p.extensions());
    }
    if (error instanceof IdempotencyKeyReusedException e) {
      // 422 as the IETF draft "The Idempotency-Key HTTP Header Field" asks, and as Stripe answers a
      // reused key with other parameters (an error, not the first result).
      return from(ApiProblem.idempotencyKeyReused(e.key(), e.jobId()), instance, requestId);
    }
    if (error instanceof InvalidPayloadException e) {
      List<Problem.FieldError> errors =
          e.problems().stream().map(ProblemMapper::payloadError).toList();
      String detail = String.join(
          "; ", errors.stream().map(f -> f.field() + ": " + f.reason()).toList());
      // The one rule (docs/API.md): a payload whose JSON has the wrong shape is 400, one whose
      // values its validator refuses is 422.
      return from(
          e.malformed()
              ? ApiProblem.badRequest(detail, errors)
              : ApiProblem.validation(detail, errors),
          instance,
          requestId);
    }
    if (error instanceof InvalidJobException e) {
      String field = apiField(e.field());
      String reason = stripField(e);
      return from(ApiProblem.invalidField(field, reason), instance, requestId);
    }
    if (error instanceof HttpResponseException e) {
      return from(
          e.getStatus() == 413 ? ApiProblem.tooLarge(maxBodyBytes) : httpProblem(e, what),
          instance,
          requestId);
    }
    if (error instanceof JacksonException e) {
      return from(ApiProblem.malformedJson(e), instance, requestId);
    }
    if (isEndOfInput(error)) {
      // The client closed the connection (or sent less than its Content-Length) while the body was
      // read: its fault, not the server's, and nobody is left to read the answer.
      log.debug("{}: the request body ended early: {}", what, error.toString());
      return from(
          ApiProblem.badRequest(
              "the request body ended before its declared length",
              List.of(new Problem.FieldError("body", "ended early"))),
          instance,
          requestId);
    }
    if (error instanceof io.pgjobs.EnqueueOutcomeUnknownException) {
      // Neither "stored" nor "not stored": the client must be told to retry with the same key,
      // which is what makes the retry safe (a plain 503 would invite a retry without one, a
      // duplicate).
      log.warn(
          "{} failed: the database connection was lost while the enqueue committed: {}",
          what,
          error.toString());
      return from(
          ApiProblem.enqueueOutcomeUnknown(
              "the connection to the database was lost while the job was"
                  + " being committed: it may or may not be stored. Send the same request again with the same"
                  + " Idempotency-Key: the job is then stored once (a request without a key may store it twice)"),
          instance,
          requestId);
    }
    if (DatabaseRole.isReadOnlyError(error)) {
      // Not a bug and not an outage of this server: the database is a standby (or its sessions are
      // read-only). One line, no stack: during a failover every write request lands here until it
      // ends.
      log.warn("{} failed: the database is read-only: {}", what, error.toString());
      return from(
          ApiProblem.databaseReadOnly("the database is read-only (a standby in recovery, or"
              + " default_transaction_read_only is on) and takes no writes; try again once it is promoted or the"
              + " database URL reaches the primary"),
          instance,
          requestId);
    }
    if (isDatabaseDown(error)) {
      log.error("{} failed: database unavailable: {}", what, error.toString());
      return from(
          ApiProblem.unavailable("the database is unavailable; try again later"),
          instance,
          requestId);
    }
    log.error("{} failed", what, error);
    return new Problem(
        TYPE_PREFIX + "internal-error",
        "Internal server error",
        500,
        "the server failed to handle the request; the server log has the details under request id "
            + requestId,
        instance,
        requestId,
        null,
        null);
  }

  private static Problem from(ApiProblem p, String instance, String requestId) {
    return new Problem(
        p.type(),
        p.title(),
        p.status(),
        p.getMessage(),
        instance,
        requestId,
        p.errors(),
        p.extensions());
  }

  private static ApiProblem httpProblem(HttpResponseException e, String what) {
    int status = e.getStatus();
    return switch (status) {
      case 404 -> ApiProblem.notFound("no route for " + what);
      case 405 ->
        ApiProblem.http(
            405, "method-not-allowed", "Method not allowed", "method not allowed: " + what);
      default -> ApiProblem.http(status, "http-" + status, e.getMessage(), e.getMessage());
    };
  }

  private static Problem.FieldError payloadError(PayloadValidator.FieldProblem p) {
    String field = p.field() == null || p.field().isEmpty()
        ? "payload"
        : p.field().startsWith("payload") ? p.field() : "payload." + p.field();
    return new Problem.FieldError(field, p.reason());
  }

  /** The message of an {@link InvalidJobException} without its leading {@code field: }. */
  private static String stripField(InvalidJobException e) {
    String message = e.getMessage();
    String prefix = e.field() + ": ";
    return message.startsWith(prefix) ? message.substring(prefix.length()) : message;
  }

  private static final Map<String, String> CORE_FIELDS = Map.of(
      "maxAttempts", "max_attempts",
      "runAt", "run_at",
      "delay", "delay_ms",
      "timeout", "timeout_ms",
      "idempotencyKey", "Idempotency-Key");

  /** The API's name of a core field (core uses Java names, the API snake_case). */
  static String apiField(String coreField) {
    String mapped = CORE_FIELDS.get(coreField);
    if (mapped != null) {
      return mapped;
    }
    return coreField.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT);
  }

  private static boolean isEndOfInput(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof EofException) {
        return true;
      }
    }
    return false;
  }

  private static boolean isDatabaseDown(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SQLTransientConnectionException) {
        return true;
      }
      if (t instanceof SQLException sql
          && sql.getSQLState() != null
          && sql.getSQLState().startsWith("08")) {
        return true;
      }
    }
    return false;
  }

  private static String requestId(Context ctx) {
    Object id = ctx.attribute("request_id");
    return id == null ? null : id.toString();
  }
}
