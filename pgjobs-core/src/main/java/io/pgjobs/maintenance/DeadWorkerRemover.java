package io.pgjobs.maintenance;

import io.pgjobs.store.WorkerStore;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Deletes the rows of workers that stopped heartbeating without deregistering (killed processes). */
final class DeadWorkerRemover implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(DeadWorkerRemover.class);

  private final WorkerStore store;
  private final Duration staleThreshold;
  private final Duration interval;

  DeadWorkerRemover(WorkerStore store, Duration staleThreshold, Duration interval) {
    this.store = store;
    this.staleThreshold = staleThreshold;
    this.interval = interval;
  }

  @Override
  public String name() {
    return "remove-dead-workers";
  }

  @Override
  public Duration interval() {
    return interval;
  }

  @Override
  public void run() throws SQLException {
    int removed = store.removeDeadWorkers(staleThreshold);
    if (removed > 0) {
      log.info("removed {} workers silent for more than {}", removed, staleThreshold);
    }
  }
}
