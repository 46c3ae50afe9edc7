package io.pgjobs.store;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Objects;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The application's data source as pgjobs borrows from it: every connection is handed out in auto-commit
 * mode, whatever the pool's default, and goes back to the pool in the mode it came in.
 *
 * <p>Every statement pgjobs runs on a borrowed connection (an enqueue, a claim, an outcome write, an
 * admin change) is meant to commit by itself, and its multi-statement work commits explicitly
 * ({@link Transactions}). A pool configured with auto-commit off (a common Hibernate tuning, e.g.
 * {@code spring.datasource.hikari.auto-commit=false}) would otherwise leave that work in a transaction
 * that the pool rolls back when the connection returns: an enqueue that answered with an id and stored
 * nothing, a claim undone, a success never recorded.
 *
 * <p>A connection already in auto-commit mode is handed out as it is (the usual case costs one
 * {@code getAutoCommit}, which pgJDBC answers from memory). One that is not is switched and wrapped so
 * that {@code close()} restores its mode before the pool takes it back.
 *
 * <p>Connections the application lends pgjobs for its own transaction ({@code JobClient.enqueue(Connection,
 * …)}) never pass through here: they are the caller's to commit.
 */
public final class AutoCommitDataSource implements DataSource {
  private final DataSource pool;

  private AutoCommitDataSource(DataSource pool) {
    this.pool = pool;
  }

  /** {@code dataSource} as pgjobs borrows from it; the same object if it is wrapped already. */
  public static DataSource of(DataSource dataSource) {
    Objects.requireNonNull(dataSource, "dataSource");
    return dataSource instanceof AutoCommitDataSource
        ? dataSource
        : new AutoCommitDataSource(dataSource);
  }

  /** The application's own data source behind {@code dataSource} (itself if it is not wrapped). */
  public static DataSource unwrapped(DataSource dataSource) {
    return dataSource instanceof AutoCommitDataSource wrapped ? wrapped.pool : dataSource;
  }

  @Override
  public Connection getConnection() throws SQLException {
    return inAutoCommit(pool.getConnection());
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return inAutoCommit(pool.getConnection(username, password));
  }

  private static Connection inAutoCommit(Connection connection) throws SQLException {
    try {
      if (connection.getAutoCommit()) {
        return connection;
      }
      // A connection fresh from a pool has no transaction open, so switching commits nothing.
      connection.setAutoCommit(true);
    } catch (SQLException | RuntimeException e) {
      try {
        connection.close();
      } catch (SQLException | RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
    return ClosingConnection.wrap(new RestoreOnClose(connection));
  }

  /** Restores auto-commit off before the connection goes back to its pool. */
  private static final class RestoreOnClose extends ClosingConnection {
    RestoreOnClose(Connection connection) {
      super(connection);
    }

    @Override
    void onClose(Connection connection) throws SQLException {
      try {
        if (!connection.isClosed()) {
          connection.setAutoCommit(false);
        }
      } catch (SQLException ignored) {
        // A broken connection: the pool discards it whatever its mode.
      } finally {
        connection.close();
      }
    }

    @Override
    String name() {
      return "AutoCommit";
    }
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return pool.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    pool.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    pool.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return pool.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return pool.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return iface.isInstance(this) ? iface.cast(this) : pool.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || pool.isWrapperFor(iface);
  }

  @Override
  public String toString() {
    return "AutoCommit(" + pool + ")";
  }
}
