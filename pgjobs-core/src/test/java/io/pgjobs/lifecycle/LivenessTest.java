package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.metrics.MetricNames;
import io.pgjobs.metrics.MicrometerJobMetrics;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every running job is held by a live worker that says so, or it is back in the queue within the
 * dead-worker threshold: a worker claims only once it is registered, its heartbeat never waits for the
 * handlers' pool, and a job its worker no longer holds is rescued without waiting for the stale threshold.
 */
@Tag(Tags.SLOW)
class LivenessTest extends PgJobsTestBase {
  static final JobType<Numbered> HOLDING = JobType.of("holding", Numbered.class);

  private final ConcurrentHashMap<UUID, AtomicInteger> runs = new ConcurrentHashMap<>();
  private HikariDataSource smallPool;

  @AfterEach
  void closePool() {
    if (smallPool != null) {
      smallPool.close();
    }
  }

  private int countRun(UUID id) {
    return runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
  }

  @Test
  void aWorkerThatCannotRegisterClaimsNothingUntilItCan() throws Exception {
    UUID id = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    try (Connection locker = db.dataSource().getConnection();
        Statement st = locker.createStatement()) {
      locker.setAutoCommit(false);
      // The worker's registration waits for this lock past its lock timeout: its first beat fails.
      st.execute("LOCK TABLE pgjobs.workers IN ACCESS EXCLUSIVE MODE");
      JobWorker worker = start(worker()
          .workerDeadAfter(Duration.ofSeconds(3))
          .heartbeatInterval(Duration.ofMillis(400))
          .pollInterval(Duration.ofMillis(50))
          .maintenance(false)
          .register(NUMBERED, (ctx, p) -> {
            countRun(ctx.jobId());
            return null;
          }));
      assertThat(worker.isFenced()).as("fenced while unregistered").isTrue();
      // The heartbeat tries again (and waits on the lock again): meanwhile the pollers have had
      // many turns.
      await().atMost(Duration.ofSeconds(10)).until(() -> db.queryLong("""
          SELECT count(*) FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO pgjobs.workers%'""") > 0);
      assertThat(client.get(id).orElseThrow().state())
          .as("claimed before registration")
          .isEqualTo(JobState.QUEUED);
      assertThat(runs).isEmpty();
      locker.rollback();
    }
    Job done = awaitState(id, JobState.SUCCEEDED);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.errors()).isEmpty();
    assertThat(runs.get(id)).hasValue(1);
  }

  @Test
  void theHeartbeatReconnectsWhileHandlersHoldEveryPooledConnection() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(
        db.jdbcUrl() + (db.jdbcUrl().contains("?") ? "&" : "?") + "ApplicationName=liveness-small");
    config.setMaximumPoolSize(3);
    config.setPoolName("liveness-small");
    config.setConnectionTimeout(
        30_000); // HikariCP's default: longer than the dead-worker threshold
    smallPool = new HikariDataSource(config);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch holding = new CountDownLatch(3);
    JobWorker worker = start(JobWorker.builder(smallPool)
        .shutdownGrace(Duration.ofSeconds(2))
        .queue("default", 3)
        .listen(false)
        .maintenance(false)
        .workerDeadAfter(Duration.ofSeconds(3))
        .heartbeatInterval(Duration.ofMillis(300))
        .pollInterval(Duration.ofMillis(100))
        .register(HOLDING, (ctx, p) -> {
          countRun(ctx.jobId());
          // Each handler holds a connection of the worker's pool, in a transaction, until released.
          try (Connection c = ctx.dataSource().getConnection();
              Statement st = c.createStatement()) {
            c.setAutoCommit(false);
            st.execute("SELECT 1");
            holding.countDown();
            release.await(60, TimeUnit.SECONDS);
            c.commit();
          }
          return null;
        }));
    List<UUID> ids = List.of(
        client.enqueue(HOLDING, new Numbered(1)).job().id(),
        client.enqueue(HOLDING, new Numbered(2)).job().id(),
        client.enqueue(HOLDING, new Numbered(3)).job().id());
    // The pool is used up by the handlers (before, the heartbeat held one of its connections).
    assertThat(holding.await(20, TimeUnit.SECONDS))
        .as("three handlers hold the pool's three connections")
        .isTrue();

    // Cut the heartbeat's connection (the only one of the worker not in a transaction): the next
    // beat needs a new one, which the pool has none of.
    await().atMost(Duration.ofSeconds(10)).until(() -> db.queryLong("""
        SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
         WHERE application_name = 'liveness-small' AND state = 'idle'""") > 0);
    long beats = worker.heartbeats();
    // Beats resume within the dead-worker threshold though the pool has no connection to lend.
    await().atMost(Duration.ofSeconds(3)).until(() -> worker.heartbeats() >= beats + 3);
    assertThat(worker.isFenced()).isFalse();
    release.countDown();
    for (UUID id : ids) {
      Job done = awaitState(id, JobState.SUCCEEDED);
      assertThat(done.attempts()).isEqualTo(1);
      assertThat(done.errors()).isEmpty();
      assertThat(runs.get(id)).hasValue(1);
    }
  }

  @Test
  void aRunningJobItsLiveWorkerDoesNotHoldIsBackWithinTheDeadWorkerThreshold() {
    JobWorker worker = start(worker()
        .workerDeadAfter(Duration.ofSeconds(3))
        .staleThreshold(Duration.ofMinutes(10))
        .heartbeatInterval(Duration.ofMillis(300))
        .pollInterval(Duration.ofMillis(100))
        .leaseTtl(Duration.ofSeconds(2))
        .register(NUMBERED, (ctx, p) -> {
          countRun(ctx.jobId());
          return null;
        }));
    await().until(() -> worker.heartbeats() > 0);
    // A claim the worker does not hold, as a failover or a lost give-back leaves one: running under
    // the live worker's id with a token the worker never had.
    UUID id = client
        .enqueue(
            NUMBERED,
            new Numbered(7),
            io.pgjobs.EnqueueOptions.builder().delay(Duration.ofHours(1)).build())
        .job()
        .id();
    db.execute(
        "UPDATE pgjobs.jobs SET state = 'running', attempts = 1, run_at = now(), locked_by = '"
            + worker.workerId() + "', claim_token = 1, heartbeat_at = now() WHERE id = '" + id
            + "'");
    Job done = awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(12));
    assertThat(done.attempts()).isEqualTo(2);
    assertThat(done.errors())
        .singleElement()
        .satisfies(e -> assertThat(e.kind()).isEqualTo("worker_lost"));
    assertThat(runs.get(id)).hasValue(1);
  }

  @Test
  void aHeldJobWhoseRowItsHandlerLocksPastTheThresholdIsNotRescued() {
    start(worker()
        .workerDeadAfter(Duration.ofSeconds(2))
        .heartbeatInterval(Duration.ofMillis(200))
        .pollInterval(Duration.ofMillis(100))
        .leaseTtl(Duration.ofSeconds(1))
        .register(HOLDING, (ctx, p) -> {
          countRun(ctx.jobId());
          // The handler's own transaction holds its job's row for twice the dead-worker threshold:
          // the heartbeat skips the row, and names it as held.
          try (Connection c = ctx.dataSource().getConnection();
              Statement st = c.createStatement()) {
            c.setAutoCommit(false);
            st.execute("SELECT 1 FROM pgjobs.jobs WHERE id = '" + ctx.jobId() + "' FOR UPDATE");
            Thread.sleep(4_000);
            c.commit();
          }
          return null;
        }));
    UUID id = client.enqueue(HOLDING, new Numbered(1)).job().id();
    Job done = awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(20));
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.errors()).isEmpty();
    assertThat(runs.get(id)).hasValue(1);
  }
  /** A handler that holds its lane until {@code release}; {@code started} counts down when it runs. */
  private JobWorker.Builder holdingUntil(
      JobWorker.Builder builder, CountDownLatch started, CountDownLatch release) {
    return builder
        .shutdownGrace(Duration.ofSeconds(2))
        .queue("default", 1)
        .listen(false)
        .maintenance(false)
        .workerDeadAfter(Duration.ofSeconds(9))
        .heartbeatInterval(Duration.ofSeconds(1))
        .pollInterval(Duration.ofMillis(100))
        .register(HOLDING, (ctx, p) -> {
          countRun(ctx.jobId());
          started.countDown();
          if (!release.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("never released");
          }
          return null;
        });
  }

  /** The job ran once, to success, never interrupted: its worker never fenced itself. */
  private void assertRanOnceUninterrupted(JobWorker worker, UUID id) {
    assertThat(worker.fences()).as("times the worker fenced itself").isZero();
    Job done = awaitState(id, JobState.SUCCEEDED);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.errors()).isEmpty();
    assertThat(runs.get(id)).hasValue(1);
  }

  @Test
  void aHeartbeatSlowerThanItsIntervalStillKeepsTheWorkerAlive() throws Exception {
    // The server takes 3 s over each beat (a trigger on the workers row sleeps, as a busy server or
    // a beat of thousands of jobs would): three times the interval, less than the 8 s before the
    // worker would fence itself. Each beat must be waited for, not failed at the interval and sent
    // again (every try would fail the same way, and the worker fence itself while alive).
    db.execute(
        "CREATE TABLE slow_beats (ms int NOT NULL)",
        "CREATE TABLE slow_beats_done (at timestamptz NOT NULL)",
        """
        CREATE FUNCTION slow_beat() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE d int;
        BEGIN
          SELECT max(ms) INTO d FROM slow_beats;
          IF d > 0 THEN
            PERFORM pg_sleep(d / 1000.0);
            INSERT INTO slow_beats_done VALUES (now());
          END IF;
          RETURN NEW;
        END $$""",
        "CREATE TRIGGER slow_beat BEFORE UPDATE ON pgjobs.workers FOR EACH ROW EXECUTE FUNCTION slow_beat()");
    try {
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      JobWorker worker = start(holdingUntil(JobWorker.builder(db.dataSource()), started, release));
      UUID id = client.enqueue(HOLDING, new Numbered(1)).job().id();
      assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();

      db.execute("INSERT INTO slow_beats VALUES (3000)");
      // Three slow beats written (the row of each is inserted in the beat's own transaction), well
      // past the time the worker would have fenced itself had it given up on them.
      await()
          .atMost(Duration.ofSeconds(40))
          .until(() -> db.queryLong("SELECT count(*) FROM slow_beats_done") >= 3);
      assertThat(worker.isFenced()).isFalse();
      db.execute("DELETE FROM slow_beats");
      release.countDown();
      assertRanOnceUninterrupted(worker, id);
    } finally {
      db.execute(
          "DROP TRIGGER slow_beat ON pgjobs.workers",
          "DROP FUNCTION slow_beat()",
          "DROP TABLE slow_beats, slow_beats_done");
    }
  }

  @Test
  void aHeartbeatWhoseConnectionStopsAnsweringIsSentAgainOnANewOneBeforeTheWorkerFences()
      throws Exception {
    try (TcpProxy proxy = TcpProxy.before(db.jdbcUrl())) {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(proxy.through(db.jdbcUrl()));
      config.setMaximumPoolSize(4);
      config.setPoolName("liveness-proxied");
      smallPool = new HikariDataSource(config);
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      JobWorker worker = start(holdingUntil(JobWorker.builder(smallPool), started, release));
      UUID id = client.enqueue(HOLDING, new Numbered(1)).job().id();
      assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();

      // The next beat's statement (the only message naming the job as a key of its claim tokens
      // while it runs) is held by the network for a minute: its connection is as good as cut, with
      // no reset.
      proxy.delayMessage("\"" + id + "\":", Duration.ofMinutes(1));
      await().atMost(Duration.ofSeconds(10)).until(() -> !proxy.delayArmed());
      long beats = worker.heartbeats();
      // Beats resume on a new connection, well before the 8 s after which the worker would fence.
      await().atMost(Duration.ofSeconds(20)).until(() -> worker.heartbeats() >= beats + 2);
      assertThat(worker.isFenced()).isFalse();
      release.countDown();
      assertRanOnceUninterrupted(worker, id);
    }
  }

  @Test
  void aWorkerWhoseStaleThresholdIsTheShorterFencesItselfBeforeItsJobsGoStale() throws Exception {
    // Rescue takes a running job whose own heartbeat is older than the stale threshold, whatever
    // its worker's row says: with a 3-s stale threshold and a 20-s dead-worker threshold, a worker
    // that cannot beat must stop its handlers before 3 s, not 20.
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    JobWorker worker = start(worker()
        .metrics(new MicrometerJobMetrics(registry))
        .queue("default", 1)
        .maintenance(false)
        .staleThreshold(Duration.ofSeconds(3))
        .workerDeadAfter(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(100))
        .register(HOLDING, (ctx, p) -> {
          countRun(ctx.jobId());
          started.countDown();
          release.await(60, TimeUnit.SECONDS);
          return null;
        }));
    client.enqueue(HOLDING, new Numbered(1));
    assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();
    try (Connection locker = db.dataSource().getConnection();
        Statement st = locker.createStatement()) {
      locker.setAutoCommit(false);
      // Every beat now waits on this lock past its lock timeout and fails.
      st.execute("LOCK TABLE pgjobs.workers IN ACCESS EXCLUSIVE MODE");
      await().atMost(Duration.ofSeconds(10)).until(worker::isFenced);
      locker.rollback();
    } finally {
      release.countDown();
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> !worker.isFenced());
    assertThat(worker.fences()).isEqualTo(1);
    assertThat(registry.get(MetricNames.WORKER_FENCES).functionCounter().count())
        .isEqualTo(1.0);
  }
}
