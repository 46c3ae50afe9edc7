package io.pgjobs.store;

import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.Callable;

/**
 * A deadline for the statements a thread runs: every statement the stores prepare while one is set gets a
 * JDBC query timeout of the whole seconds left (rounded down, as JDBC counts whole seconds; at least 1), so
 * PostgreSQL cancels it no later than the deadline, or within a second of it when less than a second is left.
 * pgjdbc sends the cancel on a connection of its own and changes no session setting, so the connection goes
 * back to its pool as it came. The public face is {@code io.pgjobs.SqlDeadline}; the HTTP API sets one per request, equal to its request timeout. Rounding down
 * matters: the cancel must come before the request thread gives up on the handler, since a statement whose
 * thread was interrupted is closed and its pending cancel dropped with it.
 */
public final class StatementDeadline {
  private static final ThreadLocal<Long> DEADLINE = new ThreadLocal<>();

  private StatementDeadline() {}

  /** Runs {@code work} with statements cancelled once {@code timeout} has passed from now. */
  public static <T> T call(Duration timeout, Callable<T> work) throws Exception {
    Long previous = DEADLINE.get();
    long deadline = System.nanoTime() + timeout.toNanos();
    DEADLINE.set(previous == null ? deadline : Math.min(previous, deadline));
    try {
      return work.call();
    } finally {
      if (previous == null) {
        DEADLINE.remove();
      } else {
        DEADLINE.set(previous);
      }
    }
  }

  /** The query timeout in seconds a statement prepared now gets: 0 (none) without a deadline, else at least 1. */
  static int secondsLeft() {
    Long deadline = DEADLINE.get();
    if (deadline == null) {
      return 0;
    }
    long nanos = deadline - System.nanoTime();
    long seconds = nanos / 1_000_000_000L;
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, seconds));
  }

  /** Gives {@code statement} the time left, if a deadline is set; returns it. */
  static <S extends Statement> S apply(S statement) throws SQLException {
    int seconds = secondsLeft();
    if (seconds > 0) {
      statement.setQueryTimeout(seconds);
    }
    return statement;
  }
}
