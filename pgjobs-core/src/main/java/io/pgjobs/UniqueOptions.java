package io.pgjobs;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Makes a job <em>unique</em>: while a job with the same unique key is not yet finished (queued,
 * scheduled, retrying or running), enqueueing another returns that job ({@link EnqueuedJob#duplicate()})
 * instead of storing a second one. Once it has finished (succeeded, failed or cancelled), the next enqueue
 * stores a new job. The key is made of:
 *
 * <ul>
 *   <li>the job type, always;
 *   <li>the payload: all of it ({@link Builder#byArgs()}, compared as canonical JSON, so member order does
 *       not matter) or the listed fields ({@link Builder#byFields}); neither means "one job of this type";
 *   <li>the queue, with {@link Builder#byQueue()};
 *   <li>the period the enqueue falls in, with {@link Builder#period}: time (by the database's clock) is cut
 *       into periods of that length since the epoch, and a job is unique only among jobs enqueued in the
 *       same period. A job still waiting when the next period starts does not stop a new one from then on.
 * </ul>
 *
 * A duplicate can update the existing job ({@link Builder#replace}): its {@code run_at} and/or its payload
 * take the new enqueue's values, but only while the job is waiting (a running or finished job is returned
 * as it is). Concurrent enqueues of one key yield one job: uniqueness is a unique index on the key, not a
 * read-then-insert. See docs/concepts.md, "Unique jobs", for when to use this and when idempotency keys.
 *
 * <pre>{@code
 * EnqueueOptions.builder()
 *     .unique(UniqueOptions.builder().byFields("customer_id").period(Duration.ofMinutes(10)).build())
 *     .build();
 * }</pre>
 *
 * @param byArgs the whole payload is part of the key
 * @param byFields the payload fields (names or JSON pointers) that are part of the key; empty for none
 * @param byQueue the queue is part of the key
 * @param period length of the periods the key is cut into, or null for none
 * @param replace what a duplicate updates in the existing job; empty for nothing
 * @param states the states in which an existing job counts: every unfinished state ({@link #UNFINISHED},
 *     the default; null or empty means that) plus any of the finished ones
 */
public record UniqueOptions(
    boolean byArgs,
    List<String> byFields,
    boolean byQueue,
    Duration period,
    Set<Replace> replace,
    Set<JobState> states) {

  /** The shortest period: {@value #MIN_PERIOD_SECONDS} s. */
  public static final long MIN_PERIOD_SECONDS = 1;
  /** The longest period: 366 days. */
  public static final Duration MAX_PERIOD = Duration.ofDays(366);
  /** The most payload fields a key may list: {@value}. */
  public static final int MAX_FIELDS = 20;

  /** The unfinished states (queued, running, retrying): the default set, and part of every set. */
  public static final Set<JobState> UNFINISHED =
      Set.copyOf(EnumSet.of(JobState.QUEUED, JobState.RUNNING, JobState.RETRYING));

  /** Unique by type alone (one unfinished job of the type at a time), nothing replaced. */
  public static final UniqueOptions BY_TYPE =
      new UniqueOptions(false, List.of(), false, null, Set.of());

  /** A rule among the unfinished states only (the components before {@code states} existed). */
  public UniqueOptions(
      boolean byArgs,
      List<String> byFields,
      boolean byQueue,
      Duration period,
      Set<Replace> replace) {
    this(byArgs, byFields, byQueue, period, replace, null);
  }

  /** What a duplicate enqueue may update in the existing, not yet running job. */
  public enum Replace {
    /** The earliest start: the existing job takes the new enqueue's {@code runAt}/{@code delay}. */
    RUN_AT,
    /** The payload: the existing job takes the new enqueue's payload. */
    PAYLOAD;

    /** The name used over HTTP: {@code run_at}, {@code payload}. */
    public String value() {
      return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Parses {@code run_at} or {@code payload}.
     *
     * @throws InvalidJobException naming the allowed values
     */
    public static Replace parse(String value) {
      for (Replace r : values()) {
        if (r.value().equals(value)) {
          return r;
        }
      }
      throw new InvalidJobException(
          "unique.replace", "unknown value '" + value + "'; allowed: run_at, payload");
    }
  }

  /** Validates every field. */
  public UniqueOptions {
    byFields = byFields == null ? List.of() : List.copyOf(byFields);
    replace = replace == null || replace.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(replace));
    if (states == null || states.isEmpty()) {
      states = UNFINISHED;
    } else {
      if (states.contains(null)) {
        throw new InvalidJobException(
            "unique.states", "a state is null; allowed: " + JobState.allowedValues());
      }
      // River's rule too: a job moves between the unfinished states by itself (claimed, retried,
      // rescued), and such a move must never meet a unique constraint, so every set holds all of
      // them.
      EnumSet<JobState> missing = EnumSet.copyOf(UNFINISHED);
      missing.removeAll(states);
      if (!missing.isEmpty()) {
        throw new InvalidJobException(
            "unique.states",
            "must include every unfinished state (queued, running,"
                + " retrying), missing " + names(missing)
                + ": a job moves between them by itself (claimed, retried),"
                + " and that move must never meet a unique constraint; add finished states (succeeded, failed,"
                + " cancelled) to the unfinished ones");
      }
      states = Set.copyOf(EnumSet.copyOf(states));
    }
    if (byArgs && !byFields.isEmpty()) {
      throw new InvalidJobException(
          "unique.byArgs", "give either the whole payload (byArgs) or fields, not both");
    }
    if (byFields.size() > MAX_FIELDS) {
      throw new InvalidJobException(
          "unique.byArgs", "at most " + MAX_FIELDS + " fields, was " + byFields.size());
    }
    Set<String> seen = new LinkedHashSet<>();
    for (String field : byFields) {
      if (field == null) {
        throw new InvalidJobException("unique.byArgs", "a field name is null");
      }
      IdempotencyKeys.requireField("unique.byArgs", field);
      if (!seen.add(field)) {
        throw new InvalidJobException("unique.byArgs", "field '" + field + "' is listed twice");
      }
    }
    if (period != null) {
      if (period.compareTo(Duration.ofSeconds(MIN_PERIOD_SECONDS)) < 0
          || period.compareTo(MAX_PERIOD) > 0) {
        throw new InvalidJobException(
            "unique.period",
            "must be between " + MIN_PERIOD_SECONDS + " s and " + MAX_PERIOD.toDays()
                + " days, was " + period);
      }
      if (period.toNanos() % 1_000_000 != 0) {
        throw new InvalidJobException("unique.period", "must be whole milliseconds, was " + period);
      }
    }
  }

  /** The finished states of {@link #states} (succeeded, failed, cancelled), in that order; empty by default. */
  public List<JobState> finishedStates() {
    return EnumSet.copyOf(states).stream().filter(JobState::isTerminal).toList();
  }

  private static String names(Set<JobState> states) {
    return String.join(", ", states.stream().map(JobState::value).toList());
  }

  /** A new builder: unique by type alone until told otherwise. */
  public static Builder builder() {
    return new Builder();
  }

  /** True if {@code r} is to be replaced on a duplicate. */
  public boolean replaces(Replace r) {
    return replace.contains(r);
  }

  /** Builder of {@link UniqueOptions}. */
  public static final class Builder {
    private boolean byArgs;
    private final List<String> byFields = new ArrayList<>();
    private boolean byQueue;
    private Duration period;
    private final Set<Replace> replace = EnumSet.noneOf(Replace.class);
    private final Set<JobState> states = EnumSet.noneOf(JobState.class);

    private Builder() {}

    /** The whole payload is part of the key (compared as canonical JSON). */
    public Builder byArgs() {
      this.byArgs = true;
      return this;
    }

    /**
     * These payload fields (names, or JSON pointers such as {@code /order/id}) are part of the key; a
     * payload without one of them is refused, naming it.
     */
    public Builder byFields(String... fields) {
      byFields.addAll(List.of(fields));
      return this;
    }

    /** The queue is part of the key: the same job in two queues is two jobs. */
    public Builder byQueue() {
      this.byQueue = true;
      return this;
    }

    /**
     * Unique only within periods of this length ({@value UniqueOptions#MIN_PERIOD_SECONDS} s to 366 days,
     * whole milliseconds), counted from the epoch by the database's clock.
     */
    public Builder period(Duration period) {
      this.period = period;
      return this;
    }

    /** A duplicate updates these of the existing job while it is not running. */
    public Builder replace(Replace... fields) {
      replace.addAll(List.of(fields));
      return this;
    }

    /**
     * The states in which an existing job with the key counts (default: the unfinished ones). The set must
     * hold every unfinished state ({@link UniqueOptions#UNFINISHED}) and may add finished ones: with
     * {@link JobState#SUCCEEDED}, a job that succeeded still counts, so "not again if one ran within the
     * period" is {@code states(QUEUED, RUNNING, RETRYING, SUCCEEDED)} with a {@link #period}. A finished job
     * counts until the period ends or it is pruned (retention), whichever comes first.
     */
    public Builder states(JobState... states) {
      this.states.addAll(List.of(states));
      return this;
    }

    /** Validates and builds. */
    public UniqueOptions build() {
      return new UniqueOptions(byArgs, byFields, byQueue, period, replace, states);
    }
  }
}
