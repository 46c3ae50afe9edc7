package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.lifecycle.Lifecycle.Work;
import io.pgjobs.maintenance.Maintenance;
import io.pgjobs.testkit.Exclusive;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Database outages during a 10,000-job run: every connection of the workers killed again and again, and
 * a restart of the PostgreSQL server itself. Pollers, listener and heartbeat back off and resume;
 * outcome writes retry; nothing is lost and nothing completes twice.
 */
@Tag(Tags.PROCESS)
@Tag(Tags.SOAK)
@Exclusive
class OutageTest extends LifecycleTestBase {
  private static final int JOBS = 10_000;
  private static final int KILL_ROUNDS = 10;

  private final List<JobWorker> ownWorkers = new ArrayList<>();
  private final List<HikariDataSource> ownPools = new ArrayList<>();
  private EmbeddedPostgres embedded;

  @AfterEach
  void closeEverything() throws IOException {
    ownWorkers.forEach(JobWorker::close);
    ownPools.forEach(HikariDataSource::close);
    if (embedded != null) {
      embedded.close();
    }
  }

  /** A worker of its own pool, as a separate process would have. */
  private JobWorker startWorker(String id, DataSource pool, Duration staleThreshold) {
    JobWorker worker = JobWorker.builder(pool)
        .workerId(id)
        .register(Lifecycle.WORK, Lifecycle.handler(id, true))
        .queue(JobType.DEFAULT_QUEUE, 8)
        .staleThreshold(staleThreshold)
        .heartbeatInterval(Duration.ofMillis(300))
        .leaseTtl(Duration.ofSeconds(2))
        .pollInterval(Duration.ofMillis(200))
        .shutdownGrace(Duration.ofSeconds(2))
        .build();
    ownWorkers.add(worker);
    return worker.start();
  }

  /** A query on a connection of its own: the pools' connections may be dead right now. */
  private static long countFresh(String url, String sql) {
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  @Test
  void runCompletesWithNothingLostOrDoubledWhileWorkerConnectionsAreKilledRepeatedly() {
    String url = db.jdbcUrl();
    client.enqueueAll(
        Lifecycle.WORK, Collections.nCopies(JOBS, Work.QUICK), EnqueueOptions.DEFAULTS);
    JobWorker w1 = startWorker("outage-w1", db.newDataSource(12), Duration.ofSeconds(3));
    JobWorker w2 = startWorker("outage-w2", db.newDataSource(12), Duration.ofSeconds(3));
    long startedAt = System.nanoTime();
    long terminated = 0;

    for (int round = 1; round <= KILL_ROUNDS; round++) {
      long target = (long) JOBS * round / (KILL_ROUNDS + 2);
      await("at least " + target + " jobs finished before round " + round)
          .pollDelay(Duration.ofSeconds(1))
          .pollInterval(Duration.ofMillis(100))
          .atMost(Duration.ofSeconds(120))
          .ignoreExceptions()
          .until(() -> countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs") >= target);
      // Every other session on the test database: the workers' claims, handlers' inserts,
      // completions, heartbeats, LISTEN and maintenance connections (and the test's own pool).
      terminated += countFresh(
          url,
          "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
              + " WHERE datname = current_database() AND pid <> pg_backend_pid()");
    }

    await("all " + JOBS + " jobs finished")
        .pollInterval(Duration.ofMillis(250))
        .atMost(Duration.ofSeconds(120))
        .ignoreExceptions()
        .until(() -> countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs") == JOBS);
    double seconds = (System.nanoTime() - startedAt) / 1e9;

    assertThat(terminated).as("sessions terminated").isGreaterThanOrEqualTo(KILL_ROUNDS * 4L);
    assertCompleteRun(sql -> countFresh(url, sql), JOBS);
    await("both workers listen again")
        .atMost(Duration.ofSeconds(30))
        .until(() -> w1.isListening() && w2.isListening());
    System.out.printf(
        "connection kills: %d jobs, %d rounds, %d sessions terminated, %.1f s; %d effects,"
            + " %d jobs ran more than once, max attempts %d%n",
        JOBS,
        KILL_ROUNDS,
        terminated,
        seconds,
        countFresh(url, "SELECT count(*) FROM effects"),
        countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs WHERE attempts > 1"),
        countFresh(url, "SELECT max(attempts) FROM pgjobs.finished_jobs"));
  }

  @Test
  void runCompletesWithNothingLostOrDoubledWhenPostgresRestartsMidRun() throws Exception {
    int port = freePort();
    Path dataDirectory = Path.of("target", "outage-restart-pg").toAbsolutePath();
    deleteRecursively(dataDirectory);
    embedded = startEmbedded(port, dataDirectory);
    String url = "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
    JobClient embeddedClient = JobClient.builder(pool(url, "restart-client", 3)).build();
    embeddedClient.migrate();
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement()) {
      st.execute(Lifecycle.EFFECTS_DDL);
      st.execute(Lifecycle.STARTS_DDL);
    }
    embeddedClient.enqueueAll(
        Lifecycle.WORK, Collections.nCopies(JOBS, Work.QUICK), EnqueueOptions.DEFAULTS);
    // Stale threshold longer than the outage: live jobs are not rescued merely because the database
    // was away.
    JobWorker w1 = startWorker("restart-w1", pool(url, "restart-w1", 12), Duration.ofSeconds(8));
    JobWorker w2 = startWorker("restart-w2", pool(url, "restart-w2", 12), Duration.ofSeconds(8));
    long startedAt = System.nanoTime();
    await("a third of the jobs finished")
        .pollInterval(Duration.ofMillis(100))
        .atMost(Duration.ofSeconds(120))
        .until(() -> countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs") >= JOBS / 3);

    embedded.close(); // pg_ctl stop -m fast: every session is cut off mid-run
    embedded = null;
    await("both workers lose their LISTEN connection")
        .atMost(Duration.ofSeconds(20))
        .until(() -> !w1.isListening() && !w2.isListening());
    long beats1 = w1.heartbeats();
    long beats2 = w2.heartbeats();
    await("no heartbeat gets through while the server is down")
        .during(Duration.ofSeconds(3))
        .atMost(Duration.ofSeconds(5))
        .until(() -> w1.heartbeats() == beats1 && w2.heartbeats() == beats2);

    embedded = startEmbedded(port, dataDirectory); // same port, same data
    await("all " + JOBS + " jobs finished after the restart")
        .pollInterval(Duration.ofMillis(250))
        .atMost(Duration.ofSeconds(120))
        .ignoreExceptions()
        .until(() -> countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs") == JOBS);
    double seconds = (System.nanoTime() - startedAt) / 1e9;

    assertCompleteRun(sql -> countFresh(url, sql), JOBS);
    assertThat(w1.heartbeats()).isGreaterThan(beats1);
    assertThat(w2.heartbeats()).isGreaterThan(beats2);
    await("both workers listen again")
        .atMost(Duration.ofSeconds(30))
        .until(() -> w1.isListening() && w2.isListening());
    System.out.printf(
        "restart: %d jobs, %.1f s; %d effects, %d jobs ran more than once, max attempts %d%n",
        JOBS,
        seconds,
        countFresh(url, "SELECT count(*) FROM effects"),
        countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs WHERE attempts > 1"),
        countFresh(url, "SELECT max(attempts) FROM pgjobs.finished_jobs"));
  }

  /**
   * A server down for twice the dead-worker threshold, and a worker whose network comes back a moment
   * after the server (maintenance runs in another process, which sees the server first): the live
   * worker's jobs (finished while the server was away, their outcomes written when it is back) are not
   * rescued and run again, because silence counts only while the server is up; a worker that died
   * meanwhile is still rescued, one threshold after the server is back.
   */
  @Test
  void aServerDownForTwiceTheDeadWorkerThresholdRerunsNothingAndStillRescuesTheDead()
      throws Exception {
    int port = freePort();
    Path dataDirectory = Path.of("target", "outage-long-pg").toAbsolutePath();
    deleteRecursively(dataDirectory);
    embedded = startEmbedded(port, dataDirectory);
    String url = "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
    JobClient embeddedClient = JobClient.builder(pool(url, "long-client", 3)).build();
    embeddedClient.migrate();
    int jobs = 2_000;
    embeddedClient.enqueueAll(
        Lifecycle.WORK, Collections.nCopies(jobs, Work.QUICK), EnqueueOptions.DEFAULTS);
    // A worker that dies during the outage: its row and its running job, as a killed process leaves
    // them.
    UUID orphan = embeddedClient
        .enqueue(
            Lifecycle.WORK,
            Work.QUICK,
            EnqueueOptions.builder().delay(Duration.ofHours(1)).build())
        .job()
        .id();
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement()) {
      st.execute(
          "INSERT INTO pgjobs.workers (id, host, pid, queues, job_types, started_at, last_heartbeat)"
              + " VALUES ('dies-in-outage', 'h', 1, '{\"default\": 1}', '[\"work\"]', now(), now())");
      st.execute(
          "UPDATE pgjobs.jobs SET state = 'running', attempts = 1, run_at = now(), locked_by = 'dies-in-outage',"
              + " claim_token = 1, heartbeat_at = now() WHERE id = '" + orphan + "'");
    }
    // Long enough for the server's own start (counted from its postmaster's), the 1.5 s the worker
    // stays cut off after it, and the worker's return: 5 s was too short beside other test JVMs on
    // two cores (the worker came back after the rescue, and its jobs ran twice).
    Duration deadAfter = Duration.ofSeconds(8);
    try (TcpProxy workerNetwork = new TcpProxy("127.0.0.1", port);
        Maintenance maintenance = Maintenance.builder(pool(url, "long-maintenance", 3))
            .holderId("long-maintenance")
            .workerDeadAfter(deadAfter)
            .leaseTtl(Duration.ofSeconds(2))
            .build()) {
      maintenance.start();
      Map<UUID, AtomicInteger> runs = new ConcurrentHashMap<>();
      JobWorker worker = JobWorker.builder(pool(
              "jdbc:postgresql://127.0.0.1:" + workerNetwork.port() + "/postgres?user=postgres",
              "long-w1",
              12))
          .workerId("long-w1")
          .register(Lifecycle.WORK, (ctx, work) -> {
            runs.computeIfAbsent(ctx.jobId(), id -> new AtomicInteger()).incrementAndGet();
            return null;
          })
          .queue(JobType.DEFAULT_QUEUE, 8)
          .maintenance(false)
          .workerDeadAfter(deadAfter)
          .heartbeatInterval(Duration.ofMillis(300))
          .pollInterval(Duration.ofMillis(200))
          .shutdownGrace(Duration.ofSeconds(2))
          .build();
      ownWorkers.add(worker);
      worker.start();
      await("a fifth of the jobs finished")
          .pollInterval(Duration.ofMillis(20))
          .atMost(Duration.ofSeconds(60))
          .until(() -> countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs") >= jobs / 5);

      embedded.close(); // pg_ctl stop -m fast
      embedded = null;
      workerNetwork.cut();
      long beats = worker.heartbeats();
      await("the server stays down for twice the dead-worker threshold")
          .during(deadAfter.multipliedBy(2))
          .atMost(deadAfter.multipliedBy(2).plusSeconds(2))
          .until(() -> worker.heartbeats() == beats);
      assertThat(worker.isFenced()).as("the worker fenced itself meanwhile").isTrue();

      embedded = startEmbedded(port, dataDirectory);
      // The worker's network comes back 1.5 s after the server: maintenance has run its rescue
      // meanwhile.
      await("the server answers")
          .atMost(Duration.ofSeconds(10))
          .ignoreExceptions()
          .until(() -> countFresh(url, "SELECT 1") == 1);
      long passes = maintenance.passes();
      await("maintenance has run, the worker still cut off")
          .pollDelay(Duration.ofMillis(1_500))
          .atMost(Duration.ofSeconds(10))
          .until(() -> maintenance.passes() > passes);
      workerNetwork.restore();
      await("every job finished after the restart")
          .pollInterval(Duration.ofMillis(250))
          .atMost(Duration.ofSeconds(60))
          .ignoreExceptions()
          .until(() -> countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs") == jobs + 1);

      assertThat(countFresh(
              url, "SELECT count(*) FROM pgjobs.finished_jobs WHERE state <> 'succeeded'"))
          .isZero();
      assertThat(runs).hasSize(jobs + 1);
      assertThat(runs.entrySet())
          .allSatisfy(
              e -> assertThat(e.getValue().get()).as("runs of %s", e.getKey()).isEqualTo(1));
      assertThat(countFresh(
              url,
              "SELECT count(*) FROM pgjobs.finished_jobs WHERE errors::text LIKE '%worker_lost%'"))
          .as("rescued: only the dead worker's job")
          .isEqualTo(1);
      assertThat(countFresh(
              url,
              "SELECT count(*) FROM pgjobs.finished_jobs WHERE id = '" + orphan
                  + "' AND errors::text LIKE '%dies-in-outage%'"))
          .isEqualTo(1);
    }
  }

  private HikariDataSource pool(String url, String name, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setPoolName(name);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(1);
    config.setConnectionTimeout(
        1_000); // a worker must not hang 30 s per connection while the server is away
    config.setValidationTimeout(500);
    HikariDataSource pool = new HikariDataSource(config);
    ownPools.add(pool);
    return pool;
  }

  private static EmbeddedPostgres startEmbedded(int port, Path dataDirectory) throws IOException {
    return EmbeddedPostgres.builder()
        .setPort(port)
        .setDataDirectory(dataDirectory)
        .setCleanDataDirectory(false)
        .setServerConfig("synchronous_commit", "on") // durable commits, as in production
        .start();
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private static void deleteRecursively(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
