package io.pgjobs.worker;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * A poller claims in a few sizes only (each size is a statement PostgreSQL plans once per connection):
 * never more than wanted, at least one, its lane count or its claim batch exactly when that many are
 * wanted, and otherwise a power of two.
 */
class ClaimSizeTest {

  @Test
  void neverMoreThanWantedAndAtLeastOneAndTheLanesOrTheBatchExactly() {
    for (int concurrency : new int[] {1, 3, 10, 64, 100, 10_000}) {
      for (int claimBatch : new int[] {1, 7, 100, 1_000, 10_000}) {
        for (int wanted = 1; wanted <= claimBatch; wanted++) {
          int size = QueuePoller.claimSize(wanted, concurrency, claimBatch);
          assertThat(size).as("wanted %d, concurrency %d, batch %d", wanted, concurrency, claimBatch)
              .isBetween(1, wanted);
          // At least half of what is wanted: a claim never shrinks to a trickle.
          assertThat(size * 2).isGreaterThan(wanted);
          if (wanted == claimBatch || wanted == concurrency) {
            assertThat(size).isEqualTo(wanted);
          } else if (size != concurrency) {
            assertThat(Integer.bitCount(size)).as("a power of two").isEqualTo(1);
          }
        }
      }
    }
  }

  @Test
  void aWorkerOfTenLanesAndBatchesOfAThousandClaimsInTwelveSizes() {
    TreeSet<Integer> sizes = new TreeSet<>();
    for (int wanted = 1; wanted <= 1_000; wanted++) {
      sizes.add(QueuePoller.claimSize(wanted, 10, 1_000));
    }
    assertThat(sizes).containsExactly(1, 2, 4, 8, 10, 16, 32, 64, 128, 256, 512, 1_000);
  }
}
