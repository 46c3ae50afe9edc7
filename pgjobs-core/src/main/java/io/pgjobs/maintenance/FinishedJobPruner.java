package io.pgjobs.maintenance;

import io.pgjobs.store.WorkerStore;
import io.pgjobs.store.WorkerStore.DroppedPartition;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the history ({@code finished_jobs}, partitioned by the time a job finished:
 * V7__partitioned_history.sql) within its retention, and the key rows of unique jobs with finished states
 * that hold nothing any more (V18__unique_states.sql). Each pass:
 *
 * <ol>
 *   <li>makes the history's partitions ahead of time, each {@link #partitionWidth} wide;
 *   <li>counts each partition {@link #COUNT_GRACE} past its upper bound, once, for the queue overview;
 *   <li>drops every partition whose upper bound is past the retention, whole: no dead tuple is left and
 *       the cost does not grow with the history (a job is kept at least the retention and at most the
 *       retention plus one partition's width);
 *   <li>deletes, in bounded batches, the rows past retention of the default partition: those written
 *       when no partition covered their time (maintenance had not run for longer than it makes ahead).
 * </ol>
 *
 * A partition statement waits at most 200 ms for its lock on the table; one that times out is tried
 * again at the next pass, and the rows meanwhile go to the partitions that exist or to the default one.
 */
final class FinishedJobPruner implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(FinishedJobPruner.class);
  private static final int BATCH = 10_000;
  private static final int MAX_BATCHES_PER_PASS = 50;
  /** SQLState of a lock not granted within lock_timeout. */
  private static final String LOCK_NOT_AVAILABLE = "55P03";
  /**
   * How long after its period ended a unique key row is kept: an enqueue whose transaction began in the
   * period computes that period's key, and must still find the row.
   */
  static final Duration UNIQUE_KEY_GRACE = Duration.ofMinutes(10);

  /** The widths a history partition may have, narrowest first. */
  private static final List<Duration> WIDTHS = List.of(
      Duration.ofMinutes(1),
      Duration.ofMinutes(5),
      Duration.ofMinutes(15),
      Duration.ofHours(1),
      Duration.ofHours(6),
      Duration.ofDays(1),
      Duration.ofDays(7));

  /**
   * How long after its upper bound a partition is counted for the queue overview: a transaction that
   * began before the bound may still write into it until it commits.
   */
  static final Duration COUNT_GRACE = Duration.ofMinutes(10);

  /** At most this many partitions are made ahead, whatever the prune interval. */
  private static final int MAX_AHEAD = 48;

  private final WorkerStore store;
  private final Duration retention;
  private final Duration interval;
  private final Duration width;
  private final Duration ahead;

  FinishedJobPruner(WorkerStore store, Duration retention, Duration interval) {
    this.store = store;
    this.retention = retention;
    this.interval = interval;
    this.width = partitionWidth(retention);
    this.ahead = ahead(width, interval);
  }

  /**
   * The width of the history's partitions for a retention: the widest of 1 min, 5 min, 15 min, 1 h, 6 h,
   * 1 day and 7 days that is at most a twelfth of it (1 min below 12 min). So the history has about 12
   * to 24 partitions past the current one (fewer above 84 days), and a job is kept at most about 1/12
   * longer than the retention: 1 h longer at the default 24 h.
   */
  static Duration partitionWidth(Duration retention) {
    Duration twelfth = retention.dividedBy(12);
    Duration chosen = WIDTHS.get(0);
    for (Duration w : WIDTHS) {
      if (w.compareTo(twelfth) <= 0) {
        chosen = w;
      }
    }
    return chosen;
  }

  /**
   * How far ahead partitions are made: three widths, and at least two prune intervals (so a pass missed
   * does not send rows to the default partition), but never more than {@link #MAX_AHEAD} partitions.
   */
  static Duration ahead(Duration width, Duration interval) {
    Duration wanted = width.multipliedBy(3);
    if (interval.multipliedBy(2).compareTo(wanted) > 0) {
      wanted = interval.multipliedBy(2);
    }
    Duration most = width.multipliedBy(MAX_AHEAD);
    return wanted.compareTo(most) > 0 ? most : wanted;
  }

  @Override
  public String name() {
    return "prune";
  }

  @Override
  public Duration interval() {
    return interval;
  }

  @Override
  public void run() throws SQLException {
    partitions();
    long total = 0;
    for (int i = 0; i < MAX_BATCHES_PER_PASS; i++) {
      long deleted = store.pruneDefaultPartition(retention, BATCH);
      total += deleted;
      if (deleted < BATCH) {
        break;
      }
    }
    if (total > 0) {
      log.info(
          "pruned {} finished jobs older than {} from the history's default partition",
          total,
          retention);
    }
    long keys = 0;
    for (int i = 0; i < MAX_BATCHES_PER_PASS; i++) {
      long deleted = store.pruneUniqueKeys(UNIQUE_KEY_GRACE, BATCH);
      keys += deleted;
      if (deleted < BATCH) {
        break;
      }
    }
    if (keys > 0) {
      log.info("pruned {} unique keys that hold nothing any more", keys);
    }
  }

  /** Makes the partitions ahead, then drops those past retention; a lock not granted waits a pass. */
  private void partitions() throws SQLException {
    try {
      int leftovers = store.dropDetachedHistoryTables();
      if (leftovers > 0) {
        log.info("dropped {} history partitions detached by an earlier pass", leftovers);
      }
      int made = store.ensureHistoryPartitions(width, ahead);
      if (made > 0) {
        log.debug("made {} history partitions {} wide", made, width);
      }
      int counted = store.countHistoryPartitions(COUNT_GRACE);
      if (counted > 0) {
        log.debug("counted {} closed history partitions for the queue overview", counted);
      }
      for (int i = 0; i < MAX_BATCHES_PER_PASS; i++) {
        Optional<DroppedPartition> dropped = store.dropHistoryPartition(retention);
        if (dropped.isEmpty()) {
          break;
        }
        log.info(
            "dropped history partition {} (about {} finished jobs), every job in it older than {}",
            dropped.get().name(),
            dropped.get().approximateRows(),
            retention);
      }
    } catch (SQLException e) {
      if (!LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
        throw e;
      }
      log.info(
          "history partitions: the table's lock was not granted within 200 ms; next pass tries again");
    }
  }
}
