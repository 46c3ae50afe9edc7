package io.pgjobs.store;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * What to do with a pooled connection that died under a call made on the driver's own connection
 * ({@code unwrap}): COPY, and waiting for notifications. Such calls run below the pool's proxy, so the
 * pool never sees their failure; and the driver may leave the connection open after it: a pool would
 * take it back and hand it out again (HikariCP does not validate a connection used within the last
 * 500 ms), and its next user would fail the same way.
 */
public final class BrokenConnections {
  private BrokenConnections() {}

  /**
   * True if {@code failure} (or a cause, chained or suppressed exception of it) says the session is
   * gone: SQLState class 08 (connection exception), or 57P01 to 57P03 (terminated by an administrator,
   * crash or shutdown of the server, which the driver reports before the socket closes).
   */
  public static boolean connectionLost(Throwable failure) {
    return SqlStates.anyInChain(
        failure,
        state -> state.startsWith("08")
            || state.equals("57P01")
            || state.equals("57P02")
            || state.equals("57P03"));
  }

  /**
   * Makes sure {@code connection} (the pool's proxy) is not used again: aborts it (the driver closes the
   * socket), then touches it through the proxy, so the driver answers "connection has been closed"
   * (SQLState 08003) and a pool that watches its proxies for connection errors (HikariCP does, for class
   * 08) evicts it at once; another pool finds it closed when it resets or validates it. A failure of the
   * abort is added to {@code failure} as suppressed.
   */
  public static void discard(Connection connection, Throwable failure) {
    try {
      connection.abort(Runnable::run); // this thread: closed before the touch below
    } catch (SQLException | RuntimeException e) {
      failure.addSuppressed(e);
    }
    try {
      // clearWarnings, not getAutoCommit: HikariCP answers the latter from its own state once the
      // auto-commit mode was set, without asking the driver.
      connection.clearWarnings();
    } catch (SQLException expected) {
      // The "closed" error the pool had to see; nothing to report.
    }
  }
}
