package io.pgjobs.example;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobDefaults;
import io.pgjobs.JobFilter;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.Priority;
import io.pgjobs.QueueCounts;
import io.pgjobs.RetryPolicy;
import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;

/**
 * The README's runnable example: creates the database and schema if missing, defines two job types,
 * enqueues jobs (single, bulk, scheduled, prioritised, idempotent), runs them with a worker and prints
 * what happened. Database: {@code DATABASE_URL}, else {@value DatabaseUrl#DEFAULT}.
 */
public final class QuickStart {

  /** A greeting; its defaults come from the annotation. */
  @JobDefaults(name = "greet", queue = "default", maxAttempts = 3, timeout = "10s")
  public record Greet(String name) {}

  /** A job that fails on its first attempt, to show retries. */
  public record Flaky(int id) {}

  static final JobType<Greet> GREET = JobType.of(Greet.class);
  static final JobType<Flaky> FLAKY =
      JobType.of("flaky", Flaky.class).withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(500)));

  private QuickStart() {}

  public static void main(String[] args) throws Exception {
    String url = System.getenv().getOrDefault("DATABASE_URL", DatabaseUrl.DEFAULT);
    DatabaseUrl database = DatabaseUrl.parse(url);
    if (database.createDatabaseIfMissing()) {
      System.out.println("created database " + database.database());
    }
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(database.jdbcUrl());
    config.setDataSourceProperties(database.properties());
    config.setMaximumPoolSize(20);
    try (HikariDataSource dataSource = new HikariDataSource(config)) {
      JobClient client = JobClient.builder(dataSource).knownTypes(GREET, FLAKY).build();
      client.migrate();

      List<UUID> ids = new ArrayList<>();
      ids.add(client.enqueue(GREET, new Greet("Ada")).job().id());
      ids.add(client
          .enqueue(
              GREET,
              new Greet("Grace"),
              EnqueueOptions.builder()
                  .priority(Priority.CRITICAL)
                  .context("quickstart")
                  .build())
          .job()
          .id());
      ids.add(client
          .enqueue(
              GREET,
              new Greet("later"),
              EnqueueOptions.builder().delay(Duration.ofSeconds(2)).build())
          .job()
          .id());
      String key = "quickstart-" + Instant.now().toEpochMilli();
      ids.add(client
          .enqueue(
              GREET,
              new Greet("once"),
              EnqueueOptions.builder().idempotencyKey(key).build())
          .job()
          .id());
      boolean replayed = client
          .enqueue(
              GREET,
              new Greet("once"),
              EnqueueOptions.builder().idempotencyKey(key).build())
          .replayed();
      System.out.println(
          "second enqueue with the same idempotency key replayed the first: " + replayed);
      ids.addAll(client.enqueueAll(
          GREET,
          IntStream.range(0, 100).mapToObj(i -> new Greet("bulk-" + i)).toList(),
          EnqueueOptions.DEFAULTS));
      ids.add(client.enqueue(FLAKY, new Flaky(1)).job().id());

      JobWorker worker = JobWorker.builder(dataSource)
          .register(GREET, (ctx, greet) -> {
            ctx.progress(50, "greeting " + greet.name());
            return Map.of("greeting", "Hello, " + greet.name() + "!");
          })
          .register(FLAKY, (ctx, flaky) -> {
            if (!ctx.isRetry()) {
              throw new IllegalStateException("first attempts of flaky jobs fail");
            }
            return Map.of("attempt", ctx.attempt());
          })
          .queue("default", 10)
          .build()
          .start();

      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (System.nanoTime() < deadline && !allFinished(client, ids)) {
        Thread.sleep(100); // a demo waiting for its own jobs; tests use deadlines, not sleeps
      }
      worker.close();

      for (Job job :
          client.list(JobFilter.builder().type("flaky").limit(1).build()).jobs()) {
        System.out.printf(
            "flaky job %s: %s after %d attempts, errors kept: %d%n",
            job.id(), job.state().value(), job.attempts(), job.errors().size());
      }
      Job first = client.get(ids.get(1)).orElseThrow();
      System.out.printf(
          "job %s (%s): %s, output %s%n",
          first.id(), first.type(), first.state().value(), first.output());
      for (QueueCounts counts : client.countByQueue()) {
        System.out.printf("queue %s: %s%n", counts.queue(), counts.counts());
      }
      boolean ok = allFinished(client, ids);
      System.out.println(
          ok ? "all " + ids.size() + " jobs finished" : "some jobs did not finish in 30 s");
      System.exit(ok ? 0 : 1);
    }
  }

  private static boolean allFinished(JobClient client, List<UUID> ids) {
    return ids.stream()
        .allMatch(id -> client.get(id).map(j -> j.state() == JobState.SUCCEEDED).orElse(false));
  }
}
