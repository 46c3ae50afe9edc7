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
}
