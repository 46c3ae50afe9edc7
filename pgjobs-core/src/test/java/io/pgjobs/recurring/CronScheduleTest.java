package io.pgjobs.recurring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Cron parsing, errors, and daylight saving time in Europe/Berlin (2026: March 29 and October 25). */
class CronScheduleTest {
  private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

  private static Instant local(String dateTime) {
    return LocalDateTime.parse(dateTime).atZone(BERLIN).toInstant();
  }

  @Test
  void dailyAtTwoThirtyIsSkippedOnTheSpringForwardDayWhenTwoThirtyDoesNotExist() {
    CronSchedule s = CronSchedule.parse("30 2 * * *", "Europe/Berlin");
    List<Instant> slots = s.slots(local("2026-03-27T12:00"), local("2026-03-31T12:00"), 100);
    System.out.println("spring forward: "
        + slots.stream().map(i -> i.atZone(BERLIN).toString()).toList());
    // 28th, 30th, 31st: the 29th has no 02:30 (02:00 jumps to 03:00), and nothing fires in its
    // stead.
    assertThat(slots)
        .containsExactly(
            local("2026-03-28T02:30"), local("2026-03-30T02:30"), local("2026-03-31T02:30"));
  }

  @Test
  void dailyAtTwoThirtyFiresOnceOnTheFallBackDay() {
    CronSchedule s = CronSchedule.parse("30 2 * * *", "Europe/Berlin");
    List<Instant> slots = s.slots(local("2026-10-24T12:00"), local("2026-10-26T12:00"), 100);
    System.out.println(
        "fall back: " + slots.stream().map(i -> i.atZone(BERLIN).toString()).toList());
    assertThat(slots).hasSize(2);
    assertThat(slots.get(0))
        .isEqualTo(LocalDateTime.parse("2026-10-25T02:30")
            .atZone(BERLIN)
            .withEarlierOffsetAtOverlap()
            .toInstant());
    assertThat(slots.get(1)).isEqualTo(local("2026-10-26T02:30"));
  }

  @Test
  void everyFifteenMinutesThroughTheFallBackHourFiresEveryLocalTimeOnce() {
    CronSchedule s = CronSchedule.parse("*/15 * * * *", "Europe/Berlin");
    List<Instant> slots = s.slots(local("2026-10-25T01:50"), local("2026-10-25T04:00"), 1000);
    // 02:00-02:45 local happen twice in real time; each fires once: 02:00..02:45 first occurrence,
    // then 03:00..
    assertThat(
            slots.stream().map(i -> i.atZone(BERLIN).toLocalTime().toString()).toList())
        .doesNotHaveDuplicates();
  }

  @Test
  void sixFieldsWithSecondsAndMacrosParse() {
    CronSchedule everySecond = CronSchedule.parse("* * * * * *", "UTC");
    Instant t = Instant.parse("2026-11-26T10:00:00Z");
    assertThat(everySecond.slots(t, t.plusSeconds(5), 100)).hasSize(5);
    assertThat(CronSchedule.parse("@hourly", "UTC").next(t))
        .contains(Instant.parse("2026-11-26T11:00:00Z"));
    assertThat(CronSchedule.parse("@daily", "UTC").next(t))
        .contains(Instant.parse("2026-11-27T00:00:00Z"));
  }

  @Test
  void slotsAreWholeSecondsWhateverTheyAreCountedFrom() {
    CronSchedule everySecond = CronSchedule.parse("* * * * * *", "UTC");
    Instant odd = Instant.parse("2026-11-26T10:00:00.249957Z");
    assertThat(everySecond.next(odd)).contains(Instant.parse("2026-11-26T10:00:01Z"));
    assertThat(CronSchedule.parse("* * * * *", "UTC").next(odd))
        .contains(Instant.parse("2026-11-26T10:01:00Z"));
  }

  @Test
  void missedSlotsAreLimitedToTheNewest() {
    CronSchedule s = CronSchedule.parse("* * * * *", "UTC");
    Instant t = Instant.parse("2026-11-26T10:00:00Z");
    assertThat(s.slots(t, t.plusSeconds(600), 3))
        .containsExactly(t.plusSeconds(480), t.plusSeconds(540), t.plusSeconds(600));
  }

  @Test
  void badExpressionsAndZonesAreRejectedSayingWhatIsWrong() {
    assertThatThrownBy(() -> CronSchedule.parse("61 * * * *", "UTC"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("field 1 (minute) '61'");
    assertThatThrownBy(() -> CronSchedule.parse("* * 32 * *", "UTC"))
        .hasMessageContaining("field 3 (day of month) '32'");
    assertThatThrownBy(() -> CronSchedule.parse("* * * *", "UTC"))
        .hasMessageContaining("has 4 fields");
    assertThatThrownBy(() -> CronSchedule.parse("@sometimes", "UTC"))
        .hasMessageContaining("unknown cron macro");
    assertThatThrownBy(() -> CronSchedule.parse("* * * * *", "Mars/Olympus"))
        .hasMessageContaining("unknown time zone");
    assertThatThrownBy(() -> CronSchedule.parse(" ", "UTC")).hasMessageContaining("empty");
  }

  @Test
  void catchingUpTwoDaysOfAPerSecondScheduleCountsEverySlotAndKeepsTheNewest() {
    CronSchedule everySecond = CronSchedule.parse("* * * * * *", "UTC");
    Instant t = Instant.parse("2026-11-26T10:00:00Z");

    CronSchedule.CatchUp catchUp =
        everySecond.catchUp(t, t.plus(java.time.Duration.ofDays(2)), 100_000);

    assertThat(catchUp.count()).isEqualTo(172_800);
    assertThat(catchUp.exact()).isTrue();
    assertThat(catchUp.newest()).hasSize(100_000);
    List<Instant> expected = new java.util.ArrayList<>(100_000);
    for (int i = 72_801; i <= 172_800; i++) {
      expected.add(t.plusSeconds(i));
    }
    assertThat(catchUp.newest().equals(expected))
        .as("the newest 100,000 slots, oldest first")
        .isTrue();
  }

  @Test
  void boundedCatchUpReadsARecentPartOfALongRangeOnly() {
    CronSchedule everySecond = CronSchedule.parse("* * * * * *", "UTC");
    Instant t = Instant.parse("2026-11-26T10:00:00Z");
    Instant upTo = t.plus(java.time.Duration.ofDays(30)); // 2,592,000 slots

    CronSchedule.CatchUp catchUp = everySecond.catchUp(t, upTo, 3, 10_000);

    assertThat(catchUp.exact()).isFalse();
    assertThat(catchUp.count()).isGreaterThan(10_000).isLessThan(40_000);
    assertThat(catchUp.newest()).containsExactly(upTo.minusSeconds(2), upTo.minusSeconds(1), upTo);
  }

  @Test
  void boundedCatchUpCountsExactlyWithinItsLimit() {
    CronSchedule everyMinute = CronSchedule.parse("* * * * *", "UTC");
    Instant t = Instant.parse("2026-11-26T10:00:00Z");

    CronSchedule.CatchUp catchUp =
        everyMinute.catchUp(t, t.plus(java.time.Duration.ofDays(3)), 2, 10_000);

    assertThat(catchUp.exact()).isTrue();
    assertThat(catchUp.count()).isEqualTo(3 * 24 * 60);
    assertThat(catchUp.newest())
        .containsExactly(
            t.plus(java.time.Duration.ofDays(3)).minusSeconds(60),
            t.plus(java.time.Duration.ofDays(3)));
  }
}
