package io.pgjobs.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.testkit.Await;
import io.pgjobs.testkit.JvmProcess;
import io.pgjobs.testkit.PgBouncer;
import io.pgjobs.testkit.Tags;
import io.pgjobs.testkit.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@code pgjobs work} with {@code database_url} pointing at PgBouncer in transaction mode
 * ({@code prepareThreshold=0}) and {@code listen_database_url} either a direct URL or {@code off}.
 */
@Tag(Tags.PROCESS)
@Tag(Tags.PGBOUNCER)
class PgBouncerWorkTest {
  private static final Duration DEADLINE = Duration.ofSeconds(90);
  private static TestDatabase db;
  private static PgBouncer bouncer;
  private JvmProcess worker;

  @BeforeAll
  static void start() {
    db = TestDatabase.create();
    bouncer = PgBouncer.start(db, 3);
  }

  @AfterAll
  static void stop() {
    if (bouncer != null) {
      bouncer.close();
    }
    if (db != null) {
      db.close();
    }
  }

  @AfterEach
  void stopWorker() {
    if (worker != null) {
      worker.close();
    }
  }

  private JvmProcess work(String listenDatabaseUrl, String pollInterval) {
    JvmProcess process = JvmProcess.start(
        "work-pgbouncer",
        Main.class,
        List.of("work", "--concurrency", "2", "--metrics-bind", "off"),
        Map.of(
            "DATABASE_URL", bouncer.jdbcUrl(),
            "PGJOBS_LISTEN_DATABASE_URL", listenDatabaseUrl,
            "PGJOBS_POLL_INTERVAL", pollInterval));
    await()
        .atMost(DEADLINE)
        .until(
            () -> process.output().contains("running on") || !process.process().isAlive());
    assertThat(process.process().isAlive()).as(process.output()).isTrue();
    return process;
  }

  private static JobClient pooledClient() {
    return JobClient.builder(bouncer.newDataSource(2)).knownTypes(EchoJobs.ECHO).build();
  }

  @Test
  void aDirectListenUrlWakesTheWorkerThroughNotificationsLongBeforeItsPollInterval() {
    worker = work(db.jdbcUrl(), "1h");
    assertThat(worker.output())
        .contains("LISTEN for new jobs and cancellations on the listen data source");
    JobClient client = pooledClient();
    // The worker polled once at start (finding nothing); the next poll is an hour away.
    await().atMost(DEADLINE).until(() -> client.workers().size() == 1);
    await("the worker's LISTEN connection")
        .atMost(DEADLINE)
        .until(() -> db.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'")
            >= 1);

    UUID id = client
        .enqueue(EchoJobs.ECHO, new EchoJobs.Echo("through pgbouncer"))
        .job()
        .id();
    Await.awaitState(client::get, id, Job::state, JobState.SUCCEEDED, Duration.ofSeconds(20));
  }

  @Test
  void listenOffPollsOnlyAndSaysSoAtStartup() {
    worker = work("off", "200ms");
    assertThat(worker.output()).contains("polling only, every 200ms");
    JobClient client = pooledClient();
    UUID id = client.enqueue(EchoJobs.ECHO, new EchoJobs.Echo("polled")).job().id();
    Await.awaitState(client::get, id, Job::state, JobState.SUCCEEDED, Duration.ofSeconds(20));
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"))
        .as("sessions that ran LISTEN")
        .isZero();
  }
}
