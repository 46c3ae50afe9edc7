package io.pgjobs.maintenance;

import io.pgjobs.store.LimitsStore;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives waiting jobs of partitioned queues that have no partition key the one their queue's rule gives
 * them: jobs enqueued by a client that had not read the rule yet (clients re-read it every second), by an
 * older pgjobs, or by plain SQL. The limited claim visits only keyed partitions, so such a job would wait
 * until this keys it. Also prunes rate state whose next start is long past. Runs on the leader every second.
 */
final class PartitionKeyer implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(PartitionKeyer.class);
  private static final int BATCH = 1_000;

  private final LimitsStore store;

  PartitionKeyer(LimitsStore store) {
    this.store = store;
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
      keyed = store.keyUnkeyed(BATCH);
      if (keyed > 0) {
        log.debug("gave {} waiting jobs of partitioned queues their partition", keyed);
      }
    } while (keyed >= BATCH);
  }
}
