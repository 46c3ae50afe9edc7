package io.pgjobs.maintenance;

import io.pgjobs.store.StatementTimeoutLift;
import io.pgjobs.store.WorkerStore;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Returns the jobs of dead workers to the queue: every job held by a worker whose own row has not been
 * renewed for the dead-worker threshold, and any running job whose own heartbeat is older than the stale
 * threshold. Jobs that had started count the attempt (a {@code worker_lost} error is recorded, and a job
 * with no attempts left is failed); jobs that never started go back as they were. Safe even if the
 * "dead" worker was only cut off: the claim token changes nothing it writes later. Runs continuously on
 * the leader.
 */
final class JobRescuer implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(JobRescuer.class);
  private static final int BATCH = 1_000;

  private final WorkerStore store;
  private final Duration workerDeadAfter;
  private final Duration staleThreshold;
  private final Duration interval;

  JobRescuer(
      WorkerStore store, Duration workerDeadAfter, Duration staleThreshold, Duration interval) {
    this.store = store;
    this.workerDeadAfter = workerDeadAfter;
    this.staleThreshold = staleThreshold;
    this.interval = interval;
  }

  @Override
  public String name() {
    return "rescue";
  }

  @Override
  public Duration interval() {
    return interval;
  }

  @Override
  public void run() throws SQLException {
    WorkerStore.RescueCounts counts;
    do {
      counts = rescueBatch();
      if (counts.total() > 0) {
        log.warn(
            "rescued running jobs no live worker holds (worker or job silent for {} while the server was up,"
                + " or job silent for {}): {} started jobs back to the queue, {} ended, {} never-started jobs"
                + " given back",
            workerDeadAfter,
            staleThreshold,
            counts.requeued(),
            counts.ended(),
            counts.unclaimed());
      }
    } while (counts.total() >= BATCH);
  }

  /**
   * One batch. Ending a job with children ends or unblocks them in the same statement, which can outlast a
   * {@code statement_timeout} of the database or role; cancelled, the batch runs again with the timeout
   * lifted for its own transaction ({@link StatementTimeoutLift}), or it would be cancelled at every pass.
   */
  private WorkerStore.RescueCounts rescueBatch() throws SQLException {
    try {
      return store.rescue(workerDeadAfter, staleThreshold, BATCH);
    } catch (SQLException e) {
      if (!StatementTimeoutLift.isCancel(e)) {
        throw e;
      }
      log.warn(
          "rescue was cancelled ({}): a statement timeout of the database or role? Run again with the"
              + " timeout lifted for that one transaction",
          e.getMessage());
      return StatementTimeoutLift.call(() -> store.rescue(workerDeadAfter, staleThreshold, BATCH));
    }
  }
}
