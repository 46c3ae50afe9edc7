package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The cursor's bookkeeping: when a full pass is due, and how its interval follows a full pass's cost. */
class ClaimCursorTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  @Test
  void anEmptyCursorAlwaysAsksForAFullPass() {
    ClaimCursor cursor = new ClaimCursor();
    assertThat(cursor.fullPassDue(0)).isTrue();
    cursor.fullPassMade(0, MS);
    assertThat(cursor.fullPassDue(2 * MS)).as("no level known yet").isTrue();
  }

  @Test
  void aCheapFullPassIsRepeatedEverySecond() {
    ClaimCursor cursor = advancedCursor();
    cursor.fullPassMade(0, 3 * MS);
    assertThat(cursor.fullPassInterval()).isEqualTo(ClaimCursor.MIN_FULL_PASS_INTERVAL_NANOS);
    assertThat(cursor.fullPassDue(999 * MS)).isFalse();
    assertThat(cursor.fullPassDue(1_000 * MS)).isTrue();
  }

  @Test
  void aSlowFullPassSpacesTheNextOnesOutSoTheyTakeAboutOnePercentOfThePollersTime() {
    ClaimCursor cursor = advancedCursor();
    long start = 5_000 * MS;
    cursor.fullPassMade(start, start + 40 * MS);
    assertThat(cursor.fullPassInterval()).isEqualTo(4_000 * MS);
    assertThat(cursor.fullPassDue(start + 3_999 * MS)).isFalse();
    assertThat(cursor.fullPassDue(start + 4_000 * MS)).isTrue();

    // Once the dead entries are gone, the full pass is cheap again and so is its interval.
    cursor.fullPassMade(start + 4_000 * MS, start + 4_002 * MS);
    assertThat(cursor.fullPassInterval()).isEqualTo(ClaimCursor.MIN_FULL_PASS_INTERVAL_NANOS);
  }

  @Test
  void theIntervalNeverExceedsTenSecondsHoweverSlowAFullPassIs() {
    ClaimCursor cursor = advancedCursor();
    cursor.fullPassMade(0, 100 * MS);
    assertThat(cursor.fullPassInterval()).isEqualTo(ClaimCursor.MAX_FULL_PASS_INTERVAL_NANOS);
    cursor.fullPassMade(0, 60_000 * MS);
    assertThat(cursor.fullPassInterval()).isEqualTo(ClaimCursor.MAX_FULL_PASS_INTERVAL_NANOS);
    assertThat(cursor.fullPassDue(10_000 * MS)).isTrue();
  }

  @Test
  void jobsGivenBackMakeTheNextClaimAFullPassWhateverTheInterval() {
    ClaimCursor cursor = advancedCursor();
    cursor.fullPassMade(0, 80 * MS);
    assertThat(cursor.fullPassDue(100 * MS)).isFalse();
    cursor.forceFullPass();
    assertThat(cursor.fullPassDue(100 * MS)).isTrue();
  }

  private static ClaimCursor advancedCursor() {
    ClaimCursor cursor = new ClaimCursor();
    cursor.advance(List.of(new ClaimedJob(UUID.randomUUID(), "default", "t", "{}", 0, 1, 5,
        Instant.now(), Instant.now(), null, null, 1L)));
    return cursor;
  }
}
