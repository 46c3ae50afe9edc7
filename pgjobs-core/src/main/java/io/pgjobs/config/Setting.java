package io.pgjobs.config;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * One setting of pgjobs, declared once in {@link PgJobsSettings}: its name, default, range, what it does
 * and where it can be set. The Java builders validate with it ({@link #require}), the {@code pgjobs}
 * command derives its flag, environment variable and config file key from it, the Spring Boot starter
 * binds its property with its default, and the documentation tables are generated from it.
 *
 * @param key the name: the CLI's setting and config file key ({@code stale_threshold}), from which its flag
 *     ({@code --stale-threshold}) and environment variable ({@code PGJOBS_STALE_THRESHOLD}) follow
 * @param label how error messages name it ({@code stale threshold})
 * @param type the type of its values
 * @param defaultValue the default, or null when it is computed from other settings (see {@code defaultText})
 * @param defaultText the default as operators write it ({@code 5m}, {@code 1000}), or how a computed
 *     default is worked out
 * @param min the least value allowed, or null for none
 * @param max the greatest value allowed, or null for none
 * @param minText {@code min} as operators write it, or null
 * @param maxText {@code max} as operators write it, or null
 * @param allowed what values are allowed when a range does not say it (a pattern, a list), or null to say
 *     the range
 * @param description what it does, in Markdown, starting lower case
 * @param builders the Java builder methods that set it ({@code JobWorker.Builder.staleThreshold})
 * @param cli whether the {@code pgjobs} command has it
 * @param springProperty the Spring Boot property that sets it, or null; where its last part differs from the
 *     key's ({@code pgjobs.worker.dead-after} for {@code worker_dead_after}) the property keeps the name
 *     applications already use
 */
public record Setting<T>(
    String key,
    String label,
    Class<T> type,
    T defaultValue,
    String defaultText,
    T min,
    T max,
    String minText,
    String maxText,
    String allowed,
    String description,
    List<String> builders,
    boolean cli,
    String springProperty) {

  /** Checks the declaration: a name in snake case, a default within the range. */
  public Setting {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(label, "label");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(defaultText, "defaultText");
    Objects.requireNonNull(description, "description");
    builders = List.copyOf(builders);
    if (!key.matches("[a-z][a-z0-9]*(_[a-z0-9]+)*")) {
      throw new IllegalArgumentException("setting key must be snake case, was " + key);
    }
    if (defaultValue != null && outOfRange(defaultValue, min, max)) {
      throw new IllegalArgumentException("the default of " + key + " is out of its range");
    }
  }

  /** A duration, every value written as operators write them ({@code 5m}, {@code 10ms}, {@code 3650d}). */
  static Setting<Duration> duration(
      String key,
      String label,
      String defaultText,
      String minText,
      String maxText,
      String description) {
    return new Setting<>(
        key,
        label,
        Duration.class,
        DurationText.parse(defaultText),
        defaultText,
        DurationText.parse(minText),
        DurationText.parse(maxText),
        minText,
        maxText,
        null,
        description,
        List.of(),
        false,
        null);
  }

  /** A duration whose default is computed from other settings, as {@code computed} says. */
  static Setting<Duration> computedDuration(
      String key,
      String label,
      String computed,
      String minText,
      String maxText,
      String description) {
    return new Setting<>(
        key,
        label,
        Duration.class,
        null,
        computed,
        DurationText.parse(minText),
        DurationText.parse(maxText),
        minText,
        maxText,
        null,
        description,
        List.of(),
        false,
        null);
  }

  /** An integer in {@code [min, max]}. */
  static Setting<Integer> integer(
      String key, String label, int defaultValue, int min, int max, String description) {
    return new Setting<>(
        key,
        label,
        Integer.class,
        defaultValue,
        String.valueOf(defaultValue),
        min,
        max,
        String.valueOf(min),
        String.valueOf(max),
        null,
        description,
        List.of(),
        false,
        null);
  }

  /** A long integer in {@code [min, max]}. */
  static Setting<Long> longInteger(
      String key, String label, long defaultValue, long min, long max, String description) {
    return new Setting<>(
        key,
        label,
        Long.class,
        defaultValue,
        String.valueOf(defaultValue),
        min,
        max,
        String.valueOf(min),
        String.valueOf(max),
        null,
        description,
        List.of(),
        false,
        null);
  }

  /** On or off. */
  static Setting<Boolean> flag(String key, String label, boolean defaultValue, String description) {
    return new Setting<>(
        key,
        label,
        Boolean.class,
        defaultValue,
        String.valueOf(defaultValue),
        null,
        null,
        null,
        null,
        "`true` or `false`",
        description,
        List.of(),
        false,
        null);
  }

  /** Text, checked where it is used ({@code allowed} says how). */
  static Setting<String> text(
      String key, String label, String defaultValue, String allowed, String description) {
    return new Setting<>(
        key,
        label,
        String.class,
        defaultValue,
        defaultValue,
        null,
        null,
        null,
        null,
        allowed,
        description,
        List.of(),
        false,
        null);
  }

  /** This setting, set by the Java builder methods {@code methods} ({@code JobWorker.Builder.leaseTtl}). */
  Setting<T> setBy(String... methods) {
    return new Setting<>(
        key,
        label,
        type,
        defaultValue,
        defaultText,
        min,
        max,
        minText,
        maxText,
        allowed,
        description,
        List.of(methods),
        cli,
        springProperty);
  }

  /** This setting, also a setting of the {@code pgjobs} command. */
  Setting<T> onCommandLine() {
    return new Setting<>(
        key,
        label,
        type,
        defaultValue,
        defaultText,
        min,
        max,
        minText,
        maxText,
        allowed,
        description,
        builders,
        true,
        springProperty);
  }

  /** This setting, also the Spring Boot property {@code property}. */
  Setting<T> springProperty(String property) {
    return new Setting<>(
        key,
        label,
        type,
        defaultValue,
        defaultText,
        min,
        max,
        minText,
        maxText,
        allowed,
        description,
        builders,
        cli,
        property);
  }

  /** Same, with {@code allowed} saying what is allowed beyond the range. */
  Setting<T> allowed(String allowed) {
    return new Setting<>(
        key,
        label,
        type,
        defaultValue,
        defaultText,
        min,
        max,
        minText,
        maxText,
        allowed,
        description,
        builders,
        cli,
        springProperty);
  }

  /** The flag of the {@code pgjobs} command: {@code --stale-threshold}. */
  public String flag() {
    return "--" + key.replace('_', '-');
  }

  /** The environment variable of the {@code pgjobs} command: {@code PGJOBS_STALE_THRESHOLD}. */
  public String environmentVariable() {
    return "PGJOBS_" + key.toUpperCase(java.util.Locale.ROOT);
  }

  /** True when the default is computed from other settings rather than fixed. */
  public boolean computedDefault() {
    return defaultValue == null;
  }

  /**
   * Returns {@code value} if it lies in the range.
   *
   * @throws IllegalArgumentException naming the setting, the range and the value ({@code stale threshold
   *     must be between 1s and 1d, was 2d})
   */
  public T require(T value) {
    if (value == null || outOfRange(value, min, max)) {
      throw new IllegalArgumentException(label + " must be between " + show(min) + " and "
          + show(max) + ", was " + (value == null ? "nothing" : show(value)));
    }
    return value;
  }

  /** What is allowed, as documentation says it: {@code 1s – 24h}, {@code 1 – 10000}, or {@link #allowed}. */
  public String allowedText() {
    if (allowed != null) {
      return allowed;
    }
    return minText + " – " + maxText;
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static boolean outOfRange(Object value, Object min, Object max) {
    return (min != null && ((Comparable) value).compareTo(min) < 0)
        || (max != null && ((Comparable) value).compareTo(max) > 0);
  }

  private static String show(Object value) {
    return value instanceof Duration d ? DurationText.format(d) : String.valueOf(value);
  }
}
