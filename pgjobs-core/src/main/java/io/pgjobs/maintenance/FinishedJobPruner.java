package io.pgjobs.maintenance;

import io.pgjobs.store.WorkerStore;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes finished jobs (and their idempotency keys) older than the retention period, then the key rows of
 * unique jobs with finished states that hold nothing any more (V18__unique_states.sql), in bounded
 * batches so a large backlog never becomes one long transaction.
 */
final class FinishedJobPruner implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(FinishedJobPruner.class);
  private static final int BATCH = 10_000;
  private static final int MAX_BATCHES_PER_PASS = 50;
  /**
   * How long after its period ended a unique key row is kept: an enqueue whose transaction began in the
   * period computes that period's key, and must still find the row.
   */
  static final Duration UNIQUE_KEY_GRACE = Duration.ofMinutes(10);

  private final WorkerStore store;
  private final Duration retention;
  private final Duration interval;

  FinishedJobPruner(WorkerStore store, Duration retention, Duration interval) {
    this.store = store;
    this.retention = retention;
    this.interval = interval;
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
    long total = 0;
    for (int i = 0; i < MAX_BATCHES_PER_PASS; i++) {
      long deleted = store.pruneFinished(retention, BATCH);
      total += deleted;
      if (deleted < BATCH) {
        break;
      }
    }
    if (total > 0) {
      log.info("pruned {} finished jobs older than {}", total, retention);
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
}
