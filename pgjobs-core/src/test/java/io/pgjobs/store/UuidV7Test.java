package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;

class UuidV7Test {
  /** PostgreSQL orders uuids by their bytes, i.e. as unsigned 64-bit halves. */
  private static int pgOrder(UUID a, UUID b) {
    int high = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
    return high != 0
        ? high
        : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
  }

  @Test
  void idsOfOneThreadIncreaseStrictlyEvenWithinOneMillisecond() {
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) { // far more than one millisecond's worth of 4,096
      ids.add(UuidV7.generate());
    }
    for (int i = 1; i < ids.size(); i++) {
      assertThat(pgOrder(ids.get(i - 1), ids.get(i)))
          .as("id %d after id %d", i, i - 1)
          .isNegative();
    }
  }

  @Test
  void idsAreVersion7VariantRfcAndCarryTheCurrentTime() {
    long before = System.currentTimeMillis();
    UUID id = UuidV7.generate();
    long after = System.currentTimeMillis();
    assertThat(id.version()).isEqualTo(7);
    assertThat(id.variant()).isEqualTo(2);
    long millis = id.getMostSignificantBits() >>> 16;
    // The sequence may have pushed the clock field ahead when earlier tests filled milliseconds.
    assertThat(millis).isBetween(before, after + 100);
    assertThat(UuidV7.timeOf(id).toEpochMilli()).as("the time read back").isEqualTo(millis);
  }

  @Test
  void idsFromManyThreadsAreUnique() throws InterruptedException {
    ConcurrentLinkedQueue<UUID> all = new ConcurrentLinkedQueue<>();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      threads.add(Thread.ofPlatform().start(() -> {
        for (int i = 0; i < 5_000; i++) {
          all.add(UuidV7.generate());
        }
      }));
    }
    for (Thread thread : threads) {
      thread.join();
    }
    Set<UUID> unique = new HashSet<>(all);
    assertThat(unique).hasSize(40_000);
    // Random parts differ: the low halves are not a counter.
    assertThat(all.stream().map(UUID::getLeastSignificantBits).distinct().count())
        .isEqualTo(40_000);
  }

  /** An id of millisecond {@code millis} with the given random tail (all ones: the largest of it). */
  private static UUID idAt(long millis, long tail) {
    return new UUID((millis << 16) | 0x7000L | (tail & 0xFFFL), 0x8000000000000000L | (tail >>> 2));
  }

  @Test
  void theCreationTimeBoundsAreExclusiveToTheMillisecond() {
    long t = 1_790_000_000_123L;
    java.time.Instant atT = java.time.Instant.ofEpochMilli(t);
    java.time.Instant insideT = atT.plusNanos(400_000);
    UUID smallestOfT = idAt(t, 0);
    UUID largestOfT = idAt(t, -1L);
    UUID largestBefore = idAt(t - 1, -1L);
    UUID smallestAfter = idAt(t + 1, 0);

    // before t: every id of an earlier millisecond, none of t's.
    assertThat(pgOrder(largestBefore, UuidV7.before(atT))).isNegative();
    assertThat(pgOrder(smallestOfT, UuidV7.before(atT))).isNotNegative();
    // A bound inside millisecond t (t + 0.4 ms): t's millisecond is neither before nor after it.
    assertThat(pgOrder(largestBefore, UuidV7.before(insideT))).isNegative();
    assertThat(pgOrder(smallestOfT, UuidV7.before(insideT))).isNotNegative();
    for (java.time.Instant bound : List.of(atT, insideT)) {
      assertThat(pgOrder(largestOfT, UuidV7.after(bound))).isNegative();
      assertThat(pgOrder(smallestAfter, UuidV7.after(bound))).isNotNegative();
    }
    // after t - 0.6 ms (inside t - 1): t's millisecond is after it.
    assertThat(pgOrder(smallestOfT, UuidV7.after(atT.minusNanos(600_000)))).isNotNegative();
    assertThat(pgOrder(largestBefore, UuidV7.after(atT.minusNanos(600_000)))).isNegative();
  }

  @Test
  void theCreationTimeBoundsSaturateFarOutsideWhatAnIdHolds() {
    UUID now = UuidV7.generate();
    assertThat(pgOrder(now, UuidV7.after(java.time.Instant.MIN)))
        .as("after the distant past")
        .isNotNegative();
    assertThat(pgOrder(now, UuidV7.before(java.time.Instant.MIN)))
        .as("before it: none")
        .isNotNegative();
    assertThat(pgOrder(now, UuidV7.before(java.time.Instant.MAX)))
        .as("before the far future")
        .isNegative();
    assertThat(pgOrder(now, UuidV7.after(java.time.Instant.MAX)))
        .as("after it: none")
        .isNegative();
    assertThat(pgOrder(now, UuidV7.after(java.time.Instant.ofEpochSecond(-1, 500_000_000))))
        .isNotNegative();
  }
}
