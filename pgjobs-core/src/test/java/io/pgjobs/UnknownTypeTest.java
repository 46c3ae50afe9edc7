package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * A job whose type the worker has no handler for is never dropped: within the unknown-type grace it goes
 * back to the queue (another worker may know it) without spending an attempt; after the grace it fails
 * with an error naming the type and the types the worker knows.
 */
class UnknownTypeTest extends PgJobsTestBase {
  static final JobType<Numbered> OTHER = JobType.of("other", Numbered.class);

  private JobWorker startWorker(Duration unknownTypeGrace) {
    JobWorker.Builder builder = worker().pollInterval(Duration.ofMillis(50)).register(NUMBERED, (ctx, p) -> null);
    if (unknownTypeGrace != null) {
      builder.unknownTypeGrace(unknownTypeGrace);
    }
    return start(builder);
  }

  private static UUID enqueueMystery() {
    return client.enqueue("mystery", Map.of("x", 1), EnqueueOptions.DEFAULTS).job().id();
  }

  @Test
  void jobOfAnUnknownTypeWithinTheGraceGoesBackToTheQueueWithoutSpendingAnAttempt() {
    Duration grace = Duration.ofMinutes(1);
    UUID mystery = enqueueMystery();
    Job enqueued = client.get(mystery).orElseThrow();
    startWorker(grace);

    // Claimed and given back: run_at moves at least a second past its creation.
    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() -> {
      Job j = client.get(mystery).orElseThrow();
      return j.attemptedAt() != null && j.state() == JobState.QUEUED
          && j.runAt().isAfter(j.createdAt().plusMillis(900));
    });

    Job waiting = client.get(mystery).orElseThrow();
    assertThat(waiting.state()).isEqualTo(JobState.QUEUED);
    assertThat(waiting.attempts()).isZero();
    assertThat(waiting.errors()).isEmpty();
    assertThat(waiting.lockedBy()).isNull();
    assertThat(waiting.maxAttempts()).isEqualTo(enqueued.maxAttempts());
    assertThat(waiting.runAt()).isBeforeOrEqualTo(waiting.createdAt().plus(grace).plusSeconds(1));

    // The worker still runs the jobs it knows, in the same queue.
    UUID known = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    awaitState(known, JobState.SUCCEEDED);
    assertThat(client.get(mystery).orElseThrow().state()).isEqualTo(JobState.QUEUED);
  }

  @Test
  void jobOfAnUnknownTypeIsPickedUpByAWorkerThatKnowsIt() {
    UUID mystery = enqueueMystery();
    JobWorker ignorant = startWorker(Duration.ofMinutes(1));
    await().atMost(Duration.ofSeconds(20)).until(() -> client.get(mystery).orElseThrow().attemptedAt() != null
        && client.get(mystery).orElseThrow().state() == JobState.QUEUED);
    ignorant.close();
    db.execute("UPDATE pgjobs.jobs SET run_at = now() WHERE id = '" + mystery + "'"); // skip the wait

    JobType<JsonNode> mysteryType = JobType.of("mystery", JsonNode.class);
    start(worker().pollInterval(Duration.ofMillis(50)).register(mysteryType, (ctx, p) -> Map.of("x", p.get("x").asInt())));

    Job done = awaitState(mystery, JobState.SUCCEEDED);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.errors()).isEmpty();
    assertThat(done.output().get("x").asInt()).isEqualTo(1);
  }

  @Test
  void jobOfAnUnknownTypeFailsOnceTheGraceIsOverWithAnErrorNamingTheTypeAndTheKnownTypes() {
    UUID mystery = enqueueMystery();
    JobWorker worker = start(worker()
        .pollInterval(Duration.ofMillis(50))
        .unknownTypeGrace(Duration.ZERO)
        .register(NUMBERED, (ctx, p) -> null)
        .register(OTHER, (ctx, p) -> null));

    Job failed = awaitState(mystery, JobState.FAILED);

    assertThat(failed.attempts()).isEqualTo(1);
    assertThat(failed.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("unknown_type");
      assertThat(e.attempt()).isEqualTo(1);
      assertThat(e.message()).contains("'mystery'").contains("known types: numbered, other");
      assertThat(e.worker()).isEqualTo(worker.workerId());
    });
  }

  @Test
  void gracePeriodCountsFromTheJobsCreation() {
    UUID mystery = enqueueMystery();
    // Created longer ago than the default grace of 5 minutes.
    db.execute("UPDATE pgjobs.jobs SET created_at = now() - interval '10 minutes' WHERE id = '" + mystery + "'");
    startWorker(null);

    Job failed = awaitState(mystery, JobState.FAILED);

    assertThat(failed.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("unknown_type");
      assertThat(e.message()).contains("'mystery'").contains("numbered").contains("PT5M");
    });
  }

  @Test
  void applicationClockAheadOfTheDatabasesDoesNotFailANewJob() throws Exception {
    try (SkewedDatabaseClock skewed = new SkewedDatabaseClock(db, Duration.ofMinutes(5))) {
      UUID mystery = enqueueMystery();
      // Created and due now by the database's clock: five minutes ago by the worker's.
      try (java.sql.Connection c = skewed.dataSource().getConnection();
          java.sql.Statement st = c.createStatement()) {
        st.execute("UPDATE pgjobs.jobs SET created_at = now(), run_at = now() WHERE id = '" + mystery + "'");
      }
      JobWorker worker = start(JobWorker.builder(skewed.dataSource()).shutdownGrace(Duration.ofSeconds(2))
          .pollInterval(Duration.ofMillis(50)).unknownTypeGrace(Duration.ofMinutes(1))
          .register(NUMBERED, (ctx, p) -> null));

      await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() -> {
        Job j = client.get(mystery).orElseThrow();
        return j.attemptedAt() != null && j.state() != JobState.RUNNING;
      });
      worker.close();

      Job waiting = client.get(mystery).orElseThrow();
      assertThat(waiting.state()).as("within the grace by the database's clock").isEqualTo(JobState.QUEUED);
      assertThat(waiting.attempts()).isZero();
      assertThat(waiting.errors()).isEmpty();
    }
  }
}
