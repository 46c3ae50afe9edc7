package io.pgjobs.json;

import io.pgjobs.PayloadValidator.FieldProblem;
import java.time.temporal.Temporal;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import tools.jackson.core.JacksonException;
import tools.jackson.core.exc.StreamReadException;
import tools.jackson.databind.exc.MismatchedInputException;
import tools.jackson.databind.exc.UnrecognizedPropertyException;
import tools.jackson.databind.exc.ValueInstantiationException;

/**
 * Turns a Jackson error about a payload into a problem worded in JSON terms: the member's path
 * ({@code to}, {@code items[2].sku}), what was wrong and what is allowed. Java class names and
 * Jackson's token names never appear: the caller may be an HTTP client that knows neither.
 */
final class JsonShapeProblems {
  private JsonShapeProblems() {}

  static FieldProblem of(JacksonException e) {
    String path = path(e.getPath());
    if (e instanceof UnrecognizedPropertyException u) {
      List<String> known = u.getKnownPropertyIds() == null
          ? List.of()
          : u.getKnownPropertyIds().stream().map(String::valueOf).sorted().toList();
      return new FieldProblem(
          path,
          "is not a member of this job type's payload"
              + (known.isEmpty() ? "" : "; allowed: " + String.join(", ", known)));
    }
    if (e instanceof ValueInstantiationException) {
      // The payload class's constructor refused the values; its message is the application's.
      Throwable cause = e.getCause();
      String reason =
          cause != null && cause.getMessage() != null ? cause.getMessage() : "was refused";
      return new FieldProblem(path, reason);
    }
    if (e instanceof MismatchedInputException m && m.getTargetType() != null) {
      return new FieldProblem(path, "must be " + jsonKind(m.getTargetType()));
    }
    if (e instanceof StreamReadException) {
      return new FieldProblem(path, "is not valid JSON");
    }
    return new FieldProblem(path, "does not fit this job type's payload");
  }

  /** The member path as the JSON shows it: {@code a.b[2].c}, empty for the payload itself. */
  private static String path(List<JacksonException.Reference> refs) {
    StringBuilder b = new StringBuilder();
    for (JacksonException.Reference r : refs) {
      if (r.getPropertyName() != null) {
        if (!b.isEmpty()) {
          b.append('.');
        }
        b.append(r.getPropertyName());
      } else if (r.getIndex() >= 0) {
        b.append('[').append(r.getIndex()).append(']');
      }
    }
    return b.toString();
  }

  /** What a Java type is in JSON, for messages. */
  static String jsonKind(Class<?> type) {
    if (type == String.class
        || type == char.class
        || type == Character.class
        || CharSequence.class.isAssignableFrom(type)) {
      return "a string";
    }
    if (type == int.class
        || type == long.class
        || type == short.class
        || type == byte.class
        || type == Integer.class
        || type == Long.class
        || type == Short.class
        || type == Byte.class
        || type == java.math.BigInteger.class) {
      return "an integer";
    }
    if (type == double.class || type == float.class || Number.class.isAssignableFrom(type)) {
      return "a number";
    }
    if (type == boolean.class || type == Boolean.class) {
      return "a boolean (true or false)";
    }
    if (type.isEnum()) {
      return "one of "
          + Arrays.stream(type.getEnumConstants())
              .map(Object::toString)
              .collect(Collectors.joining(", "));
    }
    if (type.isArray() || Collection.class.isAssignableFrom(type)) {
      return "an array";
    }
    if (Temporal.class.isAssignableFrom(type)) {
      return "a string with an ISO-8601 date or date-time";
    }
    if (type == java.util.UUID.class
        || type == java.net.URI.class
        || type == java.time.Duration.class) {
      return "a string";
    }
    if (Map.class.isAssignableFrom(type) || type.isRecord() || !type.isPrimitive()) {
      return "an object";
    }
    return "a different JSON value";
  }
}
