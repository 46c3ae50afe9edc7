package io.pgjobs.maintenance;

import io.pgjobs.store.WorkerStore;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Returns jobs whose worker stopped heartbeating for longer than the stale threshold to the queue
 * (attempt counted, {@code worker_lost} error recorded), or fails them when they have no attempts left.
 * Runs continuously on the leader, not only at start-up.
 */
final class StaleJobRescuer implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(StaleJobRescuer.class);
  private static final int BATCH = 1_000;

  private final WorkerStore store;
  private final Duration staleThreshold;
  private final Duration interval;

  StaleJobRescuer(WorkerStore store, Duration staleThreshold, Duration interval) {
    this.store = store;
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
      counts = store.rescueStale(staleThreshold, BATCH);
      if (counts.requeued() + counts.ended() > 0) {
        log.warn("rescued jobs of silent workers (no heartbeat for {}): {} back to the queue, {} ended",
            staleThreshold, counts.requeued(), counts.ended());
      }
    } while (counts.requeued() + counts.ended() >= BATCH);
  }
}
