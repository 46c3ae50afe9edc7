package io.pgjobs;

import java.time.Duration;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * How long a job waits before its next attempt after attempt {@code n} failed. Every policy has a cap.
 *
 * <table>
 *   <caption>Policies; {@code n} is the 1-based number of the attempt that just failed</caption>
 *   <tr><th>policy</th><th>delay after attempt n</th></tr>
 *   <tr><td>{@link #fixed fixed(d)}</td><td>{@code d}</td></tr>
 *   <tr><td>{@link #linear linear(base, cap)}</td><td>{@code min(cap, base · n)}</td></tr>
 *   <tr><td>{@link #exponential exponential(base, cap, jitter)}</td>
 *       <td>{@code min(cap, base · 2^(n-1)) · (1 - jitter · u)}, {@code u} uniform in [0, 1)</td></tr>
 *   <tr><td>{@link #decorrelatedJitter decorrelatedJitter(base, cap)}</td>
 *       <td>uniform in {@code [base, min(cap, base · 3^n)]} (seed 003's bucketed form of AWS's
 *       decorrelated jitter, which needs no stored previous delay)</td></tr>
 * </table>
 *
 * The default ({@link #DEFAULT}) is exponential with base 1 s, cap 10 min and 10 % jitter.
 */
public sealed interface RetryPolicy {

  /**
   * The longest delay a policy may give, and so the longest base and cap: 3,650 days (10 years, the
   * HTTP API's limit for {@code delay_ms} too). The next attempt's time is the database's now() plus the
   * delay; a delay beyond what a long holds in milliseconds, or beyond what PostgreSQL's interval and
   * timestamp arithmetic can hold, used to be accepted and then made the retry unwritable, leaving the
   * job running.
   */
  Duration MAX_DELAY = Duration.ofDays(3_650);

  /** Exponential, base 1 s, cap 10 min, jitter 0.1: the policy a job type gets unless it says otherwise. */
  RetryPolicy DEFAULT = exponential(Duration.ofSeconds(1), Duration.ofMinutes(10), 0.1);

  /**
   * The delay before the next attempt.
   *
   * @param failedAttempt the 1-based number of the attempt that failed
   * @param random source of jitter (tests pass a seeded one)
   */
  Duration delay(int failedAttempt, RandomGenerator random);

  /** The cap: no delay is ever longer. */
  Duration cap();

  /** The same delay every time. */
  static RetryPolicy fixed(Duration delay) {
    return new Fixed(delay);
  }

  /** {@code base · n}, capped. */
  static RetryPolicy linear(Duration base, Duration cap) {
    return new Linear(base, cap);
  }

  /** {@code base · 2^(n-1)}, capped, then shortened by up to {@code jitter} (0 to 1) at random. */
  static RetryPolicy exponential(Duration base, Duration cap, double jitter) {
    return new Exponential(base, cap, jitter);
  }

  /** Uniform in {@code [base, min(cap, base · 3^n)]}. */
  static RetryPolicy decorrelatedJitter(Duration base, Duration cap) {
    return new DecorrelatedJitter(base, cap);
  }

  /** See {@link RetryPolicy#fixed}. */
  record Fixed(Duration delay) implements RetryPolicy {
    /** Validates. */
    public Fixed {
      requirePositiveOrZero("delay", delay);
    }

    @Override
    public Duration delay(int failedAttempt, RandomGenerator random) {
      return delay;
    }

    @Override
    public Duration cap() {
      return delay;
    }
  }

  /** See {@link RetryPolicy#linear}. */
  record Linear(Duration base, Duration cap) implements RetryPolicy {
    /** Validates. */
    public Linear {
      requireBaseAndCap(base, cap);
    }

    @Override
    public Duration delay(int failedAttempt, RandomGenerator random) {
      return capped(base.toMillis() * (double) Math.max(1, failedAttempt), cap);
    }
  }

  /** See {@link RetryPolicy#exponential}. */
  record Exponential(Duration base, Duration cap, double jitter) implements RetryPolicy {
    /** Validates. */
    public Exponential {
      requireBaseAndCap(base, cap);
      if (!(jitter >= 0.0 && jitter <= 1.0)) {
        throw new IllegalArgumentException("retry jitter must be between 0 and 1, was " + jitter);
      }
    }

    @Override
    public Duration delay(int failedAttempt, RandomGenerator random) {
      double full = base.toMillis() * Math.pow(2, Math.max(1, failedAttempt) - 1);
      double capped = Math.min(full, cap.toMillis());
      double factor = jitter == 0.0 ? 1.0 : 1.0 - jitter * random.nextDouble();
      return Duration.ofMillis((long) Math.floor(capped * factor));
    }
  }

  /** See {@link RetryPolicy#decorrelatedJitter}. */
  record DecorrelatedJitter(Duration base, Duration cap) implements RetryPolicy {
    /** Validates. */
    public DecorrelatedJitter {
      requireBaseAndCap(base, cap);
    }

    @Override
    public Duration delay(int failedAttempt, RandomGenerator random) {
      long low = base.toMillis();
      double high = Math.min(low * Math.pow(3, Math.max(1, failedAttempt)), cap.toMillis());
      long upper = (long) Math.floor(high);
      if (upper <= low) {
        return Duration.ofMillis(Math.min(low, cap.toMillis()));
      }
      return Duration.ofMillis(random.nextLong(low, upper + 1));
    }
  }

  private static Duration capped(double millis, Duration cap) {
    return Duration.ofMillis((long) Math.min(millis, cap.toMillis()));
  }

  private static void requirePositiveOrZero(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative()) {
      throw new IllegalArgumentException(
          "retry " + name + " must be zero or positive, was " + value);
    }
    if (value.compareTo(MAX_DELAY) > 0) {
      throw new IllegalArgumentException("retry " + name + " must be at most " + MAX_DELAY.toDays()
          + " days (RetryPolicy.MAX_DELAY), was " + value);
    }
  }

  private static void requireBaseAndCap(Duration base, Duration cap) {
    requirePositiveOrZero("base", base);
    requirePositiveOrZero("cap", cap);
    if (cap.compareTo(base) < 0) {
      throw new IllegalArgumentException(
          "retry cap (" + cap + ") must not be shorter than the base (" + base + ")");
    }
  }
}
