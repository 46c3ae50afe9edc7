package io.pgjobs.notify;

import io.pgjobs.replication.DatabaseRole;
import io.pgjobs.service.BackgroundService;
import io.pgjobs.store.AutoCommitDataSource;
import io.pgjobs.store.BrokenConnections;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds one connection that LISTENs on pgjobs' channels (jobs ready, per queue; cancellation, per job)
 * and calls the consumer registered for the channel with each notification's payload. When the connection breaks it reconnects with backoff; after each
 * (re)connect it calls {@code onConnected}, because notifications sent while it was away are lost and
 * the workers should look for work at once.
 *
 * <p>Notifications only make workers faster: a worker that never hears one still polls. They are read
 * with {@link NotificationReader}, which hands each over as it arrives (pgJDBC's own
 * {@code getNotifications} would add a millisecond to every one).
 */
public final class JobNotificationListener implements BackgroundService, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(JobNotificationListener.class);
  private static final int WAIT_MILLIS = 250;
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

  private final DataSource dataSource;
  private final Map<String, Handler> channels;
  private final Runnable onConnected;
  private final Consumer<Connection> readyConnection;
  private volatile boolean closed;
  private volatile boolean listening;
  /** True once a read-only refusal of LISTEN was logged, until LISTEN succeeds (listener thread only). */
  private boolean readOnlyReported;

  private Thread thread;

  /**
   * Handles a notification on the listener's thread, with the listening connection at hand (in
   * auto-commit mode) for a quick statement: answering on the connection that just delivered the
   * notification saves waking another backend. A handler must not keep the connection or change its
   * session state, and should be quick: the next notification waits for it.
   */
  @FunctionalInterface
  public interface Handler {
    /** Handles one notification's payload. */
    void accept(String payload, Connection connection);
  }

  /**
   * @param channels consumer per channel name (plain identifiers), called with each payload
   * @param onConnected called after each successful LISTEN
   */
  public JobNotificationListener(
      DataSource dataSource, Map<String, Consumer<String>> channels, Runnable onConnected) {
    this(dataSource, onConnected, adapt(channels));
  }

  /**
   * @param onConnected called after each successful LISTEN
   * @param channels handler per channel name (plain identifiers), called with each payload and the
   *     listening connection
   */
  public JobNotificationListener(
      DataSource dataSource, Runnable onConnected, Map<String, Handler> channels) {
    this(dataSource, connection -> {}, onConnected, channels);
  }

  /**
   * @param readyConnection called with each new connection, on the listener's thread, before it LISTENs:
   *     it may ready statements on it that handlers will run (it must leave the session, and its auto-commit
   *     mode, as it found them). Until it returns the connection does not listen, so its last statement seen
   *     from other sessions is still the LISTEN, and jobs enqueued meanwhile are found by the poll that
   *     {@code onConnected} starts.
   * @param onConnected called after each successful LISTEN
   * @param channels handler per channel name (plain identifiers), called with each payload and the
   *     listening connection
   */
  public JobNotificationListener(
      DataSource dataSource,
      Consumer<Connection> readyConnection,
      Runnable onConnected,
      Map<String, Handler> channels) {
    for (String channel : channels.keySet()) {
      if (!channel.matches("[a-z_][a-z0-9_]{0,62}")) {
        throw new IllegalArgumentException("invalid channel name '" + channel + "'");
      }
    }
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.channels = Map.copyOf(channels);
    this.onConnected = onConnected;
    this.readyConnection = readyConnection;
  }

  private static Map<String, Handler> adapt(Map<String, Consumer<String>> consumers) {
    Map<String, Handler> handlers = new java.util.HashMap<>();
    consumers.forEach((channel, consumer) ->
        handlers.put(channel, (payload, connection) -> consumer.accept(payload)));
    return handlers;
  }

  /** Starts listening on a thread of its own. */
  @Override
  public synchronized JobNotificationListener start() {
    if (thread == null && !closed) {
      thread = Thread.ofPlatform().daemon().name("pgjobs-listener").start(this::run);
    }
    return this;
  }

  /** Asks the listener to end; its connection is returned when its thread ends. */
  @Override
  public void stop() {
    closed = true;
  }

  /** Waits for the listener's thread to end (and its connection to be returned). */
  @Override
  public boolean awaitStopped(Duration timeout) {
    Thread t;
    synchronized (this) {
      t = thread;
    }
    return BackgroundService.join(t, timeout);
  }

  /** True while a LISTEN connection is up. */
  public boolean isListening() {
    return listening;
  }

  private void run() {
    long backoffMs = 100;
    while (!closed) {
      try (Connection connection = dataSource.getConnection()) {
        readyConnection.accept(connection);
        try (Statement st = connection.createStatement()) {
          for (String channel : channels.keySet()) {
            st.execute("LISTEN " + channel);
          }
        }
        if (!connection.getAutoCommit()) {
          connection.commit();
        }
        listening = true;
        readOnlyReported = false;
        backoffMs = 100;
        onConnected.run();
        NotificationReader reader = NotificationReader.of(connection);
        while (!closed) {
          PGNotification[] notifications;
          try {
            notifications = reader.await(WAIT_MILLIS);
          } catch (SQLException e) {
            // Below the pool's proxy: a dead connection must not go back to the pool for reuse.
            if (BrokenConnections.connectionLost(e)) {
              BrokenConnections.discard(connection, e);
            }
            throw e;
          }
          if (notifications.length > 0) {
            for (PGNotification n : notifications) {
              Handler handler = channels.get(n.getName());
              if (handler != null) {
                handler.accept(n.getParameter(), connection);
              }
            }
          }
        }
        listening = false;
        try (Statement st = connection.createStatement()) {
          // The connection goes back to a pool: it must not keep listening for its next user.
          st.execute("UNLISTEN *");
        }
      } catch (SQLException | RuntimeException e) {
        listening = false;
        if (closed) {
          break;
        }
        if (!DatabaseRole.isReadOnlyError(e)) {
          log.warn(
              "LISTEN {} failed ({}); polling only, reconnecting in {} ms",
              channels.keySet(),
              e.getMessage(),
              backoffMs);
        } else if (!readOnlyReported) {
          // A standby refuses LISTEN until it is promoted: say so once, not at every retry.
          readOnlyReported = true;
          log.warn(
              "LISTEN {} refused: the database is a read-only standby ({}); polling only, trying again every {}"
                  + " ms at most until it is promoted or the database URL reaches the primary",
              channels.keySet(),
              e.getMessage(),
              MAX_BACKOFF.toMillis());
        } else {
          log.debug(
              "LISTEN {} still refused ({}); trying again in {} ms",
              channels.keySet(),
              e.getMessage(),
              backoffMs);
        }
        try {
          Thread.sleep(backoffMs);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          break;
        }
        backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF.toMillis());
      }
    }
  }

  /** Stops listening and returns the connection: {@link #stop()}, then waits up to 5 s. */
  @Override
  public void close() {
    stopAndAwait(Duration.ofSeconds(5));
  }
}
