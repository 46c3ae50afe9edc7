package io.pgjobs.worker;

import io.pgjobs.store.AutoCommitDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;

/**
 * Where the heartbeat gets its connection, for the worker's whole life and again after each failure.
 *
 * <p>The heartbeat must never wait for the handlers' pool: handlers that hold every connection for longer
 * than the dead-worker threshold would get their own worker presumed dead (HikariCP waits 30 s for a
 * connection by default; the threshold is 20 s). So when the data source is a HikariCP pool configured by
 * URL or by a data source, the heartbeat opens a connection of its own with the pool's settings, outside
 * the pool. Any other data source is borrowed from with a deadline: a borrow that takes longer fails the
 * beat (the worker fences itself in time, see {@link WorkerHeartbeat}), and the connection it brings later
 * serves the next beat.
 */
abstract class LivenessConnector {
  /** HikariCP is an optional dependency: {@link HikariDirect} is loaded only when it is there. */
  private static final boolean HIKARI_PRESENT = hikariPresent();

  /** A connection for the heartbeat, within {@code wait}. */
  abstract Connection connect(Duration wait) throws SQLException;

  /** What it connects through, for the log. */
  abstract String describe();

  private static boolean hikariPresent() {
    try {
      Class.forName(
          "com.zaxxer.hikari.HikariDataSource", false, LivenessConnector.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** Drops a borrow still under way (its connection is closed when it arrives). */
  void close() {}

  static LivenessConnector of(DataSource dataSource) {
    DataSource pool = AutoCommitDataSource.unwrapped(dataSource);
    if (HIKARI_PRESENT) {
      LivenessConnector direct = HikariDirect.of(pool);
      if (direct != null) {
        return direct;
      }
    }
    return new BoundedBorrow(AutoCommitDataSource.of(dataSource));
  }

  /** A connection of its own, opened with a HikariCP pool's settings (the class is optional at run time). */
  static final class HikariDirect extends LivenessConnector {
    private final com.zaxxer.hikari.HikariDataSource pool;

    private HikariDirect(com.zaxxer.hikari.HikariDataSource pool) {
      this.pool = pool;
    }

    /** Null if {@code dataSource} is not a HikariCP pool whose settings can open a connection directly. */
    static LivenessConnector of(DataSource dataSource) {
      if (dataSource instanceof com.zaxxer.hikari.HikariDataSource pool
          && (pool.getJdbcUrl() != null || pool.getDataSource() != null)) {
        return new HikariDirect(pool);
      }
      return null;
    }

    @Override
    Connection connect(Duration wait) throws SQLException {
      Connection c;
      if (pool.getDataSource() != null) {
        c = pool.getUsername() != null
            ? pool.getDataSource().getConnection(pool.getUsername(), pool.getPassword())
            : pool.getDataSource().getConnection();
      } else {
        Properties properties = new Properties();
        properties.putAll(pool.getDataSourceProperties());
        if (pool.getUsername() != null) {
          properties.setProperty("user", pool.getUsername());
        }
        if (pool.getPassword() != null) {
          properties.setProperty("password", pool.getPassword());
        }
        // The connect itself is bounded: a server that does not answer must fail the beat, not hang
        // it.
        properties.putIfAbsent("connectTimeout", Long.toString(Math.max(1, wait.toSeconds())));
        c = DriverManager.getConnection(pool.getJdbcUrl(), properties);
      }
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      return c;
    }

    @Override
    String describe() {
      return "a connection of its own, outside pool " + pool.getPoolName();
    }
  }

  /** Borrows from the pool, waiting at most the beat's deadline. */
  static final class BoundedBorrow extends LivenessConnector {
    private final DataSource dataSource;
    private CompletableFuture<Connection> pending;

    BoundedBorrow(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    @Override
    synchronized Connection connect(Duration wait) throws SQLException {
      if (pending == null) {
        pending = new CompletableFuture<>();
        CompletableFuture<Connection> borrow = pending;
        Thread.ofVirtual().name("pgjobs-heartbeat-borrow").start(() -> {
          try {
            borrow.complete(dataSource.getConnection());
          } catch (Throwable e) {
            borrow.completeExceptionally(e);
          }
        });
      }
      try {
        Connection c = pending.get(wait.toMillis(), TimeUnit.MILLISECONDS);
        pending = null;
        return c;
      } catch (TimeoutException e) {
        throw new SQLTransientConnectionException("no connection from the pool within "
            + wait.toMillis() + " ms (handlers may hold them all)");
      } catch (ExecutionException e) {
        pending = null;
        if (e.getCause() instanceof SQLException sql) {
          throw sql;
        }
        throw new SQLException(e.getCause().getMessage(), e.getCause());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SQLException("interrupted while waiting for a connection", e);
      }
    }

    @Override
    synchronized void close() {
      if (pending != null) {
        pending.thenAccept(c -> {
          try {
            c.close();
          } catch (SQLException ignored) {
            // going back to a pool that closes
          }
        });
        pending = null;
      }
    }

    @Override
    String describe() {
      return "a connection borrowed from the worker's data source, waited for at most one beat";
    }
  }
}
