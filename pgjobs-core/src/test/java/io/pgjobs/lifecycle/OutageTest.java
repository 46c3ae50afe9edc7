package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.lifecycle.Lifecycle.Work;
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
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Database outages during a 10,000-job run: every connection of the workers killed again and again, and
 * a restart of the PostgreSQL server itself. Pollers, listener and heartbeat back off and resume;
 * outcome writes retry; nothing is lost and nothing completes twice.
 */
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
    JobWorker worker =
        JobWorker.builder(pool)
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
    client.enqueueAll(Lifecycle.WORK, Collections.nCopies(JOBS, Work.QUICK), EnqueueOptions.DEFAULTS);
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
      // Every other session on the test database: the workers' claims, handlers' inserts, completions,
      // heartbeats, LISTEN and maintenance connections (and the test's own pool).
      terminated += countFresh(url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
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
    await("both workers listen again").atMost(Duration.ofSeconds(30)).until(() -> w1.isListening() && w2.isListening());
    System.out.printf("connection kills: %d jobs, %d rounds, %d sessions terminated, %.1f s; %d effects,"
            + " %d jobs ran more than once, max attempts %d%n",
        JOBS, KILL_ROUNDS, terminated, seconds, countFresh(url, "SELECT count(*) FROM effects"),
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
    embeddedClient.enqueueAll(Lifecycle.WORK, Collections.nCopies(JOBS, Work.QUICK), EnqueueOptions.DEFAULTS);
    // Stale threshold longer than the outage: live jobs are not rescued merely because the database was away.
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
    await("both workers listen again").atMost(Duration.ofSeconds(30)).until(() -> w1.isListening() && w2.isListening());
    System.out.printf("restart: %d jobs, %.1f s; %d effects, %d jobs ran more than once, max attempts %d%n",
        JOBS, seconds, countFresh(url, "SELECT count(*) FROM effects"),
        countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs WHERE attempts > 1"),
        countFresh(url, "SELECT max(attempts) FROM pgjobs.finished_jobs"));
  }

  private HikariDataSource pool(String url, String name, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setPoolName(name);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(1);
    config.setConnectionTimeout(1_000); // a worker must not hang 30 s per connection while the server is away
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
