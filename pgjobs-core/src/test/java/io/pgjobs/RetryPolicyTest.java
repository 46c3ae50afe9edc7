package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The retry policies against the formulas of {@link RetryPolicy}'s Javadoc, on ~200 seeded random cases
 * (base, cap, jitter, failed attempt 1..60), and their argument checks. No database.
 */
class RetryPolicyTest {
  private static final long SEED = 0x5EED_2026L;

  enum Kind {
    FIXED,
    LINEAR,
    EXPONENTIAL,
    DECORRELATED_JITTER
  }

  /** One generated case; {@code jitterSeed} seeds the random the policy draws from. */
  record Case(Kind kind, long baseMs, long capMs, double jitter, int attempt, long jitterSeed) {
    RetryPolicy policy() {
      Duration base = Duration.ofMillis(baseMs);
      Duration cap = Duration.ofMillis(capMs);
      return switch (kind) {
        case FIXED -> RetryPolicy.fixed(base);
        case LINEAR -> RetryPolicy.linear(base, cap);
        case EXPONENTIAL -> RetryPolicy.exponential(base, cap, jitter);
        case DECORRELATED_JITTER -> RetryPolicy.decorrelatedJitter(base, cap);
      };
    }
  }

  static Stream<Arguments> randomCases() {
    Random random = new Random(SEED);
    List<Arguments> cases = new ArrayList<>();
    Kind[] kinds = Kind.values();
    for (int i = 0; i < 200; i++) {
      Kind kind = kinds[i % kinds.length];
      // Bases from 0 to 10 s, some tiny; caps from the base up to an hour past it.
      long baseMs =
          i % 25 == 0 ? 0 : random.nextInt(5) == 0 ? random.nextInt(10) : random.nextInt(10_000);
      long capMs = baseMs + (random.nextInt(6) == 0 ? 0 : random.nextInt(3_600_000));
      double jitter = switch (i % 10) {
        case 0 -> 0.0;
        case 1 -> 1.0;
        default -> random.nextDouble();
      };
      int attempt = 1 + random.nextInt(60);
      cases.add(Arguments.of(new Case(kind, baseMs, capMs, jitter, attempt, random.nextLong())));
    }
    return cases.stream();
  }

  @ParameterizedTest
  @MethodSource("randomCases")
  void delayFollowsTheDocumentedFormulaAndNeverExceedsTheCap(Case c) {
    RetryPolicy policy = c.policy();
    long delay = policy.delay(c.attempt(), new Random(c.jitterSeed())).toMillis();
    double n = c.attempt();

    assertThat(delay).isNotNegative();
    assertThat(delay).isLessThanOrEqualTo(policy.cap().toMillis());
    switch (c.kind()) {
      case FIXED -> {
        assertThat(delay).isEqualTo(c.baseMs());
        assertThat(policy.cap().toMillis()).isEqualTo(c.baseMs());
      }
      case LINEAR -> {
        assertThat(policy.cap().toMillis()).isEqualTo(c.capMs());
        assertThat(delay).isEqualTo((long) Math.min(c.capMs(), c.baseMs() * n));
      }
      case EXPONENTIAL -> {
        assertThat(policy.cap().toMillis()).isEqualTo(c.capMs());
        double full = Math.min((double) c.capMs(), c.baseMs() * Math.pow(2, n - 1));
        // Delays are whole milliseconds (floored), so the lower bound is floored too.
        long low = (long) Math.floor((1 - c.jitter()) * full);
        assertThat(delay).isBetween(low, (long) full);
        if (c.jitter() == 0.0) {
          assertThat(delay).isEqualTo((long) full);
        }
      }
      case DECORRELATED_JITTER -> {
        assertThat(policy.cap().toMillis()).isEqualTo(c.capMs());
        double high = Math.min((double) c.capMs(), c.baseMs() * Math.pow(3, n));
        assertThat(delay).isBetween(c.baseMs(), (long) high);
      }
    }
  }

  @ParameterizedTest
  @MethodSource("randomCases")
  void fixedDelayIsTheSameForEveryAttempt(Case c) {
    RetryPolicy fixed = RetryPolicy.fixed(Duration.ofMillis(c.baseMs()));
    Random random = new Random(c.jitterSeed());
    for (int attempt = 1; attempt <= 60; attempt++) {
      assertThat(fixed.delay(attempt, random)).isEqualTo(Duration.ofMillis(c.baseMs()));
    }
  }

  @Test
  void exponentialJitterSpreadsDelaysOverTheWholeJitterRange() {
    RetryPolicy policy =
        RetryPolicy.exponential(Duration.ofSeconds(1), Duration.ofMinutes(10), 0.5);
    Random random = new Random(SEED);
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (int i = 0; i < 2_000; i++) {
      long ms = policy.delay(3, random).toMillis(); // full delay 4 s, jitter takes off up to half
      min = Math.min(min, ms);
      max = Math.max(max, ms);
    }
    assertThat(min).isBetween(2_000L, 2_100L);
    assertThat(max).isBetween(3_900L, 4_000L);
  }

  @Test
  void decorrelatedJitterSpreadsDelaysFromBaseToItsBucketTop() {
    RetryPolicy policy =
        RetryPolicy.decorrelatedJitter(Duration.ofMillis(100), Duration.ofMinutes(1));
    Random random = new Random(SEED);
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (int i = 0; i < 2_000; i++) {
      long ms = policy.delay(2, random).toMillis(); // uniform in [100, 900]
      min = Math.min(min, ms);
      max = Math.max(max, ms);
    }
    assertThat(min).isBetween(100L, 110L);
    assertThat(max).isBetween(890L, 900L);
  }

  @Test
  void delaysGrowWithTheAttemptUntilTheCap() {
    RetryPolicy linear = RetryPolicy.linear(Duration.ofSeconds(2), Duration.ofSeconds(7));
    RetryPolicy exponential =
        RetryPolicy.exponential(Duration.ofSeconds(1), Duration.ofSeconds(10), 0.0);
    Random random = new Random(SEED);
    assertThat(List.of(1, 2, 3, 4, 5).stream().map(n -> linear.delay(n, random).toSeconds()))
        .containsExactly(2L, 4L, 6L, 7L, 7L);
    assertThat(List.of(1, 2, 3, 4, 5, 60).stream()
            .map(n -> exponential.delay(n, random).toSeconds()))
        .containsExactly(1L, 2L, 4L, 8L, 10L, 10L);
  }

  @Test
  void defaultPolicyIsExponentialWithOneSecondBaseTenMinuteCapAndTenPercentJitter() {
    assertThat(RetryPolicy.DEFAULT)
        .isEqualTo(RetryPolicy.exponential(Duration.ofSeconds(1), Duration.ofMinutes(10), 0.1));
    assertThat(JobType.of("t", PgJobsTestBase.Numbered.class).retryPolicy())
        .isEqualTo(RetryPolicy.DEFAULT);
  }

  static Stream<Arguments> invalidPolicies() {
    Duration neg = Duration.ofMillis(-1);
    Duration one = Duration.ofSeconds(1);
    Duration ten = Duration.ofSeconds(10);
    return Stream.of(
        Arguments.of("fixed negative", (Supplier<RetryPolicy>) () -> RetryPolicy.fixed(neg)),
        Arguments.of(
            "linear negative base", (Supplier<RetryPolicy>) () -> RetryPolicy.linear(neg, ten)),
        Arguments.of("linear negative cap", (Supplier<RetryPolicy>)
            () -> RetryPolicy.linear(Duration.ZERO, neg)),
        Arguments.of(
            "linear cap < base", (Supplier<RetryPolicy>) () -> RetryPolicy.linear(ten, one)),
        Arguments.of("exponential negative base", (Supplier<RetryPolicy>)
            () -> RetryPolicy.exponential(neg, ten, 0.1)),
        Arguments.of("exponential cap < base", (Supplier<RetryPolicy>)
            () -> RetryPolicy.exponential(ten, one, 0.1)),
        Arguments.of("exponential jitter < 0", (Supplier<RetryPolicy>)
            () -> RetryPolicy.exponential(one, ten, -0.01)),
        Arguments.of("exponential jitter > 1", (Supplier<RetryPolicy>)
            () -> RetryPolicy.exponential(one, ten, 1.01)),
        Arguments.of("exponential jitter NaN", (Supplier<RetryPolicy>)
            () -> RetryPolicy.exponential(one, ten, Double.NaN)),
        Arguments.of("decorrelated negative base", (Supplier<RetryPolicy>)
            () -> RetryPolicy.decorrelatedJitter(neg, ten)),
        Arguments.of("decorrelated cap < base", (Supplier<RetryPolicy>)
            () -> RetryPolicy.decorrelatedJitter(ten, one)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("invalidPolicies")
  void invalidArgumentsAreRejected(String name, Supplier<RetryPolicy> policy) {
    assertThatThrownBy(policy::get)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("retry");
  }

  @Test
  void boundaryArgumentsAreAccepted() {
    Duration one = Duration.ofSeconds(1);
    assertThat(RetryPolicy.fixed(Duration.ZERO).delay(5, new Random(SEED))).isZero();
    assertThat(RetryPolicy.linear(one, one).delay(5, new Random(SEED))).isEqualTo(one);
    assertThat(RetryPolicy.exponential(one, one, 0.0).delay(1, new Random(SEED)))
        .isEqualTo(one);
    assertThat(RetryPolicy.exponential(one, one, 1.0).delay(1, new Random(SEED)))
        .isBetween(Duration.ZERO, one);
    assertThat(RetryPolicy.decorrelatedJitter(one, one).delay(3, new Random(SEED)))
        .isEqualTo(one);
  }
}
