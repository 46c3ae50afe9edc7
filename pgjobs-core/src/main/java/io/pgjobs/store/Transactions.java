package io.pgjobs.store;

import java.sql.Connection;
import java.sql.SQLException;

/** A store's own transactions, for work of several statements on a connection from the data source. */
final class Transactions {
  private Transactions() {}

  /**
   * Runs {@code work} on {@code c} in a transaction and commits it, then restores the auto-commit mode.
   * On failure the transaction is rolled back and the failure itself is thrown: a rollback or reset that
   * fails too (on a lost connection both do; HikariCP's say "Connection is closed" once it evicted the
   * connection) is attached to it as suppressed, never thrown in its place.
   */
  static void inTransaction(Connection c, SqlWork work) throws SQLException {
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(false);
    try {
      work.run();
      c.commit();
    } catch (Throwable e) {
      try {
        c.rollback();
      } catch (SQLException | RuntimeException rollback) {
        e.addSuppressed(rollback);
      }
      try {
        c.setAutoCommit(autoCommit);
      } catch (SQLException | RuntimeException reset) {
        e.addSuppressed(reset);
      }
      throw e;
    }
    try {
      c.setAutoCommit(autoCommit);
    } catch (SQLException e) {
      // Committed: the work is done. Only a broken connection fails the reset (and its pool saw it
      // fail, through the proxy); reporting a failure now would make the caller do the work again.
    }
  }

  @FunctionalInterface
  interface SqlWork {
    void run() throws SQLException;
  }
}
