package io.pgjobs.cli.demo;

import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.testkit.Await;
import io.pgjobs.testkit.TestDatabase;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

/**
 * Base of the demo kinds' end-to-end tests: a throw-away database per class, a client that knows the
 * demo types, and real {@link JobWorker}s running {@link DemoJobs#registrations}.
 */
abstract class DemoJobsTestBase {
  static TestDatabase db;
  static JobClient client;
  private final List<JobWorker> workers = new ArrayList<>();

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create();
    client = JobClient.builder(db.dataSource()).knownTypes(DemoJobs.types()).build();
    client.migrate();
  }

  @AfterAll
  static void dropDatabase() {
    if (db != null) {
      db.close();
    }
  }

  /**
   * Closes the test's workers and drops the jobs it left unfinished: the database is the class's, and a
   * job left retrying (SendEmailJobTest's unreachable server) would otherwise run on the next test's worker
   * against that test's SMTP server — seen on a loaded machine, where the next test outlasted the retry's
   * one-second wait and its server received two messages.
   */
  @AfterEach
  void closeWorkersAndDropUnfinishedJobs() {
    workers.forEach(JobWorker::close);
    workers.clear();
    db.execute("DELETE FROM pgjobs.jobs");
  }

  /** Starts a worker running the demo kinds configured with {@code settings} (setting name to text). */
  JobWorker startWorker(Map<String, String> settings) {
    JobWorker.Builder builder = JobWorker.builder(db.dataSource())
        .registerAll(DemoJobs.registrations(Settings.of(settings)))
        .queue("default", 4)
        .queue(WebhookDeliveryJob.QUEUE, 4)
        .pollInterval(Duration.ofMillis(100))
        .shutdownGrace(Duration.ofSeconds(5));
    // As `pgjobs work` and the demo declare them: deliveries limited per target host.
    DemoJobs.limits().forEach(builder::limits);
    JobWorker worker = builder.build();
    workers.add(worker);
    return worker.start();
  }

  /** Waits until the job is in {@code state} (30 s at most, {@link Await}) and returns it. */
  static Job awaitState(UUID id, JobState state) {
    return Await.awaitState(client::get, id, Job::state, state, Duration.ofSeconds(30));
  }
}
