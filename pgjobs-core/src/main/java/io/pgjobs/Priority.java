package io.pgjobs;

import java.util.Locale;

/**
 * Named priority levels. A priority is any {@code int}; higher runs first, negatives are allowed.
 * These constants are the levels of seed 002 and can be used in annotations.
 */
public final class Priority {
  /** Payment processing, security alerts. */
  public static final int CRITICAL = 100;
  /** User-facing notifications. */
  public static final int HIGH = 75;
  /** The default. */
  public static final int NORMAL = 50;
  /** Analytics, reporting. */
  public static final int LOW = 25;
  /** Cleanup, maintenance. */
  public static final int BACKGROUND = 0;

  private Priority() {}

  /**
   * Parses a level name ({@code critical}, {@code high}, {@code normal}, {@code low}, {@code background})
   * or an integer.
   *
   * @throws IllegalArgumentException naming the allowed forms
   */
  public static int parse(String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(allowed("empty priority"));
    }
    switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "critical":
        return CRITICAL;
      case "high":
        return HIGH;
      case "normal":
        return NORMAL;
      case "low":
        return LOW;
      case "background":
        return BACKGROUND;
      default:
        try {
          return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(allowed("invalid priority '" + value + "'"));
        }
    }
  }

  private static String allowed(String what) {
    return what
        + "; allowed: an integer from "
        + Integer.MIN_VALUE
        + " to "
        + Integer.MAX_VALUE
        + " or one of critical (100), high (75), normal (50), low (25), background (0)";
  }
}
