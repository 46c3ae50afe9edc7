package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A database whose {@code statement_timeout} is set (as teams set it on the database or the application's
 * role, against runaway queries), shorter than an outcome write that ends a parent of 100,000 children:
 * the write, cancelled by the server, is written again with the timeout lifted for its own transaction,
 * so the parent ends and its children run (or are cancelled). Before, it was cancelled again at every try:
 * the parent never ended and its children never ran.
 */
@Tag(Tags.SLOW)
class StatementTimeoutTest extends PgJobsTestBase {
  private static final int CHILDREN = 100_000;
  /** Far above any claim, heartbeat or plain outcome write; below ending a parent of 100,000 children. */
  private static final String TIMEOUT = "250ms";

  static final JobType<Numbered> PARENT =
      JobType.of("timeout_parent", Numbered.class).withMaxAttempts(1);
  static final JobType<Numbered> CHILD = JobType.of("timeout_child", Numbered.class);

  private HikariDataSource pool;

  /** Sets the timeout on the database: sessions opened from now on have it. */
  private static void setTimeout() {
    db.execute("ALTER DATABASE \"" + db.name() + "\" SET statement_timeout = '" + TIMEOUT + "'");
  }

  @AfterEach
  void resetTimeout() {
    if (pool != null) {
      pool.close();
    }
    db.execute("ALTER DATABASE \"" + db.name() + "\" RESET statement_timeout");
  }

  /** A pool opened after the setting: its sessions have the timeout, as the application's would. */
  private HikariDataSource pool() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setMaximumPoolSize(12);
    pool = new HikariDataSource(config);
    try (Connection c = pool.getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SHOW statement_timeout")) {
      rs.next();
      assertThat(rs.getString(1)).isEqualTo(TIMEOUT);
    }
    return pool;
  }

  /**
   * A parent and its children, enqueued before the timeout is set (how long the caller's own enqueue may
   * take is the caller's business).
   */
  private static Map<String, UUID> fanOut(int parent) {
    JobGraph.Builder graph = JobGraph.builder();
    graph.add("parent", PARENT, new Numbered(parent));
    for (int i = 0; i < CHILDREN; i++) {
      graph.add("c" + i, CHILD, new Numbered(i), Dependency.on("parent"));
    }
    Map<String, UUID> ids = client.enqueueGraph(graph.build()).ids();
    setTimeout();
    return ids;
  }

  private JobWorker worker(HikariDataSource pool) {
    return start(JobWorker.builder(pool)
        .shutdownGrace(Duration.ofSeconds(2))
        .queue("default", 10)
        .register(PARENT, (ctx, p) -> {
          if (p.n() < 0) {
            throw new IllegalStateException("the parent fails");
          }
          return null;
        })
        .register(CHILD, (ctx, p) -> null));
  }

  @Test
  void aParentWhoseSuccessOutlastsTheStatementTimeoutStillUnblocksItsHundredThousandChildren()
      throws Exception {
    Map<String, UUID> ids = fanOut(1);
    worker(pool());
    awaitState(ids.get("parent"), JobState.SUCCEEDED, Duration.ofMinutes(2));
    await("every child run").atMost(Duration.ofMinutes(3)).until(() -> count("pgjobs.jobs") == 0);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'"))
        .isEqualTo(CHILDREN + 1);
    assertThat(client.get(ids.get("parent")).orElseThrow().attempts()).isEqualTo(1);
  }

  @Test
  void aParentWhoseFailureOutlastsTheStatementTimeoutStillCancelsItsHundredThousandChildren()
      throws Exception {
    Map<String, UUID> ids = fanOut(-1);
    worker(pool());
    awaitState(ids.get("parent"), JobState.FAILED, Duration.ofMinutes(2));
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'cancelled'"))
        .isEqualTo(CHILDREN);
  }

  @Test
  void aDeadWorkersParentWhoseRescueOutlastsTheStatementTimeoutStillCancelsItsChildren()
      throws Exception {
    Map<String, UUID> ids = fanOut(1);
    // Claimed by a worker that never registered and never will: rescue takes the parent at once,
    // and with its one attempt spent ends it failed, which cancels its 100,000 children in the same
    // statement.
    ExecutionStore store = new ExecutionStore(
        db.dataSource(),
        "pgjobs",
        new io.pgjobs.json.PayloadCodec(io.pgjobs.json.PayloadCodec.DEFAULT_MAPPER));
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 1, "vanished"))
        .singleElement()
        .satisfies(j -> assertThat(j.id()).isEqualTo(ids.get("parent")));
    worker(pool());
    Job parent = awaitState(ids.get("parent"), JobState.FAILED, Duration.ofMinutes(2));
    assertThat(parent.errors()).extracting(JobError::kind).containsExactly("worker_lost");
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'cancelled'"))
        .isEqualTo(CHILDREN);
  }

  @Test
  void aHeartbeatThatOutlastsTheStatementTimeoutStillCounts() throws Exception {
    // Each beat takes 600 ms in the server (a trigger on the workers row sleeps, as a beat of tens
    // of thousands of jobs would take), longer than the 250-ms timeout.
    db.execute(
        """
        CREATE FUNCTION slow_beat() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM pg_sleep(0.6);
          INSERT INTO slow_beats_done VALUES (now());
          RETURN NEW;
        END $$""",
        "CREATE TABLE slow_beats_done (at timestamptz NOT NULL)",
        "CREATE TRIGGER slow_beat BEFORE UPDATE ON pgjobs.workers FOR EACH ROW EXECUTE FUNCTION slow_beat()");
    try {
      setTimeout();
      java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
      JobWorker worker = start(JobWorker.builder(pool())
          .shutdownGrace(Duration.ofSeconds(2))
          .maintenance(false)
          .workerDeadAfter(Duration.ofSeconds(4))
          .heartbeatInterval(Duration.ofMillis(500))
          .register(CHILD, (ctx, p) -> release.await(60, java.util.concurrent.TimeUnit.SECONDS)));
      UUID id = client.enqueue(CHILD, new Numbered(1)).job().id();
      // Five beats written, past the 3.5 s after which a worker whose beats all failed fences
      // itself.
      await().atMost(Duration.ofSeconds(30)).until(() -> count("slow_beats_done") >= 5);
      release.countDown();
      Job done = awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(30));
      assertThat(done.attempts()).isEqualTo(1);
      assertThat(worker.fences()).isZero();
    } finally {
      db.execute(
          "DROP TRIGGER slow_beat ON pgjobs.workers",
          "DROP FUNCTION slow_beat()",
          "DROP TABLE slow_beats_done");
    }
  }
}
