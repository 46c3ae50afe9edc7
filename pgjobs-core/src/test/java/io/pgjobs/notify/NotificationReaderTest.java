package io.pgjobs.notify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.PgJobsTestBase;
import io.pgjobs.store.BrokenConnections;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * {@link NotificationReader} reads notifications itself instead of through pgJDBC's
 * {@code getNotifications(timeout)} (which waits a millisecond after each): it must still deliver every
 * notification, whole and in order, including those the driver read during a statement on the same
 * connection, and end with an error when the server ends the session.
 */
class NotificationReaderTest extends PgJobsTestBase {
  private static final long DEADLINE_NANOS = 30_000_000_000L;

  @Test
  void readsDirectlyOnAPooledConnectionAndOnAPlainOne() throws Exception {
    try (Connection pooled = db.dataSource().getConnection();
        Connection plain = DriverManager.getConnection(db.jdbcUrl())) {
      assertThat(NotificationReader.of(pooled).isDirect())
          .as("through the pool's proxy")
          .isTrue();
      assertThat(NotificationReader.of(plain).isDirect())
          .as("a plain pgJDBC connection")
          .isTrue();
    }
  }

  @Test
  void deliversEveryNotificationWholeAndInOrderWithItsSender() throws Exception {
    deliversEveryNotificationWholeAndInOrder(NotificationReader::of);
  }

  @Test
  void theFallbackThroughTheDriverDeliversThemToo() throws Exception {
    deliversEveryNotificationWholeAndInOrder(NotificationReader::throughDriver);
  }

  private interface ReaderFactory {
    NotificationReader of(Connection c) throws SQLException;
  }

  private void deliversEveryNotificationWholeAndInOrder(ReaderFactory readers) throws Exception {
    // Payloads at the edges: empty, multi-byte UTF-8, the largest PostgreSQL accepts (7,999 bytes),
    // and many in one transaction (they arrive back to back, several per read).
    List<String> sent = new ArrayList<>();
    sent.add("");
    sent.add("é ü 日本 🚀 \" ' \\ , { }");
    sent.add("x".repeat(7_999));
    for (int i = 0; i < 500; i++) {
      sent.add("n" + i);
    }
    try (Connection listening = db.dataSource().getConnection();
        Connection sender = db.dataSource().getConnection()) {
      listen(listening, "reader_a", "reader_b");
      NotificationReader reader = readers.of(listening);
      int senderPid = sender.unwrap(PGConnection.class).getBackendPID();
      sender.setAutoCommit(false);
      try (PreparedStatement ps = sender.prepareStatement("SELECT pg_notify(?, ?)")) {
        for (int i = 0; i < sent.size(); i++) {
          ps.setString(1, i % 2 == 0 ? "reader_a" : "reader_b");
          ps.setString(2, sent.get(i));
          ps.execute();
        }
      }
      sender.commit();

      List<PGNotification> got = receive(reader, sent.size());

      assertThat(got).extracting(PGNotification::getParameter).containsExactlyElementsOf(sent);
      for (int i = 0; i < got.size(); i++) {
        assertThat(got.get(i).getName()).isEqualTo(i % 2 == 0 ? "reader_a" : "reader_b");
        assertThat(got.get(i).getPID()).isEqualTo(senderPid);
      }
      assertThat(got.get(2).getParameter().getBytes(StandardCharsets.UTF_8)).hasSize(7_999);
    }
  }

  @Test
  void aNotificationTheDriverReadDuringAStatementIsReturnedFirst() throws Exception {
    try (Connection listening = db.dataSource().getConnection();
        Connection sender = db.dataSource().getConnection()) {
      listen(listening, "reader_self");
      NotificationReader reader = NotificationReader.of(listening);
      // A session's own notification comes back before its statement's reply, so the driver reads
      // it while running the statement (as it reads those that arrive during a claim on the
      // listener's connection) and keeps it in its queue.
      try (Statement st = listening.createStatement()) {
        st.execute("SELECT pg_notify('reader_self', 'own')");
      }
      try (Statement st = sender.createStatement()) {
        st.execute("SELECT pg_notify('reader_self', 'other')");
      }

      List<PGNotification> got = receive(reader, 2);

      assertThat(got).extracting(PGNotification::getParameter).containsExactly("own", "other");
    }
  }

  @Test
  void returnsNothingWhenNothingArrivesInTime() throws Exception {
    try (Connection listening = db.dataSource().getConnection()) {
      listen(listening, "reader_quiet");
      NotificationReader reader = NotificationReader.of(listening);

      assertThat(reader.await(50)).isEmpty();
      // The wait restored the connection's own timeout: a statement after it still runs.
      try (Statement st = listening.createStatement()) {
        assertThat(st.execute("SELECT 1")).isTrue();
      }
      assertThatThrownBy(() -> reader.await(0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("timeoutMillis must be > 0");
    }
  }

  @Test
  void theSessionEndingEndsTheWaitWithAnError() throws Exception {
    try (Connection listening = DriverManager.getConnection(db.jdbcUrl())) {
      listen(listening, "reader_end");
      NotificationReader reader = NotificationReader.of(listening);
      int pid = listening.unwrap(PGConnection.class).getBackendPID();
      db.execute("SELECT pg_terminate_backend(" + pid + ", 10000)");

      long deadline = System.nanoTime() + DEADLINE_NANOS;
      SQLException error = null;
      while (error == null && System.nanoTime() < deadline) {
        try {
          reader.await(100);
        } catch (SQLException e) {
          error = e;
        }
      }
      assertThat((Throwable) error)
          .as("an error once the server ended the session")
          .isNotNull();
      // The server's FATAL error (57P01), or the closed socket after it (class 08): both mean the
      // connection is lost, so the listener discards it and reconnects.
      assertThat(BrokenConnections.connectionLost(error))
          .as("connection lost: %s", error)
          .isTrue();
    }
  }

  private static void listen(Connection c, String... channels) throws SQLException {
    try (Statement st = c.createStatement()) {
      for (String channel : channels) {
        st.execute("LISTEN " + channel);
      }
    }
  }

  /** Reads until {@code n} notifications have come, or fails at the deadline. */
  private static List<PGNotification> receive(NotificationReader reader, int n)
      throws SQLException {
    List<PGNotification> got = new ArrayList<>();
    long deadline = System.nanoTime() + DEADLINE_NANOS;
    while (got.size() < n && System.nanoTime() < deadline) {
      got.addAll(List.of(reader.await(100)));
    }
    assertThat(got.size()).as("notifications received before the deadline").isEqualTo(n);
    return got;
  }
}
