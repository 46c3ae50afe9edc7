package io.pgjobs.store;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.postgresql.PGStatement;

/**
 * Makes a statement planned afresh at every execution, for the table as it is then and with the values
 * bound, instead of once per connection.
 *
 * <p>Why: pgjdbc server-prepares a statement after its fifth execution on a connection, and PostgreSQL
 * then keeps one <em>generic</em> plan for it, costed with the table's size when it was made. The hot
 * table is nearly empty at times and hundreds of MB at others (a long transaction elsewhere keeps every
 * dead row version). A lookup by id planned while it was small is a sequential scan, and stays one as the
 * table grows, until a vacuum or analyze of the table makes the session plan again — which a long
 * transaction can put off for its whole length (W5 at 5,000 jobs/s: a heartbeat or the clearing of
 * prefetch marks read 6,000–21,000 pages for 2–20 jobs, and lanes waited for it; on a table of 200,000
 * rows the same statement runs as a sequential scan of 3,572 pages in 19.7 ms, planned for the table as
 * it is as three index pages in 0.07 ms, plus 0.3 ms of planning).
 *
 * <p>So every statement of the worker that finds running jobs by id and runs at most a few times a second
 * per worker, or once per job on a path other than success (a heartbeat, the clearing of prefetch marks,
 * a give-back, a retry or failure, rescue), pays its planning each time (0.1–0.3 ms). The claim and the
 * success batches run hundreds of times a second: they stay server-prepared, and the maintenance leader's
 * vacuum and analyze of the hot table keep their plans current (see {@code HotTableVacuum}).
 *
 * <p>The API's lookups and cancellations of one job by id (the dashboard's job page, {@code GET /jobs/{id}},
 * {@code POST /jobs/{id}/cancel}) are planned the same way: rare, and a sequential scan of a table a long
 * transaction has grown to a GB would take them past the request timeout.
 */
final class CustomPlan {
  private CustomPlan() {}

  /** Turns off server-side prepare for {@code statement} (each execution plans anew); returns it. */
  static <S extends PreparedStatement> S apply(S statement) throws SQLException {
    if (statement.isWrapperFor(PGStatement.class)) {
      statement.unwrap(PGStatement.class).setPrepareThreshold(0);
    }
    return statement;
  }
}
