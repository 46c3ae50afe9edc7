package io.pgjobs.server.api;

import java.util.Map;

/**
 * What a handler answers: a status, a body and extra headers. A {@link Text} body is sent as is with
 * its content type; any other body is written as JSON with the server's snake_case mapper.
 *
 * @param status HTTP status
 * @param body the body, or null for none
 * @param headers extra response headers
 */
public record Reply(int status, Object body, Map<String, String> headers) {

  /** 200 with a JSON body. */
  public static Reply ok(Object body) {
    return new Reply(200, body, Map.of());
  }

  /** 201 with a JSON body. */
  public static Reply created(Object body) {
    return new Reply(201, body, Map.of());
  }

  /** Any status with a JSON body. */
  public static Reply of(int status, Object body) {
    return new Reply(status, body, Map.of());
  }

  /** 200 with a text body of {@code contentType}. */
  public static Reply text(String contentType, String text) {
    return new Reply(200, new Text(contentType, text), Map.of());
  }

  /** A copy with one more header. */
  public Reply withHeader(String name, String value) {
    java.util.LinkedHashMap<String, String> h = new java.util.LinkedHashMap<>(headers);
    h.put(name, value);
    return new Reply(status, body, Map.copyOf(h));
  }

  /**
   * A body sent verbatim.
   *
   * @param contentType its media type
   * @param text the body
   */
  public record Text(String contentType, String text) {}
}
