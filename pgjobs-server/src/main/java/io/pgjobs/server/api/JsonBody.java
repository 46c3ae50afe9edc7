package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.Priority;
import io.pgjobs.server.problem.ApiProblem;
import io.pgjobs.server.problem.Problem.FieldError;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * A JSON request body read strictly: the body must be {@code application/json}, valid JSON, one
 * object, with only the allowed members. The accessors collect every problem; {@link #done()} then
 * throws one problem listing them all: 400 if any member has the wrong JSON type (or is unknown), else
 * 422 if any value is out of its range. Nothing is stored before {@link #done()} returned.
 */
public final class JsonBody {
  /** The earliest and latest instants accepted for date-times. */
  static final Instant MIN_INSTANT = Instant.parse("1970-01-01T00:00:00Z");

  static final Instant MAX_INSTANT = Instant.parse("9999-12-31T23:59:59Z");

  private final ObjectNode node;
  private final String prefix;
  private final List<FieldError> malformed = new ArrayList<>();
  private final List<FieldError> invalid = new ArrayList<>();

  private JsonBody(ObjectNode node) {
    this(node, "");
  }

  private JsonBody(ObjectNode node, String prefix) {
    this.node = node;
    this.prefix = prefix;
  }

  /**
   * An object inside a body (a member of an array, say), read like a body: every problem names its
   * field with {@code prefix} before it ({@code jobs[2].} + {@code priority}). Members other than
   * {@code allowed} are recorded as malformed; {@link #done()} throws them with the rest.
   */
  static JsonBody nested(ObjectNode node, String prefix, Set<String> allowed) {
    JsonBody body = new JsonBody(node, prefix);
    for (String name : node.propertyNames()) {
      if (!allowed.contains(name)) {
        body.malformed(
            name, "unknown field; allowed: " + String.join(", ", new LinkedHashSet<>(allowed)));
      }
    }
    return body;
  }

  private FieldError error(String field, String reason) {
    return new FieldError(prefix + field, reason);
  }

  /**
   * Reads the body of {@code ctx}.
   *
   * @param allowed the members the body may have
   * @throws ApiProblem 415 for another content type, 413 when too large, 400 for invalid JSON, a
   *     non-object or unknown members
   */
  public static JsonBody read(Context ctx, JsonMapper json, Set<String> allowed) {
    requireJsonContentType(ctx);
    byte[] bytes = ctx.bodyAsBytes();
    if (bytes.length == 0 || new String(bytes, java.nio.charset.StandardCharsets.UTF_8).isBlank()) {
      throw ApiProblem.badRequest(
          "a JSON object body is required", List.of(new FieldError("body", "is required")));
    }
    JsonNode tree;
    try {
      tree = json.readTree(bytes);
    } catch (JacksonException e) {
      throw ApiProblem.malformedJson(e);
    }
    if (tree == null || !tree.isObject()) {
      throw ApiProblem.badRequest(
          "the request body must be a JSON object, was " + kind(tree),
          List.of(new FieldError("body", "must be a JSON object")));
    }
    ObjectNode object = (ObjectNode) tree;
    List<FieldError> unknown = new ArrayList<>();
    for (String name : object.propertyNames()) {
      if (!allowed.contains(name)) {
        unknown.add(new FieldError(
            name, "unknown field; allowed: " + String.join(", ", new LinkedHashSet<>(allowed))));
      }
    }
    if (!unknown.isEmpty()) {
      throw ApiProblem.badRequest(
          "unknown field" + (unknown.size() > 1 ? "s " : " ")
              + String.join(", ", unknown.stream().map(FieldError::field).toList()),
          unknown);
    }
    return new JsonBody(object);
  }

  /** Throws 415 unless the request says {@code application/json} (or {@code application/*+json}). */
  public static void requireJsonContentType(Context ctx) {
    String contentType = ctx.header("Content-Type");
    if (contentType == null) {
      throw ApiProblem.unsupportedMediaType(null);
    }
    String mediaType = contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
    if (!mediaType.equals("application/json")
        && !(mediaType.startsWith("application/") && mediaType.endsWith("+json"))) {
      throw ApiProblem.unsupportedMediaType(contentType);
    }
  }

  /** True if the member is present (even as null). */
  public boolean has(String field) {
    return node.has(field);
  }

  /** A member of any JSON type; null when absent. {@code required} also rejects JSON null. */
  public JsonNode any(String field, boolean required) {
    JsonNode value = node.get(field);
    if (value == null || value.isNull()) {
      if (required) {
        invalid.add(error(field, "is required"));
      }
      return null;
    }
    return value;
  }

  /** A string member; null when absent or null. */
  public String text(String field, boolean required, int maxLength) {
    return text(field, node.get(field), required, maxLength);
  }

  /** {@code value} (a member of a nested object, named {@code field} in problems) as a string; null when absent or null. */
  public String text(String field, JsonNode value, boolean required, int maxLength) {
    if (value == null || value.isNull()) {
      if (required) {
        invalid.add(error(field, "is required"));
      }
      return null;
    }
    if (!value.isString()) {
      malformed.add(error(field, "must be a string, was " + kind(value)));
      return null;
    }
    String text = value.asString();
    if (text.length() > maxLength) {
      invalid.add(
          error(field, "must be at most " + maxLength + " characters, was " + text.length()));
      return null;
    }
    return text;
  }

  /** An integer member within {@code [min, max]}; null when absent or null. */
  public Long integer(String field, long min, long max) {
    return integer(field, node.get(field), min, max);
  }

  /**
   * {@code value} (a member of a nested object, named {@code field} in problems: {@code rate.limit}) as an
   * integer within {@code [min, max]}; null when absent or null.
   */
  public Long integer(String field, JsonNode value, long min, long max) {
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isNumber()) {
      malformed.add(error(field, "must be an integer, was " + kind(value)));
      return null;
    }
    if (!value.isIntegralNumber()) {
      // 1.5 is a number, not an integer: the wrong JSON Schema type, so 400 like "3".
      malformed.add(error(field, "must be an integer, was " + value));
      return null;
    }
    if (!value.canConvertToLong() || value.asLong() < min || value.asLong() > max) {
      invalid.add(error(field, "must be between " + min + " and " + max + ", was " + value));
      return null;
    }
    return value.asLong();
  }

  /** A priority: an int or a level name ({@code critical}, {@code high}, {@code normal}, {@code low}, {@code background}). */
  public Integer priority(String field) {
    JsonNode value = node.get(field);
    if (value == null || value.isNull()) {
      return null;
    }
    if (value.isString()) {
      try {
        return Priority.parse(value.asString());
      } catch (IllegalArgumentException e) {
        invalid.add(error(field, e.getMessage()));
        return null;
      }
    }
    if (!value.isNumber()) {
      malformed.add(error(field, "must be an integer or a level name, was " + kind(value)));
      return null;
    }
    Long number = integer(field, Integer.MIN_VALUE, Integer.MAX_VALUE);
    return number == null ? null : number.intValue();
  }

  /** An ISO-8601 date-time with offset; null when absent or null. */
  public Instant instant(String field) {
    String text = text(field, false, 100);
    if (text == null) {
      return null;
    }
    Instant instant;
    try {
      instant = OffsetDateTime.parse(text).toInstant();
    } catch (DateTimeParseException e) {
      invalid.add(error(
          field,
          "must be an ISO-8601 date-time with offset (2030-01-31T12:00:00Z), was '" + text + "'"));
      return null;
    }
    if (instant.isBefore(MIN_INSTANT) || instant.isAfter(MAX_INSTANT)) {
      invalid.add(
          error(field, "must be between " + MIN_INSTANT + " and " + MAX_INSTANT + ", was " + text));
      return null;
    }
    return instant;
  }

  /** A boolean member; false when absent or null. */
  public boolean bool(String field) {
    JsonNode value = node.get(field);
    if (value == null || value.isNull()) {
      return false;
    }
    if (!value.isBoolean()) {
      malformed.add(error(field, "must be true or false, was " + kind(value)));
      return false;
    }
    return value.asBoolean();
  }

  /** An array of strings; empty when absent or null. */
  public List<String> strings(String field) {
    JsonNode value = node.get(field);
    if (value == null || value.isNull()) {
      return List.of();
    }
    if (!value.isArray()) {
      malformed.add(error(field, "must be an array of strings, was " + kind(value)));
      return List.of();
    }
    List<String> out = new ArrayList<>();
    Iterator<JsonNode> items = value.iterator();
    int i = 0;
    while (items.hasNext()) {
      JsonNode item = items.next();
      if (!item.isString()) {
        malformed.add(error(field + "[" + i + "]", "must be a string, was " + kind(item)));
      } else {
        out.add(item.asString());
      }
      i++;
    }
    return out;
  }

  /** Records a member of the wrong JSON type found by the caller (a 400, as the readers above do). */
  public void malformed(String field, String reason) {
    malformed.add(error(field, reason));
  }

  /** Records a problem found by the caller: a value of the right JSON type that is not allowed. */
  public void reject(String field, String reason) {
    invalid.add(error(field, reason));
  }

  /**
   * Throws if any problem was found: 400 when a member had the wrong JSON type, else 422.
   */
  public void done() {
    if (!malformed.isEmpty()) {
      List<FieldError> all = new ArrayList<>(malformed);
      all.addAll(invalid);
      throw ApiProblem.badRequest(summary(all), all);
    }
    if (!invalid.isEmpty()) {
      throw ApiProblem.validation(summary(invalid), invalid);
    }
  }

  private static String summary(List<FieldError> errors) {
    return String.join(
        "; ", errors.stream().map(e -> e.field() + ": " + e.reason()).toList());
  }

  /** The JSON type of a node, for messages. */
  static String kind(JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) {
      return "null";
    }
    if (node.isObject()) {
      return "an object";
    }
    if (node.isArray()) {
      return "an array";
    }
    if (node.isString()) {
      return "a string";
    }
    if (node.isBoolean()) {
      return "a boolean";
    }
    if (node.isNumber()) {
      return "a number";
    }
    return node.getNodeType().toString().toLowerCase(Locale.ROOT);
  }
}
