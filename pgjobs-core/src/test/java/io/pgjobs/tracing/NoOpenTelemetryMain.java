package io.pgjobs.tracing;

import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Run by {@link TracingTest} in a JVM whose class path has no OpenTelemetry jar: enqueues jobs (one, and
 * a bulk of three), runs them with a worker, and prints {@link #OK} when all succeeded; exits 1
 * otherwise. Names no OpenTelemetry type itself.
 */
public final class NoOpenTelemetryMain {
  static final String OK = "PGJOBS-NO-OTEL-OK";
  static final String API_ABSENT = "PGJOBS-OTEL-API-ABSENT";
  static final String TRACING_NONE = "PGJOBS-TRACING-NONE";

  private NoOpenTelemetryMain() {}

  public static void main(String[] args) throws Exception {
    try {
      Class.forName("io.opentelemetry.api.OpenTelemetry");
      System.out.println("the OpenTelemetry API is on the class path");
    } catch (ClassNotFoundException expected) {
      System.out.println(API_ABSENT);
    }
    if (JobTracing.detect() == JobTracing.NONE) {
      System.out.println(TRACING_NONE);
    }
    PGSimpleDataSource dataSource = new PGSimpleDataSource();
    dataSource.setURL(args[0]);
    JobClient client = JobClient.builder(dataSource).build();
    List<UUID> ids = new ArrayList<>();
    ids.add(client
        .enqueue(PgJobsTestBase.NUMBERED, new PgJobsTestBase.Numbered(1))
        .job()
        .id());
    ids.addAll(client.enqueueAll(
        PgJobsTestBase.NUMBERED,
        List.of(
            new PgJobsTestBase.Numbered(2),
            new PgJobsTestBase.Numbered(3),
            new PgJobsTestBase.Numbered(4)),
        EnqueueOptions.DEFAULTS));
    try (JobWorker worker = JobWorker.builder(dataSource)
        .pollInterval(Duration.ofMillis(50))
        .shutdownGrace(Duration.ofSeconds(2))
        .register(PgJobsTestBase.NUMBERED, (ctx, p) -> p.n() * 10)
        .build()) {
      worker.start();
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> ids.stream()
              .allMatch(id -> client.get(id).map(Job::state).orElse(null) == JobState.SUCCEEDED));
      System.out.println(OK + " " + ids.size());
      System.exit(0);
    } catch (RuntimeException e) {
      e.printStackTrace(System.out);
    }
    System.out.println(
        "jobs not all succeeded: " + ids.stream().map(client::get).toList());
    System.exit(1);
  }
}
