package io.pgjobs.pgbouncer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.CancelResult;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobContext;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.RetryPolicy;
import io.pgjobs.testkit.PgBouncer;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue 14, acceptance 3: pgjobs through a real PgBouncer 1.18 in transaction pooling mode, with a server
 * pool of {@value #SERVER_POOL} PostgreSQL connections shared by many more client connections, and
 * {@code prepareThreshold=0}. Workers, the client that enqueues and cancels, and the handlers' own
 * transactions all go through the pooler; only the LISTEN connection (in {@link Mode#LISTEN_DIRECT}) and
 * the test's own checks go to PostgreSQL directly. Each scenario runs both with LISTEN on a direct
 * connection and with polling only.
 */
@Tag(Tags.PGBOUNCER)
class PgBouncerTest extends PgJobsTestBase {
  private static final int SERVER_POOL = 4;

  /** How a worker behind the pooler learns of new jobs. */
  enum Mode {
    /** {@code listenDataSource(direct)}: LISTEN on a direct connection, a long poll interval. */
    LISTEN_DIRECT,
    /** {@code listen(false)}: polling only, every 100 ms. */
    POLLING_ONLY
  }

  private static final JobType<Numbered> EFFECT = JobType.of("pgb_effect", Numbered.class);
  private static final JobType<Numbered> FLAKY = JobType.of("pgb_flaky", Numbered.class)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));
  private static final JobType<Numbered> WAITS_FOR_CANCEL =
      JobType.of("pgb_waits_for_cancel", Numbered.class);
  private static final JobType<Numbered> OUTAGE = JobType.of("pgb_outage", Numbered.class)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(100)));

  private static PgBouncer bouncer;
  private static JobClient pooledClient;
  private final List<CountDownLatch> releases = new ArrayList<>();

  @BeforeAll
  static void startPgBouncer() {
    bouncer = PgBouncer.start(db, SERVER_POOL);
    pooledClient =
        JobClient.builder(bouncer.newDataSource(4)).knownTypes(NUMBERED).build();
  }

  @AfterAll
  static void stopPgBouncer() {
    if (bouncer != null) {
      bouncer.close();
    }
  }

  @BeforeEach
  void createEffectsTable() {
    if (!bouncer.isRunning()) {
      bouncer.restart(); // a failed outage test must not take the others down with it
    }
    db.execute(
        "DROP TABLE IF EXISTS effects",
        "CREATE TABLE effects (job_id uuid, worker text, backend int, backend_start timestamptz,"
            + " at timestamptz)");
  }

  @AfterEach
  void releaseHandlers() {
    releases.forEach(CountDownLatch::countDown);
  }

  /** A worker through the pooler, with the given way of hearing about new jobs and short timings. */
  private JobWorker.Builder worker(Mode mode, String id) {
    JobWorker.Builder b = JobWorker.builder(bouncer.newDataSource(6))
        .workerId(id)
        .shutdownGrace(Duration.ofSeconds(2))
        .heartbeatInterval(Duration.ofMillis(500))
        .workerDeadAfter(Duration.ofSeconds(4))
        .staleThreshold(Duration.ofSeconds(10));
    return switch (mode) {
      case LISTEN_DIRECT ->
        b.listenDataSource(db.newDataSource(1)).pollInterval(Duration.ofSeconds(5));
      case POLLING_ONLY -> b.listen(false).pollInterval(Duration.ofMillis(100));
    };
  }

  /**
   * The handler's side effect and the job's success commit in one transaction through the pooler, so a
   * job that ran twice shows up as two rows and one that never ran as none, even when the pooler dies
   * between the commit and its acknowledgement. The backend that ran it is recorded too.
   */
  private static Object recordEffect(JobContext ctx) throws Exception {
    try (Connection c = ctx.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement(
          "INSERT INTO effects (job_id, worker, backend, backend_start, at) VALUES (?, ?,"
              + " pg_backend_pid(), (SELECT backend_start FROM pg_stat_activity"
              + " WHERE pid = pg_backend_pid()), clock_timestamp())")) {
        ps.setObject(1, ctx.jobId());
        ps.setString(2, ctx.workerId());
        ps.executeUpdate();
      }
      ctx.complete(c, null);
      c.commit();
    }
    return null;
  }

  private static List<Numbered> payloads(int count) {
    return IntStream.range(0, count).mapToObj(Numbered::new).toList();
  }

  private static void assertEveryJobRanExactlyOnce(List<UUID> ids, JobType<?> type) {
    int n = ids.size();
    assertThat(new HashSet<>(ids)).hasSize(n);
    assertThat(count("SELECT count(*) FROM effects"))
        .as("effects (a job that ran twice adds two)")
        .isEqualTo(n);
    assertThat(count("SELECT count(DISTINCT job_id) FROM effects"))
        .as("jobs with an effect")
        .isEqualTo(n);
    assertThat(
            count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded' AND type = '"
                + type.name() + "'"))
        .as("succeeded jobs")
        .isEqualTo(n);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs"))
        .as("jobs left unfinished")
        .isZero();
  }

  // ------------------------------------------------------------------ exactly once

  @ParameterizedTest(name = "{0}")
  @EnumSource(Mode.class)
  void everyJobRunsExactlyOnceThroughTransactionPooling(Mode mode) {
    int jobs = 2_000;
    List<JobWorker> workers = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      workers.add(start(worker(mode, "pgb-worker-" + i)
          .queue(JobType.DEFAULT_QUEUE, 8)
          .register(EFFECT, (ctx, p) -> recordEffect(ctx))));
    }
    long startNanos = System.nanoTime();
    List<UUID> ids = pooledClient.enqueueAll(EFFECT, payloads(jobs), EnqueueOptions.DEFAULTS);

    await("all " + jobs + " jobs succeeded")
        .atMost(Duration.ofMinutes(2))
        .pollInterval(Duration.ofMillis(200))
        .until(() ->
            count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'") == jobs);
    double seconds = (System.nanoTime() - startNanos) / 1e9;
    System.out.printf(
        "pgbouncer exactly-once (%s): %d jobs through %d server connections in %.1f s (%.0f jobs/s)%n",
        mode, jobs, SERVER_POOL, seconds, jobs / seconds);
    workers.forEach(JobWorker::close);

    assertEveryJobRanExactlyOnce(ids, EFFECT);
    assertThat(count("SELECT count(DISTINCT worker) FROM effects"))
        .as("workers that ran jobs")
        .isGreaterThan(1);
    // 18 client connections and 24 lanes, but never more backends at once than the pooler's server
    // connections: the transactions really were multiplexed over shared backends. At once, not in
    // all: the pooler replaces a server connection whose client went away mid-transaction (6
    // distinct backends, never more than 4 alive together, in one CI run on a machine at load 27).
    // A backend is alive from its start to its last effect here.
    assertThat(count("SELECT count(DISTINCT backend) FROM effects"))
        .as("PostgreSQL backends that ran the handlers' transactions")
        .isBetween(1L, 17L);
    String backends =
        "(SELECT backend, min(backend_start) AS s, max(at) AS e FROM effects GROUP BY backend)";
    assertThat(count("SELECT max((SELECT count(*) FROM " + backends + " AS o"
            + " WHERE o.s <= b.s AND o.e >= b.s)) FROM " + backends + " AS b"))
        .as("PostgreSQL backends alive at once that ran the handlers' transactions")
        .isBetween(1L, (long) SERVER_POOL);
    if (mode == Mode.LISTEN_DIRECT) {
      assertThat(workers).allSatisfy(w -> assertThat(w.isListening()).isFalse()); // closed now
    }
  }

  // ------------------------------------------------------------------ retry

  @ParameterizedTest(name = "{0}")
  @EnumSource(Mode.class)
  void aFailingJobIsRetriedAndThenSucceeds(Mode mode) {
    start(worker(mode, "pgb-retry").register(FLAKY, (ctx, p) -> {
      if (ctx.attempt() < 3) {
        throw new IllegalStateException("failing attempt " + ctx.attempt());
      }
      return recordEffect(ctx);
    }));
    UUID id = pooledClient
        .enqueue(FLAKY, new Numbered(1), EnqueueOptions.builder().maxAttempts(5).build())
        .job()
        .id();

    Job done = awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(30));
    assertThat(done.attempts()).isEqualTo(3);
    assertThat(done.errors()).hasSize(2);
    assertThat(done.errors().get(0).message()).contains("failing attempt 1");
    assertThat(count("SELECT count(*) FROM effects")).isEqualTo(1);
  }

  // ------------------------------------------------------------------ cancel

  @ParameterizedTest(name = "{0}")
  @EnumSource(Mode.class)
  void queuedAndRunningJobsAreCancelled(Mode mode) {
    CountDownLatch release = new CountDownLatch(1);
    releases.add(release);
    AtomicInteger started = new AtomicInteger();
    JobWorker.Builder builder = worker(mode, "pgb-cancel");
    if (mode == Mode.LISTEN_DIRECT) {
      // Heartbeats far apart: the cancellation can only arrive in time through the direct LISTEN.
      builder
          .heartbeatInterval(Duration.ofSeconds(20))
          .workerDeadAfter(Duration.ofMinutes(1))
          .staleThreshold(Duration.ofMinutes(5));
    }
    start(builder.register(WAITS_FOR_CANCEL, (ctx, p) -> {
      started.incrementAndGet();
      // Returns only once the worker saw the cancellation (or the test ended): it cannot succeed by
      // itself.
      while (!ctx.isCancelled() && !release.await(20, TimeUnit.MILLISECONDS)) {
        // waiting
      }
      return null;
    }));

    UUID scheduled = pooledClient
        .enqueue(
            WAITS_FOR_CANCEL,
            new Numbered(1),
            EnqueueOptions.builder().delay(Duration.ofHours(1)).build())
        .job()
        .id();
    assertThat(pooledClient.cancel(scheduled))
        .isEqualTo(new CancelResult(CancelResult.Outcome.CANCELLED, JobState.CANCELLED));

    UUID running = pooledClient.enqueue(WAITS_FOR_CANCEL, new Numbered(2)).job().id();
    awaitState(running, JobState.RUNNING);
    await().atMost(Duration.ofSeconds(10)).until(() -> started.get() == 1);
    assertThat(pooledClient.cancel(running).outcome())
        .isEqualTo(CancelResult.Outcome.PENDING_ON_WORKER);
    // Polling only: the next heartbeat (every 500 ms) carries the flag. LISTEN: the notification
    // does.
    Job cancelled = awaitState(
        running, JobState.CANCELLED, Duration.ofSeconds(mode == Mode.LISTEN_DIRECT ? 8 : 10));
    assertThat(release.getCount())
        .as("the handler was not released by the test")
        .isEqualTo(1);
    assertThat(cancelled.attempts()).isEqualTo(1);
    assertThat(client.get(scheduled).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
    assertThat(started.get()).as("the cancelled scheduled job never ran").isEqualTo(1);
  }

  // ------------------------------------------------------------------ outage

  @ParameterizedTest(name = "{0}")
  @EnumSource(Mode.class)
  void jobsEndExactlyOnceWhenThePoolerIsKilledAndRestartedMidRun(Mode mode) {
    int jobs = 1_000;
    List<JobWorker> workers = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      workers.add(start(worker(mode, "pgb-outage-" + i)
          .queue(JobType.DEFAULT_QUEUE, 8)
          .register(OUTAGE, (ctx, p) -> {
            Thread.sleep(10);
            return recordEffect(ctx);
          })));
    }
    List<UUID> ids = pooledClient.enqueueAll(
        OUTAGE, payloads(jobs), EnqueueOptions.builder().maxAttempts(25).build());
    await("a first part of the jobs done")
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> count("SELECT count(*) FROM effects") >= 100);

    bouncer.kill();
    long killedNanos = System.nanoTime();
    long doneAtKill = count("SELECT count(*) FROM effects");
    // The outage lasts until the workers noticed: without a heartbeat for nearly the dead-after
    // time they stop claiming and stop their handlers (fenced).
    await("the workers fenced themselves")
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(50))
        .until(() -> workers.stream().allMatch(JobWorker::isFenced));
    assertThat(doneAtKill).as("jobs left for after the outage").isLessThan(jobs);
    bouncer.restart();
    long restartedNanos = System.nanoTime();

    await("all " + jobs + " jobs succeeded after the pooler came back")
        .atMost(Duration.ofMinutes(2))
        .pollInterval(Duration.ofMillis(200))
        .until(() ->
            count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'") == jobs);
    System.out.printf(
        "pgbouncer outage (%s): %d of %d jobs done at the kill, down %.1f s, the rest done %.1f s after"
            + " the restart; %d jobs needed more than one attempt%n",
        mode,
        doneAtKill,
        jobs,
        (restartedNanos - killedNanos) / 1e9,
        (System.nanoTime() - restartedNanos) / 1e9,
        count("SELECT count(*) FROM pgjobs.finished_jobs WHERE attempts > 1"));
    workers.forEach(JobWorker::close);
    assertEveryJobRanExactlyOnce(ids, OUTAGE);
    assertThat(workers).noneSatisfy(w -> assertThat(w.isFenced()).isTrue());
  }

  // ------------------------------------------------------------------ how the worker hears of work

  @Test
  void listenOnADirectConnectionWakesTheWorkerLongBeforeItsPollInterval() {
    JobWorker w = start(worker(Mode.LISTEN_DIRECT, "pgb-wake")
        .pollInterval(Duration.ofMinutes(10))
        .register(EFFECT, (ctx, p) -> recordEffect(ctx)));
    await().atMost(Duration.ofSeconds(10)).until(w::isListening);

    // Enqueued through the pooler: its NOTIFY commits with the insert, in one pooled transaction.
    UUID id = pooledClient.enqueue(EFFECT, new Numbered(1)).job().id();
    awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(10));
  }

  @Test
  void pollingOnlyNeverListensAndStillRunsJobs() {
    JobWorker w = start(
        worker(Mode.POLLING_ONLY, "pgb-poll").register(EFFECT, (ctx, p) -> recordEffect(ctx)));
    UUID id = pooledClient.enqueue(EFFECT, new Numbered(1)).job().id();
    awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(10));
    assertThat(w.isListening()).isFalse();
  }

  @Test
  void migrationsRunThroughThePooler() {
    JobClient fresh = JobClient.builder(bouncer.newDataSource(2))
        .schema("pgb_migrated")
        .knownTypes(NUMBERED)
        .build();
    fresh.migrate();
    fresh.migrate(); // up to date: nothing to do
    assertThat(count("SELECT count(*) FROM pgb_migrated.pgjobs_schema_history WHERE success"))
        .isEqualTo(count("SELECT count(*) FROM pgjobs.pgjobs_schema_history WHERE success"));
    // Flyway's lock was transaction-level: a session-level one would stay on a pooled backend, held
    // forever.
    assertThat(count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
            + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"))
        .isZero();
    UUID id = fresh.enqueue(NUMBERED, new Numbered(7)).job().id();
    assertThat(count("SELECT count(*) FROM pgb_migrated.jobs WHERE id = '" + id + "'"))
        .isEqualTo(1);
  }

  @Test
  void listenOffAndAListenDataSourceContradictEachOther() {
    DataSource direct = db.dataSource();
    assertThatThrownBy(() -> JobWorker.builder(db.dataSource())
            .listen(false)
            .listenDataSource(direct)
            .register(EFFECT, (ctx, p) -> null)
            .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("listen(false) and a listenDataSource");
  }
}
