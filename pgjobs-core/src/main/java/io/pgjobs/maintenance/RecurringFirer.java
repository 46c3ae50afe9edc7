package io.pgjobs.maintenance;

import io.pgjobs.recurring.RecurringStore;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fires the due slots of every active recurring schedule, on the maintenance leader. Exactly once per
 * slot whoever leads: each slot's job has an idempotency key derived from (schedule, slot), and the
 * schedule's last slot moves in the same transaction. Which slots are due, and which were missed, is
 * decided by the database's clock, read in that transaction ({@link RecurringStore#fire(String, Duration)}):
 * with the leader's own clock, one running ahead fired future slots early and skipped due ones as missed.
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
    for (String name : store.active()) {
      try {
        RecurringStore.Fired fired = store.fire(name, missedAfter);
        if (fired.skipped() > 0) {
          log.warn(
              "recurring schedule '{}': {}{} missed slots skipped (older than {}), {} enqueued",
              name,
              fired.moreSkipped() ? "more than " : "",
              fired.skipped(),
              missedAfter,
              fired.enqueued());
        }
      } catch (SQLException | RuntimeException e) {
        log.warn(
            "recurring schedule '{}' could not fire ({}); trying again next pass",
            name,
            e.getMessage());
      }
    }
  }
}
