package io.pgjobs.recurring;

import com.cronutils.descriptor.CronDescriptor;
import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * A cron expression in a time zone: the slots at which a recurring job fires.
 *
 * <p>Syntax: Unix cron with 5 fields ({@code minute hour day-of-month month day-of-week}), the same with a
 * leading seconds field (6 fields), or a macro: {@code @yearly} ({@code @annually}), {@code @monthly},
 * {@code @weekly}, {@code @daily} ({@code @midnight}), {@code @hourly}. Parsing by cron-utils.
 *
 * <p>Daylight saving time, in the schedule's zone: a slot whose local time does not exist (inside the
 * spring-forward gap, e.g. 02:30 in Europe/Berlin on the last Sunday of March) is skipped that day — the
 * schedule says 02:30 and there is no 02:30; a local time that happens twice (the fall-back hour) fires
 * once, at its first occurrence. Slots are instants: two nodes in different zones compute the same ones.
 */
public final class CronSchedule {
  private static final CronParser UNIX =
      new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
  private static final CronParser WITH_SECONDS =
      new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING));
  private static final Map<String, String> MACROS = Map.of(
      "@yearly",
      "0 0 1 1 *",
      "@annually",
      "0 0 1 1 *",
      "@monthly",
      "0 0 1 * *",
      "@weekly",
      "0 0 * * 0",
      "@daily",
      "0 0 * * *",
      "@midnight",
      "0 0 * * *",
      "@hourly",
      "0 * * * *");
  private static final String[] UNIX_FIELDS = {
    "minute", "hour", "day of month", "month", "day of week"
  };
  private static final String[] SECOND_FIELDS = {
    "second", "minute", "hour", "day of month", "month", "day of week"
  };

  private final String expression;
  private final ZoneId zone;
  private final ExecutionTime execution;
  private final Cron cron;

  private CronSchedule(String expression, ZoneId zone, Cron cron) {
    this.expression = expression;
    this.zone = zone;
    this.cron = cron;
    this.execution = ExecutionTime.forCron(cron);
  }

  /**
   * Parses {@code expression} for {@code zone} (an IANA name such as {@code Europe/Berlin}, or {@code UTC}).
   *
   * @throws IllegalArgumentException naming the field that is wrong and why, or the zone
   */
  public static CronSchedule parse(String expression, String zone) {
    if (expression == null || expression.isBlank()) {
      throw new IllegalArgumentException(
          "cron expression is empty; allowed: 5 fields (" + String.join(", ", UNIX_FIELDS)
              + "), 6 with seconds first, or @yearly, @monthly, @weekly, @daily, @hourly");
    }
    ZoneId zoneId;
    try {
      zoneId = ZoneId.of(zone == null ? "" : zone);
    } catch (DateTimeException e) {
      throw new IllegalArgumentException("unknown time zone '" + zone
          + "'; allowed: an IANA zone such as Europe/Berlin," + " America/New_York or UTC");
    }
    String text = expression.strip();
    String resolved = text.startsWith("@") ? MACROS.get(text.toLowerCase(Locale.ROOT)) : text;
    if (resolved == null) {
      throw new IllegalArgumentException("unknown cron macro '" + text + "'; allowed: "
          + String.join(", ", new java.util.TreeSet<>(MACROS.keySet())));
    }
    String[] fields = resolved.split("\\s+");
    if (fields.length != 5 && fields.length != 6) {
      throw new IllegalArgumentException("cron expression '" + text + "' has " + fields.length
          + " fields; allowed: 5 (" + String.join(", ", UNIX_FIELDS) + ") or 6 with seconds first");
    }
    CronParser parser = fields.length == 5 ? UNIX : WITH_SECONDS;
    String[] names = fields.length == 5 ? UNIX_FIELDS : SECOND_FIELDS;
    Cron cron;
    try {
      cron = parser.parse(resolved);
      cron.validate();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid cron expression '" + text + "': "
          + whichField(parser, fields, names) + e.getMessage());
    }
    return new CronSchedule(text, zoneId, cron);
  }

  /** "field 3 (day of month) '32': " for the first field that fails alone, or nothing. */
  private static String whichField(CronParser parser, String[] fields, String[] names) {
    for (int i = 0; i < fields.length; i++) {
      String[] probe = new String[fields.length];
      for (int k = 0; k < fields.length; k++) {
        probe[k] =
            k == i ? fields[i] : (k == fields.length - 1 || k == fields.length - 3 ? "?" : "*");
      }
      // Day of month and day of week cannot both be given in some dialects: probe with '*'
      // elsewhere.
      for (int k = 0; k < fields.length; k++) {
        if (k != i) {
          probe[k] = "*";
        }
      }
      try {
        parser.parse(String.join(" ", probe)).validate();
      } catch (IllegalArgumentException e) {
        return "field " + (i + 1) + " (" + names[i] + ") '" + fields[i] + "': ";
      }
    }
    return "";
  }

  /** The expression as given. */
  public String expression() {
    return expression;
  }

  /**
   * The expression in English words (cron-utils' {@code CronDescriptor}), e.g. "every 15 minutes every hour
   * between 9 and 17 every day between Monday and Friday"; a macro is described by what it stands for.
   */
  public String describe() {
    return CronDescriptor.instance(Locale.ENGLISH).describe(cron);
  }

  /** The zone its fields are read in. */
  public ZoneId zone() {
    return zone;
  }

  /** The first slot strictly after {@code after}, if any. */
  public Optional<Instant> next(Instant after) {
    // Slots are whole seconds: start from the second of 'after' (cron-utils keeps a fraction it is
    // given).
    ZonedDateTime from =
        after.truncatedTo(java.time.temporal.ChronoUnit.SECONDS).atZone(zone);
    Optional<ZonedDateTime> next = execution.nextExecution(from);
    while (next.isPresent()) {
      ZonedDateTime candidate = next.get();
      if (!candidate.toInstant().isAfter(after)) {
        next = execution.nextExecution(candidate.plusNanos(1));
        continue;
      }
      // The fall-back hour: a local time already fired at its first occurrence does not fire again.
      LocalDateTime local = candidate.toLocalDateTime();
      ZonedDateTime earlier = local.atZone(zone).withEarlierOffsetAtOverlap();
      if (!earlier.toInstant().equals(candidate.toInstant())
          && !earlier.toInstant().isAfter(after)) {
        next = execution.nextExecution(candidate);
        continue;
      }
      return Optional.of(candidate.toInstant());
    }
    return Optional.empty();
  }

  /**
   * The slots in {@code (after, upTo]}, oldest first, at most {@code max} of them (the newest ones when
   * there are more).
   */
  public List<Instant> slots(Instant after, Instant upTo, int max) {
    return catchUp(after, upTo, max).newest();
  }

  /**
   * The slots in {@code (after, upTo]}: how many there are, and the newest {@code keep} of them.
   *
   * @param count every slot in the range if {@code exact}, else a lower bound
   * @param exact whether {@code count} counts every slot of the range (see
   *     {@link #catchUp(Instant, Instant, int, long)})
   * @param newest the newest {@code keep} slots (all of them if fewer), oldest first
   */
  public record CatchUp(long count, boolean exact, List<Instant> newest) {}

  /**
   * Counts the slots in {@code (after, upTo]} and keeps the newest {@code keep} of them: work linear in the
   * number of slots, memory bounded by {@code keep} (the oldest kept slot leaves a deque at each new one;
   * removing it from the head of a list moved every other one: quadratic).
   *
   * @throws IllegalArgumentException if {@code keep} is negative
   */
  public CatchUp catchUp(Instant after, Instant upTo, int keep) {
    if (keep < 0) {
      throw new IllegalArgumentException("keep must not be negative, was " + keep);
    }
    ArrayDeque<Instant> newest = new ArrayDeque<>(Math.min(keep, 1_024));
    long count = 0;
    Instant cursor = after;
    while (true) {
      Optional<Instant> next = next(cursor);
      if (next.isEmpty() || next.get().isAfter(upTo)) {
        return new CatchUp(count, true, List.copyOf(newest));
      }
      count++;
      if (keep > 0) {
        if (newest.size() == keep) {
          newest.removeFirst();
        }
        newest.addLast(next.get());
      }
      cursor = next.get();
    }
  }

  /** The first span {@link #catchUp(Instant, Instant, int, long)} looks back over; it doubles from there. */
  private static final Duration FIRST_SPAN = Duration.ofMinutes(1);

  /**
   * {@link #catchUp(Instant, Instant, int)} with work bounded by {@code countLimit} rather than by the
   * length of the range: the newest {@code keep} slots of {@code (after, upTo]}, and their count, exact
   * when the range holds at most {@code countLimit} slots; otherwise only the slots of a recent part of
   * the range holding more than {@code countLimit} are read, and the count is that part's (a lower bound,
   * {@code exact} false). Why: each slot costs cron-utils some 20 µs to find, so reading every slot of a
   * per-second schedule paused for days took seconds (two days: 172,800 slots, 3.4 s on a 2-core machine),
   * and a week would outlast the maintenance lease. The recent part is found by looking back over spans
   * that double from one minute (one count each, stopped past {@code countLimit}), so about
   * {@code 4 × countLimit} slots are read at most for slots evenly spread, whatever the range's length.
   *
   * @throws IllegalArgumentException if {@code keep} is negative or {@code countLimit} is below {@code keep}
   */
  public CatchUp catchUp(Instant after, Instant upTo, int keep, long countLimit) {
    if (keep < 0 || countLimit < keep) {
      throw new IllegalArgumentException(
          "need 0 <= keep <= countLimit, was keep " + keep + ", countLimit " + countLimit);
    }
    Duration span = FIRST_SPAN;
    while (true) {
      Instant from = upTo.minus(span);
      if (!from.isAfter(after)) {
        return catchUp(after, upTo, keep);
      }
      if (countBeyond(from, upTo, countLimit)) {
        CatchUp recent = catchUp(from, upTo, keep);
        return new CatchUp(recent.count(), false, recent.newest());
      }
      span = span.multipliedBy(2);
    }
  }

  /** True if {@code (after, upTo]} holds more than {@code limit} slots; reads at most {@code limit + 1}. */
  private boolean countBeyond(Instant after, Instant upTo, long limit) {
    long count = 0;
    Instant cursor = after;
    while (true) {
      Optional<Instant> next = next(cursor);
      if (next.isEmpty() || next.get().isAfter(upTo)) {
        return false;
      }
      if (++count > limit) {
        return true;
      }
      cursor = next.get();
    }
  }

  /** The next {@code count} slots after {@code after} (for showing a schedule). */
  public List<Instant> upcoming(Instant after, int count) {
    List<Instant> slots = new ArrayList<>();
    Instant cursor = after;
    while (slots.size() < count) {
      Optional<Instant> next = next(cursor);
      if (next.isEmpty()) {
        break;
      }
      slots.add(next.get());
      cursor = next.get();
    }
    return slots;
  }

  @Override
  public String toString() {
    return expression + " (" + zone + ")";
  }
}
