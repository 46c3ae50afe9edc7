package io.pgjobs.replication;

import io.pgjobs.store.SqlStates;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;

/**
 * Whether the database pgjobs is connected to accepts writes. A standby in recovery (or a server with
 * {@code default_transaction_read_only = on}) accepts connections and answers queries, so a plain
 * validity check calls it healthy while every enqueue, claim and heartbeat fails with SQLState
 * {@value #READ_ONLY_SQL_STATE}. Readiness checks use {@link #readOnlyReason(Connection)}; error handling
 * uses {@link #isReadOnlyError(Throwable)}.
 */
public final class DatabaseRole {
  /** SQLState {@code read_only_sql_transaction}: a write in a read-only transaction or on a standby. */
  public static final String READ_ONLY_SQL_STATE = "25006";

  private DatabaseRole() {}

  /**
   * Why {@code connection}'s server takes no writes, or empty when it does. The reason names the cause
   * (a standby in recovery, or read-only sessions) and what ends it.
   *
   * @throws SQLException if the query fails (the database is away)
   */
  public static Optional<String> readOnlyReason(Connection connection) throws SQLException {
    try (Statement st = connection.createStatement();
        ResultSet rs = st.executeQuery(ReplicationSql.ROLE)) {
      rs.next();
      if (rs.getBoolean("in_recovery")) {
        return Optional.of(
            "the database server is a read-only standby in recovery (pg_is_in_recovery() is true):"
                + " nothing can be enqueued, claimed or completed until it is promoted, or until the database URL"
                + " reaches the primary (list every host with target_session_attrs=read-write)");
      }
      if (rs.getBoolean("read_only")) {
        return Optional.of("the database session is read-only (transaction_read_only is on, as"
            + " default_transaction_read_only sets it): nothing can be enqueued, claimed or completed until it is"
            + " turned off");
      }
      return Optional.empty();
    }
  }

  /**
   * True if {@code failure} (or a cause, chained or suppressed exception of it) is PostgreSQL refusing a
   * write because the server or the transaction is read-only (SQLState {@value #READ_ONLY_SQL_STATE}).
   */
  public static boolean isReadOnlyError(Throwable failure) {
    return SqlStates.anyInChain(failure, READ_ONLY_SQL_STATE::equals);
  }
}
