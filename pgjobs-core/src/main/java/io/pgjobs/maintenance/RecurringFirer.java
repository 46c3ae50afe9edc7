package io.pgjobs.maintenance;

import io.pgjobs.recurring.RecurringStore;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fires the due slots of every active recurring schedule, on the maintenance leader. Exactly once per
 * slot whoever leads: each slot's job has an idempotency key derived from (schedule, slot), and the
 * schedule's last slot moves in the same transaction.
 */
final class RecurringFirer implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(RecurringFirer.class);

  private final RecurringStore store;
  private final Duration interval;
  private final Duration missedAfter;

  RecurringFirer(RecurringStore store, Duration interval, Duration missedAfter) {
    this.store = store;
    this.interval = interval;
    this.missedAfter = missedAfter;
  }

  @Override
  public String name() {
    return "recurring";
  }

  @Override
  public Duration interval() {
    return interval;
  }

  @Override
  public void run() throws SQLException {
    Instant now = Instant.now();
    for (String name : store.active()) {
      try {
        RecurringStore.Fired fired = store.fire(name, now, missedAfter);
        if (fired.skipped() > 0) {
          log.warn("recurring schedule '{}': {} missed slots skipped (older than {}), {} enqueued",
              name, fired.skipped(), missedAfter, fired.enqueued());
        }
      } catch (SQLException | RuntimeException e) {
        log.warn("recurring schedule '{}' could not fire ({}); trying again next pass", name, e.getMessage());
      }
    }
  }
}
