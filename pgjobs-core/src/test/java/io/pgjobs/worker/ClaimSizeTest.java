package io.pgjobs.worker;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * A poller claims in a few sizes only (each size is a statement PostgreSQL plans once per connection):
 * never more than wanted and never less than 84 % of it, its lane count or its claim batch exactly when
 * that many are wanted, and otherwise a size of the quarter-octave grid.
 */
class ClaimSizeTest {

  @Test
  void neverMoreThanWantedNorLessThan84PercentOfItAndTheLanesOrTheBatchExactly() {
    TreeSet<Integer> grid = new TreeSet<>();
    for (int k = 0; k < 4 * 14; k++) {
      grid.add((int) Math.round(Math.pow(2, k / 4.0)));
    }
    for (int concurrency : new int[] {1, 3, 10, 64, 100, 10_000}) {
      for (int claimBatch : new int[] {1, 7, 100, 1_000, 10_000}) {
        for (int wanted = 1; wanted <= claimBatch; wanted++) {
          int size = QueuePoller.claimSize(wanted, concurrency, claimBatch);
          assertThat(size)
              .as("wanted %d, concurrency %d, batch %d", wanted, concurrency, claimBatch)
              .isBetween(1, wanted);
          assertThat(size).as("wanted %d", wanted).isGreaterThanOrEqualTo((int)
              Math.ceil(0.84 * wanted));
          if (wanted == claimBatch || wanted == concurrency) {
            assertThat(size).isEqualTo(wanted);
          } else if (size != concurrency) {
            assertThat(grid).as("wanted %d", wanted).contains(size);
            assertThat(grid.higher(size))
                .as("the largest grid size not above %d", wanted)
                .isGreaterThan(wanted);
          }
        }
      }
    }
  }

  @Test
  void aWorkerOfTenLanesAndBatchesOfAThousandClaimsInThirtySixSizes() {
    TreeSet<Integer> sizes = new TreeSet<>();
    for (int wanted = 1; wanted <= 1_000; wanted++) {
      sizes.add(QueuePoller.claimSize(wanted, 10, 1_000));
    }
    assertThat(sizes)
        .containsExactly(
            1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16, 19, 23, 27, 32, 38, 45, 54, 64, 76, 91, 108,
            128, 152, 181, 215, 256, 304, 362, 431, 512, 609, 724, 861, 1_000);
  }
}
