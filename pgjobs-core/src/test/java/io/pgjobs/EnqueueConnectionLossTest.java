package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.lifecycle.TcpProxy;
import io.pgjobs.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Enqueue when the connection dies under it, by real backend terminations and a real TCP proxy that
 * drops the server's answer (no mocks): the error reported is the one that broke the enqueue, not the
 * rollback's "Connection is closed" that follows it (which is attached as suppressed); a connection
 * that died under the COPY is discarded, not handed out again by the pool; a failure while the commit
 * was under way is {@link EnqueueOutcomeUnknownException}, any other is not; and the documented retry
 * (the same call again, with the same idempotency keys) stores each job exactly once.
 */
class EnqueueConnectionLossTest extends PgJobsTestBase {
  /** Jobs of this type end their session when their transaction commits (trigger below). */
  private static final JobType<Numbered> KILLED_AT_COMMIT =
      JobType.of("killed_at_commit", Numbered.class);

  /** Jobs of this type end their session while the COPY stores them (trigger below). */
  private static final JobType<Numbered> KILLED_IN_COPY =
      JobType.of("killed_in_copy", Numbered.class);

  /** Jobs of this type are refused by the database while the COPY stores them (trigger below). */
  private static final JobType<Numbered> REFUSED_IN_COPY =
      JobType.of("refused_in_copy", Numbered.class);

  /** Jobs of this type take their idempotency key from their payload ({@code keyed_numbered:<n>}). */
  private static final JobType<Numbered> KEYED =
      JobType.of("keyed_numbered", Numbered.class).withIdempotencyKeyFrom("n");

  private static final String HIKARI_ALIVE_BYPASS = "com.zaxxer.hikari.aliveBypassWindowMs";

  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : closeables.reversed()) {
      c.close();
    }
  }

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
    PgJobsException thrown = catchThrowableOfType(
        PgJobsException.class,
        () -> client.enqueueAll(KILLED_AT_COMMIT, numbered(3), EnqueueOptions.DEFAULTS));

    // The COPY went through; the COMMIT ran the deferred trigger, which ended the session.
    assertThat(thrown).as("enqueueAll failed").isNotNull();
    // The session ended while the COMMIT was under way: the caller cannot know what happened (here,
    // the trigger ran before the commit, so nothing was stored).
    assertThat(thrown)
        .as("failure during the COMMIT")
        .isInstanceOf(EnqueueOutcomeUnknownException.class);
    SQLException cause = (SQLException) thrown.getCause();
    assertThat(cause.getSQLState())
        .as("SQLState of the reported error: " + cause)
        .isEqualTo("57P01");
    assertThat(cause.getMessage()).contains("terminating connection due to administrator command");
    assertThat(thrown.getMessage()).doesNotContain("Connection is closed");
    // HikariCP evicted the connection when the COMMIT failed through its proxy; the rollback then
    // failed.
    assertThat(Arrays.stream(cause.getSuppressed()).map(Throwable::getMessage))
        .as("suppressed failures of the rollback and reset")
        .anyMatch(m -> m.contains("Connection is closed"));
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE type = 'killed_at_commit'"))
        .isZero();
    assertThat(client.enqueueAll(NUMBERED, numbered(3), EnqueueOptions.DEFAULTS))
        .as("next bulk enqueue")
        .hasSize(3);
  }

  @Test
  void aCopyCutOffReportsTheCopyFailureWithTheRollbackFailureSuppressed() {
    PgJobsException thrown = catchThrowableOfType(
        PgJobsException.class,
        () -> client.enqueueAll(KILLED_IN_COPY, numbered(3), EnqueueOptions.DEFAULTS));

    assertThat(thrown).as("enqueueAll failed").isNotNull();
    // Lost before the COMMIT was sent: the transaction is gone, nothing is stored, and the error
    // says so.
    assertThat(thrown)
        .as("failure before the COMMIT")
        .isNotInstanceOf(EnqueueOutcomeUnknownException.class);
    SQLException cause = (SQLException) thrown.getCause();
    // The driver reports the end of the COPY failing on the lost connection (class 08).
    assertThat(cause.getSQLState())
        .as("SQLState of the reported error: " + cause)
        .startsWith("08");
    assertThat(cause.getMessage()).containsIgnoringCase("copy");
    assertThat(thrown.getMessage()).doesNotContain("Connection is closed");
    assertThat(Arrays.stream(cause.getSuppressed()).map(Throwable::getMessage))
        .as("suppressed failures of the rollback and reset")
        .anyMatch(m -> m.contains("Connection is closed"));
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE type = 'killed_in_copy'"))
        .isZero();
    assertThat(client.enqueueAll(NUMBERED, numbered(3), EnqueueOptions.DEFAULTS))
        .as("next bulk enqueue")
        .hasSize(3);
  }

  @Test
  void aConnectionKilledWhileIdleInThePoolIsDiscardedWhenItsBulkEnqueueFails() throws SQLException {
    try (HikariDataSource pool = poolHandingOutWithoutValidation()) {
      JobClient producer = JobClient.builder(pool).build();
      terminateBackendOf(pool);

      // The pool hands out the dead connection; the COPY's BEGIN finds it dead, on the driver's own
      // connection (below the pool's proxy).
      PgJobsException first = catchThrowableOfType(
          PgJobsException.class,
          () -> producer.enqueueAll(NUMBERED, numbered(5), EnqueueOptions.DEFAULTS));
      assertThat(first).as("bulk enqueue on the dead connection failed").isNotNull();
      assertThat(first)
          .as("failure before anything was sent")
          .isNotInstanceOf(EnqueueOutcomeUnknownException.class);
      // The first statement on it finds it gone: the read of the partition rules (once a second per
      // client), else the COPY's BEGIN: 57P01 (terminated) or class 08.
      assertThat(io.pgjobs.store.BrokenConnections.connectionLost(first.getCause()))
          .as("failed for the lost connection: " + ((SQLException) first.getCause()).getSQLState())
          .isTrue();

      // The only connection of the pool was discarded: the next call gets a new one.
      List<UUID> ids = producer.enqueueAll(NUMBERED, numbered(5), EnqueueOptions.DEFAULTS);
      assertThat(ids).hasSize(5);
    }
    assertThat(count("pgjobs.jobs")).isEqualTo(5);
  }

  @Test
  void aConnectionLostUnderABulkEnqueueInTheCallersTransactionIsClosedForItsPool()
      throws SQLException {
    try (HikariDataSource pool = poolHandingOutWithoutValidation()) {
      JobClient producer = JobClient.builder(pool).build();
      terminateBackendOf(pool);

      try (Connection tx = pool.getConnection()) {
        tx.setAutoCommit(false);
        PgJobsException thrown = catchThrowableOfType(
            PgJobsException.class,
            () -> producer.enqueueAll(tx, NUMBERED, numbered(5), EnqueueOptions.DEFAULTS));
        assertThat(thrown).as("bulk enqueue on the dead connection failed").isNotNull();
        assertThat(tx.isClosed())
            .as("the caller's connection, closed so the pool discards it")
            .isTrue();
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

      PgJobsException thrown = catchThrowableOfType(
          PgJobsException.class,
          () -> producer.enqueueAll(REFUSED_IN_COPY, numbered(3), EnqueueOptions.DEFAULTS));

      assertThat(thrown).as("enqueueAll failed").isNotNull();
      assertThat(thrown)
          .as("refused by the database")
          .isNotInstanceOf(EnqueueOutcomeUnknownException.class);
      SQLException cause = (SQLException) thrown.getCause();
      assertThat(cause.getSQLState())
          .as("SQLState of the reported error: " + cause)
          .isEqualTo("P0001");
      assertThat(cause.getMessage()).contains("job type refused_in_copy refused");
      assertThat(cause.getSuppressed()).as("nothing failed after it").isEmpty();
      // An error of the data, not of the connection: it stays in the pool and works.
      assertThat(producer.enqueueAll(NUMBERED, numbered(3), EnqueueOptions.DEFAULTS))
          .hasSize(3);
      assertThat(physicalConnection(pool)).as("the pool's connection").isSameAs(physical);
    }
    assertThat(count("pgjobs.jobs")).isEqualTo(3);
  }

  @Test
  void aSingleEnqueueWhoseAnswerIsLostIsOutcomeUnknownAndItsRetryStoresOnce() throws Exception {
    TcpProxy proxy = proxy();
    JobClient producer = JobClient.builder(poolThrough(proxy)).build();
    EnqueueOptions keyed =
        EnqueueOptions.builder().idempotencyKey("answer-lost-1").build();
    // The INSERT (one statement, committed on its own) reaches the server; its answer does not come
    // back.
    proxy.loseReplyTo("answer-lost-1");

    PgJobsException thrown = catchThrowableOfType(
        PgJobsException.class, () -> producer.enqueue(NUMBERED, new Numbered(7), keyed));

    assertThat(proxy.repliesLost()).as("answers dropped by the proxy").isEqualTo(1);
    assertThat(thrown)
        .as("enqueue whose answer was lost")
        .isInstanceOf(EnqueueOutcomeUnknownException.class);
    assertThat(((SQLException) thrown.getCause()).getSQLState()).startsWith("08");
    assertThat(count("pgjobs.jobs")).as("the job was stored all the same").isEqualTo(1);

    // The documented retry: the same call, with the same key.
    EnqueuedJob again = producer.enqueue(NUMBERED, new Numbered(7), keyed);
    assertThat(again.replayed()).as("the retry finds the stored job").isTrue();
    assertThat(count("pgjobs.jobs")).as("jobs after the retry").isEqualTo(1);
    assertThat(
            count("SELECT count(*) FROM pgjobs.jobs WHERE id = '" + again.job().id() + "'"))
        .isEqualTo(1);
  }

  @Test
  void aSingleEnqueueRefusedByTheDatabaseIsNotOutcomeUnknown() {
    PgJobsException thrown = catchThrowableOfType(
        PgJobsException.class,
        () -> client.enqueue(REFUSED_IN_COPY, new Numbered(1), EnqueueOptions.DEFAULTS));

    assertThat(thrown)
        .as("enqueue refused")
        .isNotNull()
        .isNotInstanceOf(EnqueueOutcomeUnknownException.class);
    assertThat(count("pgjobs.jobs")).isZero();
  }

  @Test
  void aBulkEnqueueWhoseCommitAnswerIsLostIsOutcomeUnknown() throws Exception {
    TcpProxy proxy = proxy();
    JobClient producer = JobClient.builder(poolThrough(proxy)).build();
    proxy.loseReplyTo("COMMIT");

    PgJobsException thrown = catchThrowableOfType(
        PgJobsException.class,
        () -> producer.enqueueAll(NUMBERED, numbered(50), EnqueueOptions.DEFAULTS));

    assertThat(proxy.repliesLost()).as("answers dropped by the proxy").isEqualTo(1);
    assertThat(thrown)
        .as("bulk enqueue whose COMMIT answer was lost")
        .isInstanceOf(EnqueueOutcomeUnknownException.class);
    assertThat(((SQLException) thrown.getCause()).getSQLState()).startsWith("08");
    assertThat(count("pgjobs.jobs")).as("the batch was committed all the same").isEqualTo(50);
  }

  @Test
  void aBulkEnqueueRetriedWithItsKeysAfterALostCommitStoresEachJobOnce() throws Exception {
    TcpProxy proxy = proxy();
    JobClient producer = JobClient.builder(poolThrough(proxy)).build();
    proxy.loseReplyTo("COMMIT");

    PgJobsException thrown = catchThrowableOfType(
        PgJobsException.class,
        () -> producer.enqueueAll(KEYED, numbered(50), EnqueueOptions.DEFAULTS));
    assertThat(thrown)
        .as("bulk enqueue whose COMMIT answer was lost")
        .isInstanceOf(EnqueueOutcomeUnknownException.class);
    assertThat(count("pgjobs.jobs")).as("the batch was committed all the same").isEqualTo(50);

    // The documented retry: the same call again; each payload carries its key.
    List<UUID> ids = producer.enqueueAll(KEYED, numbered(50), EnqueueOptions.DEFAULTS);

    assertThat(count("pgjobs.jobs")).as("jobs after the retry").isEqualTo(50);
    assertThat(new HashSet<>(ids))
        .as("the retry's ids: the stored jobs")
        .hasSize(50)
        .isEqualTo(new HashSet<>(storedIds()));
    for (int i = 0; i < 50; i++) {
      assertThat(client.get(ids.get(i)).orElseThrow().idempotencyKey())
          .isEqualTo("keyed_numbered:" + (i + 1));
    }
  }

  @Test
  void aGraphRetriedWithItsKeyAfterALostCommitIsStoredOnce() throws Exception {
    TcpProxy proxy = proxy();
    JobClient producer = JobClient.builder(poolThrough(proxy)).build();
    JobGraph.Builder graph = JobGraph.builder().idempotencyKey("order-42-fulfilment");
    for (int i = 1; i <= 20; i++) {
      graph.add(
          "step-" + i,
          NUMBERED,
          new Numbered(i),
          i == 1 ? new Dependency[0] : new Dependency[] {Dependency.on("step-" + (i - 1))});
    }
    JobGraph built = graph.build();
    proxy.loseReplyTo("COMMIT");

    PgJobsException thrown =
        catchThrowableOfType(PgJobsException.class, () -> producer.enqueueGraph(built));
    assertThat(thrown)
        .as("graph enqueue whose COMMIT answer was lost")
        .isInstanceOf(EnqueueOutcomeUnknownException.class);
    assertThat(count("pgjobs.jobs")).as("the graph was committed all the same").isEqualTo(20);

    // The documented retry: the same graph under the same key.
    EnqueuedGraph retried = producer.enqueueGraph(built);

    assertThat(retried.replayed()).isTrue();
    assertThat(count("pgjobs.jobs")).as("jobs after the retry").isEqualTo(20);
    assertThat(count("pgjobs.job_dependencies")).as("edges after the retry").isEqualTo(19);
    assertThat(new HashSet<>(retried.ids().values())).isEqualTo(new HashSet<>(storedIds()));
    assertThat(client.get(retried.id("step-1")).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    assertThat(client.get(retried.id("step-20")).orElseThrow().state()).isEqualTo(JobState.BLOCKED);
  }

  private TcpProxy proxy() throws java.io.IOException {
    TcpProxy proxy = TcpProxy.before(db.jdbcUrl());
    closeables.add(proxy);
    return proxy;
  }

  /** A pool of its own whose connections go through {@code proxy}. */
  private HikariDataSource poolThrough(TcpProxy proxy) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(proxy.through(db.jdbcUrl()));
    config.setMaximumPoolSize(2);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(5_000);
    HikariDataSource pool = new HikariDataSource(config);
    closeables.add(pool);
    return pool;
  }

  private static List<UUID> storedIds() throws SQLException {
    List<UUID> ids = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT id FROM pgjobs.jobs")) {
      while (rs.next()) {
        ids.add(rs.getObject(1, UUID.class));
      }
    }
    return ids;
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
    try (Connection c = pool.getConnection()) {
      pid = TestDatabase.backendPid(c);
    }
    // pg_terminate_backend with a timeout waits until the backend has exited.
    assertThat(count("SELECT count(*) FROM (SELECT pg_terminate_backend(" + pid
            + ", 10000)) AS t WHERE pg_terminate_backend"))
        .as("backend " + pid + " terminated")
        .isEqualTo(1);
  }

  private static List<Numbered> numbered(int n) {
    return IntStream.rangeClosed(1, n).mapToObj(Numbered::new).toList();
  }
}
