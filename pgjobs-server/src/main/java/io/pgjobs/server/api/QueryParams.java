package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.config.DurationText;
import io.pgjobs.server.problem.ApiProblem;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;

/** Reads query and path parameters; a bad one is a 400 naming the parameter. */
public final class QueryParams {
  private QueryParams() {}

  /** Every value of a repeatable parameter, each also split at commas; blanks dropped. */
  public static List<String> list(Context ctx, String name) {
    requireWellEncoded(ctx, name);
    List<String> out = new ArrayList<>();
    for (String value : ctx.queryParams(name)) {
      for (String part : value.split(",")) {
        if (!part.isBlank()) {
          out.add(part.trim());
        }
      }
    }
    return out;
  }

  /** An ISO-8601 date-time with offset, or null when absent. */
  public static Instant instant(Context ctx, String name) {
    String value = single(ctx, name);
    if (value == null) {
      return null;
    }
    try {
      return OffsetDateTime.parse(value).toInstant();
    } catch (DateTimeParseException e) {
      throw ApiProblem.badField(
          name,
          "must be an ISO-8601 date-time with offset (2030-01-31T12:00:00Z), was '" + value + "'");
    }
  }

  /** An int within {@code [min, max]}, or {@code fallback} when absent. */
  public static int integer(Context ctx, String name, int fallback, int min, int max) {
    String value = single(ctx, name);
    if (value == null) {
      return fallback;
    }
    long parsed;
    try {
      parsed = Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw ApiProblem.badField(
          name, "must be an integer between " + min + " and " + max + ", was '" + value + "'");
    }
    if (parsed < min || parsed > max) {
      throw ApiProblem.badField(name, "must be between " + min + " and " + max + ", was " + parsed);
    }
    return (int) parsed;
  }

  /** A duration ({@code 1h}, {@code 30m}, {@code PT1H}) within {@code [min, max]}, or {@code fallback}. */
  public static Duration duration(
      Context ctx, String name, Duration fallback, Duration min, Duration max) {
    String value = single(ctx, name);
    if (value == null) {
      return fallback;
    }
    Duration parsed;
    try {
      parsed = DurationText.parse(value);
    } catch (IllegalArgumentException e) {
      throw ApiProblem.badField(name, e.getMessage());
    }
    if (parsed.compareTo(min) < 0 || parsed.compareTo(max) > 0) {
      throw ApiProblem.badField(
          name,
          "must be between " + DurationText.format(min) + " and " + DurationText.format(max)
              + ", was " + value);
    }
    return parsed;
  }

  /** {@code true} or {@code false}, or {@code fallback} when absent. */
  public static boolean bool(Context ctx, String name, boolean fallback) {
    String value = single(ctx, name);
    if (value == null) {
      return fallback;
    }
    return switch (value) {
      case "true" -> true;
      case "false" -> false;
      default -> throw ApiProblem.badField(name, "must be true or false, was '" + value + "'");
    };
  }

  /** A single-valued parameter, or null when absent or empty. */
  public static String single(Context ctx, String name) {
    requireWellEncoded(ctx, name);
    List<String> values = ctx.queryParams(name);
    if (values.isEmpty() || values.get(0).isEmpty()) {
      return null;
    }
    if (values.size() > 1) {
      throw ApiProblem.badField(name, "may be given once, was given " + values.size() + " times");
    }
    return values.get(0);
  }

  /**
   * Refuses a value of {@code name} in the raw query string whose percent-encoding is broken ({@code %}
   * not followed by two hex digits): the server's decoder drops such a value silently, which would answer
   * as if the parameter had not been given.
   */
  private static void requireWellEncoded(Context ctx, String name) {
    String query = ctx.queryString();
    if (query == null || query.indexOf('%') < 0) {
      return;
    }
    for (String pair : query.split("&")) {
      int eq = pair.indexOf('=');
      String key = eq < 0 ? pair : pair.substring(0, eq);
      if (!key.equals(name)) {
        continue;
      }
      String value = eq < 0 ? "" : pair.substring(eq + 1);
      for (int i = value.indexOf('%'); i >= 0; i = value.indexOf('%', i + 1)) {
        if (i + 2 >= value.length()
            || !HexFormat.isHexDigit(value.charAt(i + 1))
            || !HexFormat.isHexDigit(value.charAt(i + 2))) {
          throw ApiProblem.badField(
              name,
              "has a broken percent-encoding ('%' must be followed by two hex"
                  + " digits; write a literal % as %25), was '" + value + "'");
        }
      }
    }
  }

  /** A UUID path parameter. */
  public static UUID uuid(Context ctx, String name) {
    String value = ctx.pathParam(name);
    try {
      if (value.length() != 36) {
        throw new IllegalArgumentException();
      }
      return UUID.fromString(value);
    } catch (IllegalArgumentException e) {
      throw ApiProblem.badField(
          name, "must be a UUID (0190c6a2-7f3e-7c1a-9b7e-3f1d2c4b5a69), was '" + value + "'");
    }
  }
}
