package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The resumed claim's cursor parameters are written as text by hand (not by {@code createArrayOf} and
 * {@link Instant#toString}): each {@code run_at} must read back as the very same instant, to the
 * microsecond, whatever its year (and {@code ±infinity}), and the three arrays must list the levels
 * highest first with their own positions.
 */
class ClaimCursorParametersTest {

  @Test
  void everyInstantIsWrittenExactlyToTheMicrosecond() {
    Random random = new Random(42);
    long min = Instant.parse("1000-01-01T00:00:00Z").getEpochSecond();
    long max = Instant.parse("9999-12-31T23:59:59Z").getEpochSecond();
    for (int i = 0; i < 100_000; i++) {
      long second = min + (long) (random.nextDouble() * (max - min));
      Instant t = Instant.ofEpochSecond(second, random.nextInt(1_000_000) * 1_000L);
      assertThat(Instant.parse(written(t))).isEqualTo(t);
    }
    for (String edge : List.of(
        "1000-01-01T00:00:00Z",
        "9999-12-31T23:59:59.999999Z",
        "2024-02-29T23:59:59.000001Z",
        "1970-01-01T00:00:00Z",
        "1969-12-31T23:59:59.999999Z",
        "2026-11-27T14:00:00.100000Z")) {
      Instant t = Instant.parse(edge);
      assertThat(written(t)).hasSize(27).endsWith("Z");
      assertThat(Instant.parse(written(t))).isEqualTo(t);
    }
  }

  @Test
  void yearsOutsideFourDigitsErasAndInfinitiesAreWrittenAsPostgresqlReadsThem() {
    // Checked against PostgreSQL itself in RunAtEdgesTest; here the exact text.
    assertThat(written(Instant.parse("0999-12-31T23:59:59.999999Z")))
        .isEqualTo("0999-12-31T23:59:59.999999Z");
    assertThat(written(Instant.parse("0001-01-01T00:00:00Z")))
        .isEqualTo("0001-01-01T00:00:00.000000Z");
    assertThat(written(Instant.parse("+10000-01-01T00:00:00Z")))
        .isEqualTo("10000-01-01T00:00:00.000000Z");
    assertThat(written(Instant.parse("0000-12-31T23:59:59Z")))
        .isEqualTo("\"0001-12-31T23:59:59.000000Z BC\"");
    assertThat(written(Instant.parse("-0043-03-15T12:00:00.000001Z")))
        .isEqualTo("\"0044-03-15T12:00:00.000001Z BC\"");
    assertThat(written(Instant.parse("-4713-11-24T00:00:00Z")))
        .isEqualTo("\"4714-11-24T00:00:00.000000Z BC\"");
    assertThat(written(Instant.parse("-4713-11-23T23:59:59.999999Z"))).isEqualTo("-infinity");
    assertThat(written(Instant.MIN)).isEqualTo("-infinity");
    assertThat(written(Instant.parse("+294276-12-31T23:59:59.999999Z")))
        .isEqualTo("294276-12-31T23:59:59.999999Z");
    assertThat(written(Instant.parse("+294277-01-01T00:00:00Z"))).isEqualTo("infinity");
    assertThat(written(Instant.MAX)).isEqualTo("infinity");
  }

  @Test
  void theArraysListEveryLevelHighestFirstWithItsOwnPosition() {
    ClaimCursor cursor = new ClaimCursor();
    UUID low = UUID.fromString("00000000-0000-7000-8000-000000000001");
    UUID high = UUID.fromString("ffffffff-ffff-7fff-bfff-fffffffffffe");
    Instant t1 = Instant.parse("2026-11-27T14:00:00.123456Z");
    Instant t2 = Instant.parse("2026-11-27T14:00:01Z");
    cursor.advance(List.of(job(low, 0, t1), job(high, 5, t2)));

    ClaimCursor.ResumeParameters p = cursor.resumeParameters();

    assertThat(p.highestLevel()).isEqualTo(5);
    assertThat(p.levels()).isEqualTo("{5,0}");
    assertThat(p.runAts()).isEqualTo("{2026-11-27T14:00:01.000000Z,2026-11-27T14:00:00.123456Z}");
    assertThat(p.ids()).isEqualTo("{" + high + "," + low + "}");
  }

  private static String written(Instant t) {
    StringBuilder b = new StringBuilder();
    ClaimCursor.appendInstant(b, t);
    return b.toString();
  }

  private static ClaimedJob job(UUID id, int priority, Instant runAt) {
    return new ClaimedJob(
        id,
        "t",
        "default",
        "{}",
        priority,
        1,
        3,
        runAt.truncatedTo(ChronoUnit.MICROS),
        runAt,
        null,
        null,
        1L,
        null);
  }
}
