package io.pgjobs.server.problem;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Thrown by request handlers to answer with a problem document; {@link ProblemMapper} turns it into
 * the response. Every factory names the problem type and its HTTP status, so handlers never pick
 * status codes by hand.
 */
public final class ApiProblem extends RuntimeException {
  private final int status;
  private final String slug;
  private final String title;
  private final List<Problem.FieldError> errors;
  private final Map<String, Object> extensions;

  private ApiProblem(
      int status,
      String slug,
      String title,
      String detail,
      List<Problem.FieldError> errors,
      Map<String, Object> extensions) {
    super(detail, null, false, false);
    this.status = status;
    this.slug = slug;
    this.title = title;
    this.errors = errors == null ? null : List.copyOf(errors);
    this.extensions = extensions == null ? Map.of() : Map.copyOf(extensions);
  }

  /** 422: the Idempotency-Key names a job enqueued by a different request. */
  public static ApiProblem idempotencyKeyReused(String key, java.util.UUID jobId) {
    return new ApiProblem(
        422,
        "idempotency-key-reused",
        "Idempotency key reused",
        "Idempotency-Key '" + key + "' was already used for job " + jobId
            + " with a different request"
            + " (type, payload or options); repeat the original request exactly to get that job, or use a new key",
        List.of(
            new Problem.FieldError("Idempotency-Key", "was already used for a different request")),
        Map.of("job_id", jobId.toString()));
  }

  /** 400: the request is not well-formed (bad JSON, wrong JSON types, unknown fields, bad parameters). */
  public static ApiProblem badRequest(String detail, List<Problem.FieldError> errors) {
    return new ApiProblem(400, "invalid-request", "Invalid request", detail, errors, null);
  }

  /** 400 for one field. */
  public static ApiProblem badField(String field, String reason) {
    return badRequest(field + ": " + reason, List.of(new Problem.FieldError(field, reason)));
  }

  /** 400: the body is not JSON. */
  public static ApiProblem malformedJson(String detail) {
    return new ApiProblem(400, "malformed-json", "Malformed JSON", detail, null, null);
  }

  /**
   * 400: the body is not JSON. Says where it stopped being JSON and, for the usual mistakes, what was
   * wrong, but never Jackson's own words (token names such as {@code VALUE_STRING}).
   */
  public static ApiProblem malformedJson(tools.jackson.core.JacksonException e) {
    tools.jackson.core.TokenStreamLocation at = e.getLocation();
    String where = at == null || at.getLineNr() < 1
        ? ""
        : " at line " + at.getLineNr() + ", column " + at.getColumnNr();
    String message = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
    String what;
    if (message.startsWith("Duplicate Object property")) {
      what = "a member appears twice";
    } else if (message.contains("end-of-input")) {
      what = "it ends early";
    } else if (message.contains("Trailing token")) {
      what = "more follows the JSON value";
    } else {
      what = "unexpected text";
    }
    return malformedJson("the request body is not valid JSON: " + what + where);
  }

  /** 422: well-formed, but some values are not allowed. */
  public static ApiProblem validation(String detail, List<Problem.FieldError> errors) {
    return new ApiProblem(422, "validation-failed", "Validation failed", detail, errors, null);
  }

  /** 422 for one field. */
  public static ApiProblem invalidField(String field, String reason) {
    return validation(field + ": " + reason, List.of(new Problem.FieldError(field, reason)));
  }

  /** 422: no job type of that name is known to this server. */
  public static ApiProblem unknownType(String type, List<String> knownTypes) {
    String detail = "unknown job type '" + type + "'; known types: "
        + (knownTypes.isEmpty() ? "(none)" : String.join(", ", knownTypes));
    return new ApiProblem(
        422,
        "unknown-job-type",
        "Unknown job type",
        detail,
        List.of(new Problem.FieldError("type", detail)),
        Map.of("known_types", knownTypes));
  }

  /**
   * 422: {@code name} (a path parameter) names no workflow this server knows: a plain job type or no type
   * at all. {@code known_workflows} lists the ones it knows.
   */
  public static ApiProblem unknownWorkflow(String name, List<String> knownWorkflows) {
    String detail = "'" + name + "' is not a workflow this server knows; known workflows: "
        + (knownWorkflows.isEmpty() ? "(none)" : String.join(", ", knownWorkflows));
    return new ApiProblem(
        422,
        "unknown-workflow",
        "Unknown workflow",
        detail,
        List.of(new Problem.FieldError("name", detail)),
        Map.of("known_workflows", knownWorkflows));
  }

  /** 401: no token, or not a token this server knows. */
  public static ApiProblem unauthorized(String detail) {
    return new ApiProblem(401, "unauthorized", "Unauthorized", detail, null, null);
  }

  /** 403: the token may not do this. */
  public static ApiProblem forbidden(String detail) {
    return new ApiProblem(403, "forbidden", "Forbidden", detail, null, null);
  }

  /**
   * 403: a request that can change something, sent by a page of another site (an {@code Origin} that is
   * not the server's own nor allowed); {@code origin} is added as a member when there was one.
   */
  public static ApiProblem crossSite(String origin, String detail) {
    return new ApiProblem(
        403,
        "cross-site-request",
        "Cross-site request refused",
        detail,
        null,
        origin == null ? null : Map.of("origin", origin));
  }

  /** 421: the {@code Host} header names a host this server does not answer for; {@code host} is added as a member. */
  public static ApiProblem hostNotAllowed(String host, String detail) {
    return new ApiProblem(
        421, "host-not-allowed", "Host not allowed", detail, null, Map.of("host", host));
  }

  /** 404: no such resource. */
  public static ApiProblem notFound(String detail) {
    return new ApiProblem(404, "not-found", "Not found", detail, null, null);
  }

  /** 406: the client does not accept what this route sends. */
  public static ApiProblem notAcceptable(String detail) {
    return new ApiProblem(406, "not-acceptable", "Not acceptable", detail, null, null);
  }

  /** 409: the job's state does not allow it; {@code state} is added as a member. */
  public static ApiProblem conflict(String slug, String title, String detail, String state) {
    Map<String, Object> ext = new LinkedHashMap<>();
    if (state != null) {
      ext.put("state", state);
    }
    return new ApiProblem(409, slug, title, detail, null, ext);
  }

  /** 413: the body is larger than the limit. */
  public static ApiProblem tooLarge(long limit) {
    return new ApiProblem(
        413,
        "body-too-large",
        "Request body too large",
        "the request body is larger than the limit of " + limit + " bytes",
        null,
        Map.of("max_body_bytes", limit));
  }

  /** 415: the body is not {@code application/json}. */
  public static ApiProblem unsupportedMediaType(String contentType) {
    return new ApiProblem(
        415,
        "unsupported-media-type",
        "Unsupported media type",
        "the request body must be application/json, was "
            + (contentType == null ? "(no Content-Type)" : contentType),
        null,
        null);
  }

  /** 503: a dependency (the database) is away. */
  public static ApiProblem unavailable(String detail) {
    return new ApiProblem(503, "unavailable", "Service unavailable", detail, null, null);
  }

  /**
   * 503: the database takes no writes (a standby in recovery, or read-only sessions): after a failover
   * the request succeeds once the URL reaches the new primary.
   */
  public static ApiProblem databaseReadOnly(String detail) {
    return new ApiProblem(503, "database-read-only", "Database is read-only", detail, null, null);
  }

  /**
   * 503: the connection to the database was lost while the enqueue's commit was under way: the job may
   * or may not be stored. Sent again with the same {@code Idempotency-Key}, the request stores it once.
   */
  public static ApiProblem enqueueOutcomeUnknown(String detail) {
    return new ApiProblem(
        503, "enqueue-outcome-unknown", "Enqueue outcome unknown", detail, null, null);
  }

  /** 504: the request took longer than the request timeout. */
  public static ApiProblem timeout(long millis) {
    return new ApiProblem(
        504,
        "request-timeout",
        "Request timed out",
        "the request did not finish within the request timeout of " + millis + " ms",
        null,
        null);
  }

  /** Any status, for errors raised by the HTTP layer (404 route, 405 method). */
  public static ApiProblem http(int status, String slug, String title, String detail) {
    return new ApiProblem(status, slug, title, detail, null, null);
  }

  /** The HTTP status. */
  public int status() {
    return status;
  }

  /** The problem type's URI. */
  public String type() {
    return ProblemMapper.TYPE_PREFIX + slug;
  }

  /** The problem type's title. */
  public String title() {
    return title;
  }

  /** Field errors, or null. */
  public List<Problem.FieldError> errors() {
    return errors;
  }

  /** Extension members. */
  public Map<String, Object> extensions() {
    return extensions;
  }
}
