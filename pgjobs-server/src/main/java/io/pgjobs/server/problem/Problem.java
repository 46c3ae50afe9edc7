package io.pgjobs.server.problem;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;

/**
 * An RFC 9457 problem document, sent as {@code application/problem+json}.
 *
 * @param type a URI naming the kind of problem ({@code urn:pgjobs:problem:validation-failed})
 * @param title a short summary of that kind
 * @param status the HTTP status
 * @param detail what went wrong with this request, for people
 * @param instance the request path
 * @param requestId the request's id (also in the {@code X-Request-Id} header)
 * @param errors one entry per rejected field, for validation problems; else null
 * @param extensions extra members of some problems (the job's {@code state}, the {@code known_types})
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Problem(
    String type,
    String title,
    int status,
    String detail,
    String instance,
    String requestId,
    List<FieldError> errors,
    @JsonIgnore Map<String, Object> extensions) {

  /** The media type of problem documents. */
  public static final String MEDIA_TYPE = "application/problem+json";

  /** Extension members are written at the top level, as RFC 9457 says. */
  @JsonAnyGetter
  public Map<String, Object> extensionMembers() {
    return extensions == null ? Map.of() : extensions;
  }

  /**
   * One rejected field.
   *
   * @param field the field as the client wrote it: a JSON member ({@code priority}, {@code payload.to}),
   *     a query parameter ({@code limit}), a path parameter ({@code id}) or a header ({@code Idempotency-Key})
   * @param reason what is wrong and what is allowed
   */
  public record FieldError(String field, String reason) {}
}
