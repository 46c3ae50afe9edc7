package io.pgjobs.config;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Durations written the way operators write them: {@code 500ms}, {@code 5s}, {@code 10m}, {@code 1h},
 * {@code 2d}, or a sum such as {@code 1h30m}. Also accepts ISO-8601 ({@code PT5S}).
 */
public final class DurationText {
  private static final Pattern PART = Pattern.compile("(\\d+)(ms|s|m|h|d)");
  private static final String ALLOWED =
      "allowed: a number with a unit ms, s, m, h or d (e.g. 500ms, 5s, 10m, 1h, 1h30m) or ISO-8601 (PT5S)";

  private DurationText() {}

  /**
   * Parses {@code text}.
   *
   * @throws IllegalArgumentException saying what was wrong and what is allowed
   */
  public static Duration parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("empty duration; " + ALLOWED);
    }
    String value = text.trim();
    if (value.startsWith("P") || value.startsWith("p")) {
      Duration parsed;
      try {
        parsed = Duration.parse(value);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("invalid duration '" + text + "'; " + ALLOWED);
      }
      if (parsed.isNegative()) {
        throw new IllegalArgumentException("negative duration '" + text + "'; " + ALLOWED);
      }
      return parsed;
    }
    Matcher matcher = PART.matcher(value);
    Duration total = Duration.ZERO;
    int end = 0;
    while (matcher.find()) {
      if (matcher.start() != end) {
        break;
      }
      long amount;
      try {
        amount = Long.parseLong(matcher.group(1));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("duration '" + text + "' is too large; " + ALLOWED);
      }
      try {
        total = total.plus(
            switch (matcher.group(2)) {
              case "ms" -> Duration.ofMillis(amount);
              case "s" -> Duration.ofSeconds(amount);
              case "m" -> Duration.ofMinutes(amount);
              case "h" -> Duration.ofHours(amount);
              default -> Duration.ofDays(amount);
            });
      } catch (ArithmeticException e) {
        throw new IllegalArgumentException("duration '" + text + "' is too large; " + ALLOWED);
      }
      end = matcher.end();
    }
    if (end == 0 || end != value.length()) {
      throw new IllegalArgumentException("invalid duration '" + text + "'; " + ALLOWED);
    }
    return total;
  }

  /**
   * Checks that a configured duration lies in {@code [min, max]}.
   *
   * @throws IllegalArgumentException naming the setting, the value and the allowed range
   */
  public static Duration requireBetween(
      String setting, Duration value, Duration min, Duration max) {
    if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new IllegalArgumentException(setting + " must be between " + format(min) + " and "
          + format(max) + ", was " + (value == null ? "nothing" : format(value)));
    }
    return value;
  }

  /** Formats a duration in the shortest of the forms {@link #parse} accepts ({@code 1h30m}, {@code 250ms}). */
  public static String format(Duration duration) {
    long ms = duration.toMillis();
    if (ms == 0) {
      return "0s";
    }
    StringBuilder out = new StringBuilder();
    long[] units = {86_400_000L, 3_600_000L, 60_000L, 1_000L, 1L};
    String[] names = {"d", "h", "m", "s", "ms"};
    for (int i = 0; i < units.length; i++) {
      if (ms >= units[i]) {
        out.append(ms / units[i]).append(names[i]);
        ms %= units[i];
      }
    }
    return out.toString();
  }
}
