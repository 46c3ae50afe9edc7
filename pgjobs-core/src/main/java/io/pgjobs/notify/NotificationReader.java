package io.pgjobs.notify;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.SocketTimeoutException;
import java.sql.Connection;
import java.sql.SQLException;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.Notification;
import org.postgresql.core.PGStream;
import org.postgresql.core.QueryExecutor;
import org.postgresql.core.QueryExecutorBase;
import org.postgresql.util.PSQLException;
import org.postgresql.util.PSQLState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Waits for the notifications of a LISTENing pgJDBC connection and returns each as soon as it arrives.
 *
 * <p><b>Why not just {@code PGConnection.getNotifications(timeout)}.</b> pgJDBC (42.7.14) ends every
 * call that received something by asking {@code PGStream.hasMessagePending()} whether more is waiting;
 * with nothing buffered, that sets a 1 ms socket timeout and reads, and since a timed-out read is not
 * remembered, it waits that millisecond every time. Every notification therefore reached pgjobs about
 * 1.1 ms after it had arrived: a third of an idle worker's pickup (W4, docs/bench-journal/issue-15-part-3.md,
 * "Notifications read as they arrive"), and a cap of about 900 notification batches a second for the
 * listener thread.
 *
 * <p><b>What this does instead.</b> It waits for the first byte of the next message itself (a
 * {@code peekChar} under the caller's timeout, which returns as soon as a byte is there), and when that
 * message is a NotificationResponse (protocol 3: {@code 'A'}, length, sender's pid, channel, payload)
 * reads it with the driver's own stream primitives and returns it at once; it never waits for a second
 * message. Any other message (an error as the server ends the session, a notice) is left to the driver:
 * {@code getNotifications} reads it as before and throws or records it. Notifications the driver read
 * while running a statement on this connection (the listener runs claims on it) are taken from its
 * queue first, so none is lost or reordered.
 *
 * <p>The driver's stream is reached through its internals ({@code QueryExecutorBase.pgStream}, by
 * reflection). Where that is not possible (another driver version, a module system that does not open
 * it, a connection that does not unwrap to pgJDBC's {@link BaseConnection}) the reader falls back to
 * {@code getNotifications(timeout)} and logs so once; {@link #isDirect()} says which is in use. Only the
 * thread that owns the LISTEN connection may call it, and nothing else may use the connection
 * meanwhile (the driver's own lock is not taken).
 */
final class NotificationReader {
  private static final Logger log = LoggerFactory.getLogger(NotificationReader.class);
  private static final PGNotification[] NONE = new PGNotification[0];
  /** Protocol 3 message type of NotificationResponse. */
  private static final int NOTIFICATION_RESPONSE = 'A';

  private static final Field PG_STREAM = pgStreamField();
  private static volatile boolean fallbackLogged;

  private final PGConnection connection;
  /** Null when falling back to getNotifications. */
  private final QueryExecutor executor;

  private final PGStream stream;

  private NotificationReader(PGConnection connection, QueryExecutor executor, PGStream stream) {
    this.connection = connection;
    this.executor = executor;
    this.stream = stream;
  }

  /** A reader for {@code connection} (a pgJDBC connection, or a pool's proxy of one). */
  public static NotificationReader of(Connection connection) throws SQLException {
    PGConnection pg = connection.unwrap(PGConnection.class);
    String whyNot;
    if (PG_STREAM == null) {
      whyNot = "pgJDBC's QueryExecutorBase.pgStream is not accessible";
    } else if (!connection.isWrapperFor(BaseConnection.class)) {
      whyNot = "the connection does not unwrap to pgJDBC's BaseConnection";
    } else {
      QueryExecutor executor = connection.unwrap(BaseConnection.class).getQueryExecutor();
      if (executor instanceof QueryExecutorBase) {
        try {
          return new NotificationReader(pg, executor, (PGStream) PG_STREAM.get(executor));
        } catch (IllegalAccessException | RuntimeException e) {
          whyNot = "reading pgJDBC's stream failed: " + e;
        }
      } else {
        whyNot = "pgJDBC's query executor is a " + executor.getClass().getName();
      }
    }
    if (!fallbackLogged) {
      fallbackLogged = true;
      log.info(
          "notifications are read with getNotifications(timeout), which adds about 1 ms to each ({})",
          whyNot);
    }
    return throughDriver(connection);
  }

  /** A reader that uses {@code getNotifications(timeout)} (the fallback of {@link #of}; tests use it too). */
  static NotificationReader throughDriver(Connection connection) throws SQLException {
    return new NotificationReader(connection.unwrap(PGConnection.class), null, null);
  }

  private static Field pgStreamField() {
    try {
      Field f = QueryExecutorBase.class.getDeclaredField("pgStream");
      f.setAccessible(true);
      return PGStream.class.isAssignableFrom(f.getType()) ? f : null;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  /** True if notifications are read directly; false if through {@code getNotifications(timeout)}. */
  public boolean isDirect() {
    return stream != null;
  }

  /**
   * The notifications that have arrived, waiting up to {@code timeoutMillis} (&gt; 0) for one if none
   * has; empty if none came in time. Returns as soon as it has one: call again for the next.
   *
   * @throws SQLException if the connection failed or the server sent an error (the session ended)
   */
  public PGNotification[] await(int timeoutMillis) throws SQLException {
    if (timeoutMillis <= 0) {
      throw new IllegalArgumentException("timeoutMillis must be > 0, was " + timeoutMillis);
    }
    if (stream == null) {
      PGNotification[] got = connection.getNotifications(timeoutMillis);
      return got == null ? NONE : got;
    }
    PGNotification[] queued = executor.getNotifications(); // read by the driver during a statement
    if (queued != null && queued.length > 0) {
      return queued;
    }
    try {
      if (!firstByteWithin(timeoutMillis)) {
        return NONE;
      }
      if (stream.peekChar() != NOTIFICATION_RESPONSE) {
        // An error, a notice or a parameter change: the driver reads it (and throws, for an error).
        PGNotification[] got = connection.getNotifications(1);
        return got == null ? NONE : got;
      }
      return new PGNotification[] {readNotification()};
    } catch (IOException e) {
      throw new PSQLException(
          "reading a notification failed: " + e.getMessage(), PSQLState.CONNECTION_FAILURE, e);
    }
  }

  /** Waits for the next message's first byte under {@code timeoutMillis}; false if none came. */
  private boolean firstByteWithin(int timeoutMillis) throws IOException {
    int saved = stream.getNetworkTimeout();
    stream.setNetworkTimeout(timeoutMillis);
    try {
      stream.peekChar();
      return true;
    } catch (SocketTimeoutException e) {
      return false;
    } finally {
      stream.setNetworkTimeout(saved);
    }
  }

  /** Reads one NotificationResponse, as pgJDBC's QueryExecutorImpl.receiveAsyncNotify does. */
  private PGNotification readNotification() throws IOException {
    stream.receiveChar(); // 'A'
    stream.receiveInteger4(); // length of the rest, which the strings' terminators delimit
    int pid = stream.receiveInteger4();
    String channel = stream.receiveCanonicalString();
    String payload = stream.receiveString();
    return new Notification(channel, pid, payload);
  }
}
