package io.pgjobs.maintenance;

import java.sql.SQLException;
import java.time.Duration;

/** One duty of the maintenance leader, run every {@link #interval()}. */
interface MaintenanceTask {
  /** A short name for logs. */
  String name();

  /** How often it runs. */
  Duration interval();

  /** One pass. */
  void run() throws SQLException;
}
