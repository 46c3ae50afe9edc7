package io.pgjobs;

import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The limits of one queue across the whole fleet, however many workers serve it: how many of its jobs run at
 * once, how many start per period, and the same per partition (an account, a tenant, a target host).
 * Enforced inside the claim's own transaction, so they are exact across worker processes; jobs over a limit
 * wait, they are never refused. Partitions take turns (round-robin), so one partition with most of the
 * jobs cannot starve the others; a partition limited to one job at a time runs its jobs strictly in order.
 *
 * <pre>{@code
 * QueueLimits limits = QueueLimits.builder()
 *     .globalConcurrency(50)                       // at most 50 running in the whole fleet
 *     .partitionBy("input.account_id")             // one partition per account
 *     .partitionConcurrency(2)                     // 2 at a time per account
 *     .partitionRate(10, Duration.ofSeconds(1))    // and 10 started a second per account
 *     .build();
 * client.setLimits("billing", limits);
 * }</pre>
 *
 * <p>A job's partition is fixed when it is enqueued: {@link EnqueueOptions.Builder#partition} if given, else
 * {@link #partitionBy()} applied to the job ({@code type}: its job type; {@code input.<field>}: that field of
 * its payload, as text; {@code partition}: only a key given at enqueue). Jobs without one share partition
 * {@code ""}.
 *
 * @param globalConcurrency most jobs of the queue running at once in the fleet, or null for no limit
 * @param rate most jobs of the queue started per period, or null
 * @param partitionBy what a job's partition is, or null for an unpartitioned queue
 * @param partitionConcurrency most jobs of one partition running at once, or null; 1 runs each partition's
 *     jobs strictly in enqueue order, a retrying job blocking its partition until it succeeds or is discarded
 * @param partitionRate most jobs of one partition started per period, or null
 */
public record QueueLimits(
    Integer globalConcurrency,
    Rate rate,
    String partitionBy,
    Integer partitionConcurrency,
    Rate partitionRate) {

  /** The largest concurrency limit: {@value}. */
  public static final int MAX_CONCURRENCY = 100_000;
  /** The largest number of starts per period: {@value}. */
  public static final int MAX_RATE = 1_000_000;
  /** The longest rate period: one day. */
  public static final Duration MAX_PERIOD = Duration.ofDays(1);
  /** The shortest rate period: one millisecond. */
  public static final Duration MIN_PERIOD = Duration.ofMillis(1);
  /**
   * The default burst of a rate covers this much of its period's starts at once (at least one): claims
   * come in turns, not continuously, and a burst of one would cap the rate at one start per claim.
   */
  public static final Duration DEFAULT_BURST_SPAN = Duration.ofMillis(200);

  private static final Pattern INPUT_FIELD = Pattern.compile("input(\\.[A-Za-z0-9_-]{1,64}){1,8}");

  /** No limits: the queue is claimed as fast as its workers' lanes allow. */
  public static final QueueLimits NONE = new QueueLimits(null, null, null, null, null);

  /**
   * A rate limit: at most {@code limit} starts per {@code period}, evenly spaced (GCRA), with up to
   * {@code burst} at once after a quiet spell. Every start counts, whatever the job's outcome.
   *
   * @param limit starts per period, 1 to {@value #MAX_RATE}
   * @param period 1 ms to one day, whole milliseconds
   * @param burst starts allowed at once, 1 to {@value #MAX_RATE}
   */
  public record Rate(int limit, Duration period, int burst) {
    /** Validates. */
    public Rate {
      Objects.requireNonNull(period, "period");
      if (limit < 1 || limit > MAX_RATE) {
        throw new IllegalArgumentException(
            "rate limit must be between 1 and " + MAX_RATE + " starts per period, was " + limit);
      }
      if (period.compareTo(MIN_PERIOD) < 0
          || period.compareTo(MAX_PERIOD) > 0
          || period.toNanos() % 1_000_000 != 0) {
        throw new IllegalArgumentException(
            "rate period must be whole milliseconds from 1 ms to 24 h, was "
                + io.pgjobs.config.DurationText.format(period));
      }
      if (burst < 1 || burst > MAX_RATE) {
        throw new IllegalArgumentException(
            "rate burst must be between 1 and " + MAX_RATE + ", was " + burst);
      }
    }

    /** {@code limit} per {@code period} with the default burst ({@link #defaultBurst}). */
    public static Rate of(int limit, Duration period) {
      Objects.requireNonNull(period, "period");
      return new Rate(limit, period, defaultBurst(limit, period));
    }

    /**
     * The default burst of {@code limit} per {@code period}: the starts of {@link #DEFAULT_BURST_SPAN}, at
     * least 2 (and at most the limit): 100 a second bursts 20, 5 a second 2, 1 an hour 1. Why at least 2:
     * claims come every 100 ms or so, not the instant a start is allowed; with a burst of 1 the time between a
     * start falling due and the claim that takes it is lost each time (5 a second ran at 4).
     */
    public static int defaultBurst(int limit, Duration period) {
      if (period.isZero() || period.isNegative()) {
        return 1;
      }
      double perSpan = (double) limit * DEFAULT_BURST_SPAN.toNanos() / period.toNanos();
      return (int) Math.max(1, Math.min(limit, Math.max(2, Math.ceil(perSpan))));
    }

    @Override
    public String toString() {
      return limit + "/" + io.pgjobs.config.DurationText.format(period) + " (burst " + burst + ")";
    }
  }

  /** Validates every limit (the builder's rules). */
  public QueueLimits {
    if (globalConcurrency != null) {
      checkConcurrency("global_concurrency", globalConcurrency);
    }
    if (partitionConcurrency != null) {
      checkConcurrency("partition_concurrency", partitionConcurrency);
    }
    if (partitionBy != null) {
      checkPartitionBy(partitionBy);
    }
    if (partitionBy == null && (partitionConcurrency != null || partitionRate != null)) {
      throw new IllegalArgumentException(
          "partition_concurrency and partition_rate need partition_by: say what a job's partition is"
              + " ('type', 'partition' or 'input.<field>')");
    }
  }

  /** A builder of limits; every limit starts unset. */
  public static Builder builder() {
    return new Builder();
  }

  /** True if no limit and no partition rule is set. */
  public boolean isNone() {
    return globalConcurrency == null
        && rate == null
        && partitionBy == null
        && partitionConcurrency == null
        && partitionRate == null;
  }

  /** A builder whose limits start as these. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.globalConcurrency = globalConcurrency;
    b.rate = rate;
    b.partitionBy = partitionBy;
    b.partitionConcurrency = partitionConcurrency;
    b.partitionRate = partitionRate;
    return b;
  }

  private static void checkConcurrency(String name, int value) {
    if (value < 1 || value > MAX_CONCURRENCY) {
      throw new IllegalArgumentException(
          name + " must be between 1 and " + MAX_CONCURRENCY + ", was " + value);
    }
  }

  /**
   * Checks a partition rule: {@code type}, {@code partition} or {@code input.<field>[.<field>…]} (up to 8
   * fields of 1 to 64 letters, digits, {@code _} or {@code -}).
   *
   * @throws IllegalArgumentException naming what is allowed
   */
  public static String checkPartitionBy(String partitionBy) {
    if (partitionBy.equals("type")
        || partitionBy.equals("partition")
        || INPUT_FIELD.matcher(partitionBy).matches()) {
      return partitionBy;
    }
    throw new IllegalArgumentException(
        "partition_by must be 'type', 'partition' or 'input.<field>' (a payload"
            + " field, up to 8 levels: input.account.id; each 1-64 of A-Z a-z 0-9 _ -), was '"
            + (partitionBy.length() > 100 ? partitionBy.substring(0, 100) + "…" : partitionBy)
            + "'");
  }

  /** Builds {@link QueueLimits}; {@link #build()} validates. */
  public static final class Builder {
    private Integer globalConcurrency;
    private Rate rate;
    private String partitionBy;
    private Integer partitionConcurrency;
    private Rate partitionRate;

    private Builder() {}

    /** At most {@code n} (1 to {@value #MAX_CONCURRENCY}) of the queue's jobs running at once, fleet-wide. */
    public Builder globalConcurrency(int n) {
      checkConcurrency("global_concurrency", n);
      this.globalConcurrency = n;
      return this;
    }

    /** At most {@code limit} of the queue's jobs started per {@code period}, default burst. */
    public Builder rate(int limit, Duration period) {
      this.rate = Rate.of(limit, period);
      return this;
    }

    /** At most {@code limit} started per {@code period}, up to {@code burst} at once. */
    public Builder rate(int limit, Duration period, int burst) {
      this.rate = new Rate(limit, period, burst);
      return this;
    }

    /** What a job's partition is: {@code type}, {@code partition} or {@code input.<field>}. */
    public Builder partitionBy(String rule) {
      Objects.requireNonNull(rule, "partitionBy");
      this.partitionBy = checkPartitionBy(rule);
      return this;
    }

    /** At most {@code n} jobs of one partition running at once; 1 runs each partition in order. */
    public Builder partitionConcurrency(int n) {
      checkConcurrency("partition_concurrency", n);
      this.partitionConcurrency = n;
      return this;
    }

    /** At most {@code limit} jobs of one partition started per {@code period}, default burst. */
    public Builder partitionRate(int limit, Duration period) {
      this.partitionRate = Rate.of(limit, period);
      return this;
    }

    /** At most {@code limit} jobs of one partition started per {@code period}, up to {@code burst} at once. */
    public Builder partitionRate(int limit, Duration period, int burst) {
      this.partitionRate = new Rate(limit, period, burst);
      return this;
    }

    /** The limits. @throws IllegalArgumentException if partition limits are set without partitionBy */
    public QueueLimits build() {
      return new QueueLimits(
          globalConcurrency, rate, partitionBy, partitionConcurrency, partitionRate);
    }
  }
}
