package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Bulk enqueue when the connection dies under it, by real backend terminations (no mocks): the error
 * reported is the one that broke the enqueue, not the rollback's "Connection is closed" that follows it
 * (which is attached as suppressed); and a connection that died under the COPY is discarded, not handed
 * out again by the pool.
 */
class EnqueueConnectionLossTest extends PgJobsTestBase {
  /** Jobs of this type end their session when their transaction commits (trigger below). */
  private static final JobType<Numbered> KILLED_AT_COMMIT = JobType.of("killed_at_commit", Numbered.class);

  /** Jobs of this type end their session while the COPY stores them (trigger below). */
  private static final JobType<Numbered> KILLED_IN_COPY = JobType.of("killed_in_copy", Numbered.class);

  /** Jobs of this type are refused by the database while the COPY stores them (trigger below). */
  private static final JobType<Numbered> REFUSED_IN_COPY = JobType.of("refused_in_copy", Numbered.class);

  private static final String HIKARI_ALIVE_BYPASS = "com.zaxxer.hikari.aliveBypassWindowMs";

  @BeforeEach
  void killerTriggers() {
    db.execute(
        """
        CREATE OR REPLACE FUNCTION terminate_own_backend() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM pg_terminate_backend(pg_backend_pid());
          PERFORM pg_sleep(30); -- interrupted at once: the session ends with FATAL 57P01
          RETURN NULL;
        END $$""",
        "DROP TRIGGER IF EXISTS killed_at_commit ON pgjobs.jobs",
        "CREATE CONSTRAINT TRIGGER killed_at_commit AFTER INSERT ON pgjobs.jobs DEFERRABLE INITIALLY DEFERRED"
            + " FOR EACH ROW WHEN (NEW.type = 'killed_at_commit') EXECUTE FUNCTION terminate_own_backend()",
        "DROP TRIGGER IF EXISTS killed_in_copy ON pgjobs.jobs",
        "CREATE TRIGGER killed_in_copy AFTER INSERT ON pgjobs.jobs"
            + " FOR EACH ROW WHEN (NEW.type = 'killed_in_copy') EXECUTE FUNCTION terminate_own_backend()",
        """
        CREATE OR REPLACE FUNCTION refuse_job() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          RAISE EXCEPTION 'job type % refused', NEW.type;
        END $$""",
        "DROP TRIGGER IF EXISTS refused_in_copy ON pgjobs.jobs",
        "CREATE TRIGGER refused_in_copy BEFORE INSERT ON pgjobs.jobs"
            + " FOR EACH ROW WHEN (NEW.type = 'refused_in_copy') EXECUTE FUNCTION refuse_job()");
  }

  @Test
  void aCommitCutOffReportsTheServersErrorWithTheRollbackFailureSuppressed() {
    PgJobsException thrown =
        catchThrowableOfType(
            PgJobsException.class,
            () -> client.enqueueAll(KILLED_AT_COMMIT, numbered(3), EnqueueOptions.DEFAULTS));

    // The COPY went through; the COMMIT ran the deferred trigger, which ended the session.
    assertThat(thrown).as("enqueueAll failed").isNotNull();
    SQLException cause = (SQLException) thrown.getCause();
    assertThat(cause.getSQLState()).as("SQLState of the reported error: " + cause).isEqualTo("57P01");
    assertThat(cause.getMessage()).contains("terminating connection due to administrator command");
    assertThat(thrown.getMessage()).doesNotContain("Connection is closed");
    // HikariCP evicted the connection when the COMMIT failed through its proxy; the rollback then failed.
    assertThat(Arrays.stream(cause.getSuppressed()).map(Throwable::getMessage))
        .as("suppressed failures of the rollback and reset")
        .anyMatch(m -> m.contains("Connection is closed"));
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE type = 'killed_at_commit'")).isZero();
    assertThat(client.enqueueAll(NUMBERED, numbered(3), EnqueueOptions.DEFAULTS)).as("next bulk enqueue").hasSize(3);
  }

  @Test
  void aCopyCutOffReportsTheCopyFailureWithTheRollbackFailureSuppressed() {
    PgJobsException thrown =
        catchThrowableOfType(
            PgJobsException.class,
            () -> client.enqueueAll(KILLED_IN_COPY, numbered(3), EnqueueOptions.DEFAULTS));

    assertThat(thrown).as("enqueueAll failed").isNotNull();
    SQLException cause = (SQLException) thrown.getCause();
    // The driver reports the end of the COPY failing on the lost connection (class 08).
    assertThat(cause.getSQLState()).as("SQLState of the reported error: " + cause).startsWith("08");
    assertThat(cause.getMessage()).containsIgnoringCase("copy");
    assertThat(thrown.getMessage()).doesNotContain("Connection is closed");
    assertThat(Arrays.stream(cause.getSuppressed()).map(Throwable::getMessage))
        .as("suppressed failures of the rollback and reset")
        .anyMatch(m -> m.contains("Connection is closed"));
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE type = 'killed_in_copy'")).isZero();
    assertThat(client.enqueueAll(NUMBERED, numbered(3), EnqueueOptions.DEFAULTS)).as("next bulk enqueue").hasSize(3);
  }

  @Test
  void aConnectionKilledWhileIdleInThePoolIsDiscardedWhenItsBulkEnqueueFails() throws SQLException {
    try (HikariDataSource pool = poolHandingOutWithoutValidation()) {
      JobClient producer = JobClient.builder(pool).build();
      terminateBackendOf(pool);

      // The pool hands out the dead connection; the COPY's BEGIN finds it dead, on the driver's own
      // connection (below the pool's proxy).
      PgJobsException first =
          catchThrowableOfType(
              PgJobsException.class, () -> producer.enqueueAll(NUMBERED, numbered(5), EnqueueOptions.DEFAULTS));
      assertThat(first).as("bulk enqueue on the dead connection failed").isNotNull();
      assertThat(((SQLException) first.getCause()).getSQLState()).startsWith("08");

      // The only connection of the pool was discarded: the next call gets a new one.
      List<UUID> ids = producer.enqueueAll(NUMBERED, numbered(5), EnqueueOptions.DEFAULTS);
      assertThat(ids).hasSize(5);
    }
    assertThat(count("pgjobs.jobs")).isEqualTo(5);
  }

  @Test
  void aConnectionLostUnderABulkEnqueueInTheCallersTransactionIsClosedForItsPool() throws SQLException {
    try (HikariDataSource pool = poolHandingOutWithoutValidation()) {
      JobClient producer = JobClient.builder(pool).build();
      terminateBackendOf(pool);

      try (Connection tx = pool.getConnection()) {
        tx.setAutoCommit(false);
        PgJobsException thrown =
            catchThrowableOfType(
                PgJobsException.class,
                () -> producer.enqueueAll(tx, NUMBERED, numbered(5), EnqueueOptions.DEFAULTS));
        assertThat(thrown).as("bulk enqueue on the dead connection failed").isNotNull();
        assertThat(tx.isClosed()).as("the caller's connection, closed so the pool discards it").isTrue();
      }

      try (Connection next = pool.getConnection();
          Statement st = next.createStatement();
          ResultSet rs = st.executeQuery("SELECT 1")) {
        assertThat(rs.next()).as("the pool's next connection works").isTrue();
      }
    }
  }

  @Test
  void aCopyRefusedByTheDatabaseReportsItsErrorAndKeepsItsConnection() throws SQLException {
    try (HikariDataSource pool = db.newDataSource(1)) {
      JobClient producer = JobClient.builder(pool).build();
      Object physical = physicalConnection(pool);

      PgJobsException thrown =
          catchThrowableOfType(
              PgJobsException.class, () -> producer.enqueueAll(REFUSED_IN_COPY, numbered(3), EnqueueOptions.DEFAULTS));

      assertThat(thrown).as("enqueueAll failed").isNotNull();
      SQLException cause = (SQLException) thrown.getCause();
      assertThat(cause.getSQLState()).as("SQLState of the reported error: " + cause).isEqualTo("P0001");
      assertThat(cause.getMessage()).contains("job type refused_in_copy refused");
      assertThat(cause.getSuppressed()).as("nothing failed after it").isEmpty();
      // An error of the data, not of the connection: it stays in the pool and works.
      assertThat(producer.enqueueAll(NUMBERED, numbered(3), EnqueueOptions.DEFAULTS)).hasSize(3);
      assertThat(physicalConnection(pool)).as("the pool's connection").isSameAs(physical);
    }
    assertThat(count("pgjobs.jobs")).isEqualTo(3);
  }

  /** The driver's connection under the pool's (only) connection. */
  private static Object physicalConnection(HikariDataSource pool) throws SQLException {
    try (Connection c = pool.getConnection()) {
      return c.unwrap(org.postgresql.PGConnection.class);
    }
  }

  /**
   * A pool of one connection that hands it out without validating it. HikariCP validates a connection
   * on loan only when it was idle longer than its alive-bypass window (500 ms, read when a pool is
   * created); a minute here, so the dead connection is handed out again however slow the machine is,
   * as it is in production by an application that uses its connections more often than every 500 ms.
   */
  private static HikariDataSource poolHandingOutWithoutValidation() {
    System.setProperty(HIKARI_ALIVE_BYPASS, "60000");
    try {
      return db.newDataSource(1);
    } finally {
      System.clearProperty(HIKARI_ALIVE_BYPASS);
    }
  }

  /** Terminates the backend of the pool's (only) connection while it waits in the pool, and waits until it is gone. */
  private static void terminateBackendOf(HikariDataSource pool) throws SQLException {
    long pid;
    try (Connection c = pool.getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      pid = rs.getLong(1);
    }
    // pg_terminate_backend with a timeout waits until the backend has exited.
    assertThat(count("SELECT count(*) FROM (SELECT pg_terminate_backend(" + pid + ", 10000)) AS t WHERE pg_terminate_backend"))
        .as("backend " + pid + " terminated").isEqualTo(1);
  }

  private static List<Numbered> numbered(int n) {
    return IntStream.rangeClosed(1, n).mapToObj(Numbered::new).toList();
  }
}
