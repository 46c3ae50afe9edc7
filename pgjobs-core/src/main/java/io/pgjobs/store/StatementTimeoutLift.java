package io.pgjobs.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Outcome writes that must land although the server cancels long statements.
 *
 * <p>A database or role may set {@code statement_timeout} (teams do, against runaway queries). Most of
 * pgjobs's statements are far below any sensible value; an outcome write is not always: a parent's
 * completion unblocks or cancels its children in the same statement (100,000 children: about a second;
 * a million: tens of seconds), and a large success batch can take long on a loaded server. Cancelled, it
 * is rolled back, and sent again it is cancelled again: the job never ends and its children never run.
 * So a write cancelled by a statement timeout is written again in a transaction of its own with the
 * timeout lifted ({@code set_config('statement_timeout', '0', true)}: that transaction only; the session
 * and the pool's connection keep the user's setting).
 *
 * <p>While {@link #call} runs on a thread, {@link #connection} hands that thread such connections: in a
 * transaction with the timeout lifted, committed when closed (so a write's result is returned only once
 * its commit has succeeded; a failed commit is thrown from {@code close()}).
 */
public final class StatementTimeoutLift {
  private static final ThreadLocal<Boolean> LIFTED = new ThreadLocal<>();

  private StatementTimeoutLift() {}

  /** Work that writes with JDBC. */
  @FunctionalInterface
  public interface SqlWork<T> {
    T run() throws SQLException;
  }

  /** Runs {@code write} with every outcome write it makes on this thread free of the statement timeout. */
  public static <T> T call(SqlWork<T> write) throws SQLException {
    Boolean before = LIFTED.get();
    LIFTED.set(Boolean.TRUE);
    try {
      return write.run();
    } finally {
      if (before == null) {
        LIFTED.remove();
      }
    }
  }

  /**
   * True if {@code e} is PostgreSQL's cancel of a statement (SQLState 57014: a statement timeout, or a
   * cancel request), which rolled the statement back.
   */
  public static boolean isCancel(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql && "57014".equals(sql.getSQLState())) {
        return true;
      }
    }
    return false;
  }

  /** A connection from {@code dataSource} for an outcome write: lifted inside {@link #call}, as it is else. */
  static Connection connection(DataSource dataSource) throws SQLException {
    Connection c = dataSource.getConnection();
    if (LIFTED.get() == null) {
      return c;
    }
    try {
      c.setAutoCommit(false);
      try (PreparedStatement ps =
          c.prepareStatement("SELECT set_config('statement_timeout', '0', true)")) {
        ps.execute();
      }
    } catch (SQLException | RuntimeException e) {
      try {
        c.rollback();
        c.setAutoCommit(true);
        c.close();
      } catch (SQLException | RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
    return ClosingConnection.wrap(new CommitOnClose(c));
  }

  /** Commits the lifted transaction when the write closes its connection. */
  private static final class CommitOnClose extends ClosingConnection {
    CommitOnClose(Connection connection) {
      super(connection);
    }

    @Override
    void onClose(Connection connection) throws SQLException {
      try {
        // After a failed statement the transaction is aborted and COMMIT rolls it back: the write's
        // own exception is what the caller sees.
        connection.commit();
      } finally {
        try {
          connection.setAutoCommit(true);
        } catch (SQLException ignored) {
          // a broken connection: the pool discards it
        }
        connection.close();
      }
    }

    @Override
    String name() {
      return "StatementTimeoutLifted";
    }
  }
}
