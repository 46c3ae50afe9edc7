package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.maintenance.Maintenance;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * A worker claims only the job types it has a handler for: a job of another type waits, untouched, for a
 * worker that runs it, and is never failed because the wrong worker claimed it. A due job whose type none of
 * the live workers serving its queue runs is failed by the maintenance leader once the unknown-type grace
 * is over, with an error naming the type and the types those workers run.
 */
class UnknownTypeTest extends PgJobsTestBase {
  static final JobType<Numbered> OTHER = JobType.of("other", Numbered.class);

  private static UUID enqueueMystery() {
    return client
        .enqueue("mystery", Map.of("x", 1), EnqueueOptions.DEFAULTS)
        .job()
        .id();
  }

  /** A maintenance leader of its own, so a test can count its passes. */
  private static Maintenance maintenance(Duration unknownTypeGrace) {
    return Maintenance.builder(db.dataSource())
        .unknownTypeGrace(unknownTypeGrace)
        .build()
        .start();
  }

  private static void awaitPasses(Maintenance maintenance, int more) {
    await().atMost(Duration.ofSeconds(20)).until(maintenance::isLeader);
    long passes = maintenance.passes();
    await().atMost(Duration.ofSeconds(30)).until(() -> maintenance.passes() >= passes + more);
  }

  @Test
  void aWorkerNeverClaimsAJobOfATypeItHasNoHandlerFor() {
    UUID mystery = enqueueMystery();
    Job enqueued = client.get(mystery).orElseThrow();
    start(worker()
        .pollInterval(Duration.ofMillis(50))
        .maintenance(false)
        .register(NUMBERED, (ctx, p) -> null));

    // A job of its own type, enqueued after the other one, runs: the worker claimed past the other
    // one.
    UUID known = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    awaitState(known, JobState.SUCCEEDED);

    Job waiting = client.get(mystery).orElseThrow();
    assertThat(waiting.state()).isEqualTo(JobState.QUEUED);
    assertThat(waiting.attemptedAt()).as("never claimed").isNull();
    assertThat(waiting.attempts()).isZero();
    assertThat(waiting.snoozes()).isZero();
    assertThat(waiting.errors()).isEmpty();
    assertThat(waiting.runAt()).isEqualTo(enqueued.runAt());
  }

  @Test
  void twoWorkersWithDifferentTypesOnOneQueueEachRunOnlyTheirOwn() {
    JobWorker numbers = start(worker()
        .pollInterval(Duration.ofMillis(50))
        .maintenance(false)
        .register(NUMBERED, (ctx, p) -> null));
    JobWorker others = start(worker()
        .pollInterval(Duration.ofMillis(50))
        .maintenance(false)
        .register(OTHER, (ctx, p) -> null));
    List<UUID> numbered = new ArrayList<>();
    List<UUID> other = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      numbered.add(client.enqueue(NUMBERED, new Numbered(i)).job().id());
      other.add(client.enqueue(OTHER, new Numbered(i)).job().id());
    }

    for (UUID id : numbered) {
      Job done = awaitState(id, JobState.SUCCEEDED);
      assertThat(done.lockedBy()).isEqualTo(numbers.workerId());
      assertThat(done.attempts()).isEqualTo(1);
      assertThat(done.snoozes()).isZero();
    }
    for (UUID id : other) {
      Job done = awaitState(id, JobState.SUCCEEDED);
      assertThat(done.lockedBy()).isEqualTo(others.workerId());
      assertThat(done.attempts()).isEqualTo(1);
      assertThat(done.snoozes()).isZero();
    }
  }

  /** At the limits: many registered types, each name of the longest length allowed (255 characters). */
  @Test
  void aWorkerWithThreeHundredLongestTypeNamesClaimsEachOfThem() {
    List<JobType<Numbered>> types = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      String prefix = "t" + i + ".";
      types.add(JobType.of(prefix + "x".repeat(255 - prefix.length()), Numbered.class));
    }
    JobWorker.Builder builder = worker().pollInterval(Duration.ofMillis(50)).maintenance(false);
    types.forEach(t -> builder.register(t, (ctx, p) -> null));
    start(builder);
    UUID mystery = enqueueMystery();

    List<UUID> ids = new ArrayList<>();
    for (int i : new int[] {0, 149, 299}) {
      ids.add(client.enqueue(types.get(i), new Numbered(i)).job().id());
    }
    for (UUID id : ids) {
      assertThat(awaitState(id, JobState.SUCCEEDED).attempts()).isEqualTo(1);
    }
    assertThat(client.get(mystery).orElseThrow().attemptedAt())
        .as("not one of its types")
        .isNull();
  }

  @Test
  void aJobOfAnUnknownTypeIsPickedUpByAWorkerThatKnowsIt() {
    UUID mystery = enqueueMystery();
    start(worker().pollInterval(Duration.ofMillis(50)).register(NUMBERED, (ctx, p) -> null));

    JobType<JsonNode> mysteryType = JobType.of("mystery", JsonNode.class);
    start(worker()
        .pollInterval(Duration.ofMillis(50))
        .register(mysteryType, (ctx, p) -> Map.of("x", p.get("x").asInt())));

    Job done = awaitState(mystery, JobState.SUCCEEDED);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.snoozes()).isZero();
    assertThat(done.errors()).isEmpty();
    assertThat(done.output().get("x").asInt()).isEqualTo(1);
  }

  @Test
  void aJobNoLiveWorkerOfItsQueueRunsFailsOnceTheGraceIsOverNamingTheTypeAndTheKnownTypes() {
    UUID mystery = enqueueMystery();
    JobWorker worker = start(worker()
        .pollInterval(Duration.ofMillis(50))
        .unknownTypeGrace(Duration.ZERO)
        .register(NUMBERED, (ctx, p) -> null)
        .register(OTHER, (ctx, p) -> null));

    Job failed = awaitState(mystery, JobState.FAILED);

    assertThat(failed.attempts()).as("never attempted").isZero();
    assertThat(failed.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("unknown_type");
      assertThat(e.attempt()).isZero();
      assertThat(e.errorClass()).isEqualTo("io.pgjobs.UnknownJobType");
      assertThat(e.message())
          .contains("'mystery'")
          .contains("queue 'default'")
          .contains("known types: numbered, other");
      assertThat(e.worker()).as("the maintenance leader").isEqualTo(worker.workerId());
    });
  }

  @Test
  void theGraceCountsFromTheJobsCreationByTheDatabasesClock() {
    UUID young = enqueueMystery();
    UUID old = enqueueMystery();
    // Created longer ago than the default grace of 5 minutes.
    db.execute("UPDATE pgjobs.jobs SET created_at = now() - interval '10 minutes' WHERE id = '"
        + old + "'");
    start(worker()
        .pollInterval(Duration.ofMillis(50))
        .maintenance(false)
        .register(NUMBERED, (ctx, p) -> null));
    try (Maintenance leader = maintenance(JobWorker.DEFAULT_UNKNOWN_TYPE_GRACE)) {
      Job failed = awaitState(old, JobState.FAILED);
      assertThat(failed.errors()).singleElement().satisfies(e -> {
        assertThat(e.kind()).isEqualTo("unknown_type");
        assertThat(e.message()).contains("'mystery'").contains("numbered").contains("PT5M");
      });
      awaitPasses(leader, 2);
      assertThat(client.get(young).orElseThrow().state())
          .as("within the grace")
          .isEqualTo(JobState.QUEUED);
    }
  }

  @Test
  void aQueueNoLiveWorkerServesKeepsItsJobsWhateverTheirType() {
    UUID elsewhere = client
        .enqueue(
            "mystery",
            Map.of("x", 1),
            EnqueueOptions.builder().queue("elsewhere").build())
        .job()
        .id();
    UUID noWorkerAtAll = enqueueMystery();
    try (Maintenance leader = maintenance(Duration.ZERO)) {
      awaitPasses(leader, 2); // no live worker at all: nothing is judged
      assertThat(client.get(noWorkerAtAll).orElseThrow().state()).isEqualTo(JobState.QUEUED);

      start(worker()
          .pollInterval(Duration.ofMillis(50))
          .maintenance(false)
          .register(NUMBERED, (ctx, p) -> null));
      awaitState(noWorkerAtAll, JobState.FAILED);
      awaitPasses(leader, 2);
      assertThat(client.get(elsewhere).orElseThrow().state())
          .as("no live worker serves 'elsewhere'")
          .isEqualTo(JobState.QUEUED);
    }
  }
}
