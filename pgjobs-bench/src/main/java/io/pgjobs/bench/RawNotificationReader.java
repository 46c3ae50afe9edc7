package io.pgjobs.bench;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.SocketTimeoutException;
import java.sql.Connection;
import java.sql.SQLException;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.PGStream;
import org.postgresql.core.QueryExecutor;
import org.postgresql.core.QueryExecutorBase;

/**
 * The raw-SQL reference's wait for a notification: returns as soon as one has arrived. It is the
 * reference's own, not pgjobs' (the reference must not depend on pgjobs), and the same technique: pgJDBC's
 * {@code getNotifications(timeout)} waits about 1 ms after every notification it receives (it asks
 * whether more is pending with a 1 ms socket timeout), which would put that millisecond into the floor
 * W4 compares pgjobs to. So this waits for the first byte of the next message on the driver's stream
 * (reached by reflection; the bench fails if it cannot be) and, when that message is a NotificationResponse
 * ({@code 'A'}), reads it with the driver's stream primitives; any other message is left to the driver.
 * Only the thread that owns the connection may call it.
 */
final class RawNotificationReader {
  private static final int NOTIFICATION_RESPONSE = 'A';

  private final PGConnection connection;
  private final QueryExecutor executor;
  private final PGStream stream;

  private RawNotificationReader(PGConnection connection, QueryExecutor executor, PGStream stream) {
    this.connection = connection;
    this.executor = executor;
    this.stream = stream;
  }

  /** A reader for {@code connection} (pgJDBC's, or a pool's proxy of one). */
  static RawNotificationReader of(Connection connection) throws SQLException {
    QueryExecutor executor = connection.unwrap(BaseConnection.class).getQueryExecutor();
    try {
      Field f = QueryExecutorBase.class.getDeclaredField("pgStream");
      f.setAccessible(true);
      return new RawNotificationReader(
          connection.unwrap(PGConnection.class), executor, (PGStream) f.get(executor));
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new IllegalStateException("the reference cannot reach pgJDBC's stream: " + e, e);
    }
  }

  /**
   * True once a notification has arrived, waiting up to {@code timeoutMillis} (&gt; 0); false if none came
   * in time.
   */
  boolean await(int timeoutMillis) throws SQLException {
    PGNotification[] queued = executor.getNotifications(); // read by the driver during a statement
    if (queued != null && queued.length > 0) {
      return true;
    }
    try {
      int saved = stream.getNetworkTimeout();
      stream.setNetworkTimeout(timeoutMillis);
      try {
        stream.peekChar();
      } catch (SocketTimeoutException e) {
        return false;
      } finally {
        stream.setNetworkTimeout(saved);
      }
      if (stream.peekChar() != NOTIFICATION_RESPONSE) {
        PGNotification[] got = connection.getNotifications(1); // an error or a notice: the driver's
        return got != null && got.length > 0;
      }
      // NotificationResponse: 'A', length, sender's pid, channel, payload.
      stream.receiveChar();
      stream.receiveInteger4();
      stream.receiveInteger4();
      stream.receiveCanonicalString();
      stream.receiveString();
      return true;
    } catch (IOException e) {
      throw new SQLException("reading a notification failed: " + e.getMessage(), "08006", e);
    }
  }
}
