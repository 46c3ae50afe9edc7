package io.pgjobs.maintenance;

import io.pgjobs.store.LimitsStore;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives waiting jobs of partitioned queues that have no partition key the one their queue's rule gives
 * them: jobs enqueued by a client that had not read the rule yet (clients re-read it every second), by an
 * older pgjobs, or by plain SQL. The limited claim visits only keyed partitions, so such a job would wait
 * until this keys it. Also counts in running jobs of limited queues that have no key, and prunes rate
 * state whose next start is long past. Runs on the leader every second.
 *
 * <p>Looking for unkeyed waiting jobs reads every waiting job of the partitioned queues (no index holds
 * the unkeyed ones alone, and one that did would cost every enqueue of every queue): with a backlog of a
 * million jobs, a read of a million rows every second. So it looks every second while it finds some, and
 * for a while after a partitioned queue's limits changed (clients learn a new rule within a second); when
 * a look finds none, the next waits twice as long, up to {@link #MAX_GAP}. A job a client enqueues
 * without its key in a quiet spell (an older pgjobs, plain SQL) is keyed within that gap.
 */
final class PartitionKeyer implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(PartitionKeyer.class);
  private static final int BATCH = 1_000;
  /** The longest gap between two looks for unkeyed waiting jobs. */
  static final Duration MAX_GAP = Duration.ofMinutes(1);
  /** How long after a partitioned queue's limits changed the look is made every second. */
  private static final Duration AFTER_A_CHANGE = Duration.ofSeconds(10);

  private final LimitsStore store;
  private final Duration afterAChange;
  /** When the next look for unkeyed waiting jobs is due (System.nanoTime()). */
  private long nextLookAt = System.nanoTime();
  /** The gap after the last look. */
  private Duration gap = Duration.ZERO;
  /** When a partitioned queue's limits last changed, as the last run read it. */
  private Instant rulesSeen;
  /** Until when (System.nanoTime()) every run looks, after a change of the rules. */
  private long everyRunUntil = System.nanoTime();
  /** Looks for unkeyed waiting jobs made so far (for tests). */
  private long looks;

  PartitionKeyer(LimitsStore store) {
    this(store, AFTER_A_CHANGE);
  }

  /** With {@code afterAChange} instead of {@link #AFTER_A_CHANGE} (tests: zero). */
  PartitionKeyer(LimitsStore store, Duration afterAChange) {
    this.store = store;
    this.afterAChange = afterAChange;
  }

  @Override
  public String name() {
    return "partition-keys";
  }

  @Override
  public Duration interval() {
    return Duration.ofSeconds(1);
  }

  @Override
  public void run() throws SQLException {
    int keyed;
    do {
      keyed = store.keyUnkeyed(BATCH, this::lookNow);
      if (keyed > 0) {
        log.debug("gave {} waiting jobs of partitioned queues their partition", keyed);
      }
      if (keyed >= 0) {
        looked(keyed > 0);
      }
    } while (keyed >= BATCH);
  }

  /** Whether this run looks for unkeyed waiting jobs, given when the rules last changed. */
  private boolean lookNow(Instant rulesChanged) {
    long now = System.nanoTime();
    if (!Objects.equals(rulesChanged, rulesSeen)) {
      rulesSeen = rulesChanged;
      everyRunUntil = now + afterAChange.toNanos();
      return true;
    }
    return now - nextLookAt >= 0 || now - everyRunUntil < 0;
  }

  private void looked(boolean found) {
    looks++;
    gap = found
        ? interval()
        : Duration.ofNanos(
            Math.min(MAX_GAP.toNanos(), Math.max(interval().toNanos(), gap.toNanos() * 2)));
    // A little short of the gap, so that the run at the gap's end is not a tick late.
    nextLookAt = System.nanoTime() + gap.toNanos() - TimeUnit.MILLISECONDS.toNanos(100);
  }

  /** Looks for unkeyed waiting jobs made so far. */
  long looks() {
    return looks;
  }

  /** The gap until the next look, as the last look set it. */
  Duration gap() {
    return gap;
  }
}
