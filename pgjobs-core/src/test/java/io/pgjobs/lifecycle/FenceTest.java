package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.RetryResult;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.Completion;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.store.WorkerStore;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The claim fence, statement by statement: a worker that was cut off while its job was rescued, failed,
 * retried by an operator (which starts the attempts from 0 again) and claimed by another worker can send
 * every write it knows, and none of them changes the new run. The attempt number could not tell the two
 * runs apart (both are attempt 1); the claim token does.
 */
class FenceTest extends LifecycleTestBase {
  private static final PayloadCodec CODEC = new PayloadCodec(PayloadCodec.DEFAULT_MAPPER);
  /** How long a success batch may wait for a locked row (null: skip locked rows). */
  private static final Duration WAIT = Duration.ofSeconds(1);

  private static ExecutionStore store() {
    return new ExecutionStore(db.dataSource(), "pgjobs", CODEC);
  }

  @Test
  void lateWritesOfAClaimThatIsNoLongerTheJobsChangeNothingOverItsNewRun() throws Exception {
    ExecutionStore store = store();
    WorkerStore workers = new WorkerStore(db.dataSource(), "pgjobs", CODEC);
    UUID id = client
        .enqueue(
            NUMBERED, new Numbered(1), EnqueueOptions.builder().maxAttempts(1).build())
        .job()
        .id();

    ClaimedJob a = store.claim(JobType.DEFAULT_QUEUE, 1, "worker-a").get(0);
    // worker-a is cut off: it never registered a heartbeat row, so rescue takes its job at once;
    // with no attempts left the job fails as worker_lost.
    WorkerStore.RescueCounts rescued =
        workers.rescue(Duration.ofSeconds(20), Duration.ofMinutes(5), 100);
    assertThat(rescued.ended()).isEqualTo(1);
    assertThat(job(id).state()).isEqualTo(JobState.FAILED);
    assertThat(errorKinds(id)).containsExactly("worker_lost");
    // An operator retries it; worker-b claims it. Same attempt number, new claim token.
    assertThat(client.retry(id)).isEqualTo(RetryResult.RETRIED);
    ClaimedJob b = store.claim(JobType.DEFAULT_QUEUE, 1, "worker-b").get(0);
    assertThat(b.id()).isEqualTo(id);
    assertThat(b.attempt()).isEqualTo(a.attempt());
    assertThat(b.claimToken()).isNotEqualTo(a.claimToken());

    // Every write worker-a could still send when it comes back.
    assertThat(store.succeed(
            "worker-a", List.of(new Completion(id, a.claimToken(), "{\"by\":\"a\"}")), WAIT))
        .isZero();
    assertThat(store.succeed(
            "worker-a", List.of(new Completion(id, a.claimToken(), "{\"by\":\"a\"}")), null))
        .isZero();
    assertThat(store.succeed(
            "worker-b", List.of(new Completion(id, a.claimToken(), "{\"by\":\"a\"}")), WAIT))
        .isZero();
    assertThat(store.finish(id, a.claimToken(), JobState.FAILED, "[]")).isNull();
    assertThat(store.finish(id, a.claimToken(), JobState.CANCELLED, "[]")).isNull();
    assertThat(store.retryLater(id, a.claimToken(), 0, "[{\"kind\":\"late\"}]")).isNull();
    assertThat(store.snooze(id, a.claimToken(), 0)).isNull();
    assertThat(store.release(id, a.claimToken(), "[{\"kind\":\"late\"}]")).isNull();
    assertThat(store.progress(id, a.claimToken(), 99, "late progress from worker-a"))
        .isFalse();
    assertThat(store.heartbeat(id, a.claimToken())).isFalse();
    assertThat(store.isRunning(id, a.claimToken())).isFalse();
    assertThat(store.unclaim("worker-a", List.of(a))).isEmpty();
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      assertThat(store.succeed(tx, id, a.claimToken(), "{\"by\":\"a\"}")).isFalse();
      tx.commit();
    }
    try (Connection hb = db.dataSource().getConnection()) {
      WorkerStore.Registration reg =
          new WorkerStore.Registration("worker-a", "host", 1, Map.of("default", 1), List.of());
      assertThat(workers
              .heartbeat(hb, reg, Map.of(id, a.claimToken()), List.of(id), 0, Duration.ofSeconds(1))
              .cancelRequested())
          .isEmpty();
    }
    assertThat(store.claimStatus(Map.of(id, a.claimToken()))).isEmpty();

    Job during = job(id);
    assertThat(during.state()).isEqualTo(JobState.RUNNING);
    assertThat(during.lockedBy()).isEqualTo("worker-b");
    assertThat(during.progressPercent()).isNull();
    assertThat(errorKinds(id)).containsExactly("worker_lost");
    assertThat(store.claimStatus(Map.of(id, b.claimToken()))).containsEntry(id, JobState.RUNNING);

    // worker-b's own writes still land.
    assertThat(store.progress(id, b.claimToken(), 50, "half")).isTrue();
    assertThat(store.succeed(
            "worker-b", List.of(new Completion(id, b.claimToken(), "{\"by\":\"b\"}")), WAIT))
        .isEqualTo(1);
    Job done = job(id);
    assertThat(done.state()).isEqualTo(JobState.SUCCEEDED);
    assertThat(done.lockedBy()).isEqualTo("worker-b");
    assertThat(done.output()).hasToString("{\"by\":\"b\"}");
    assertThat(done.progressMessage()).isEqualTo("half");
    // The written row keeps the claim's token: a write whose reply was lost is recognised
    // afterwards.
    assertThat(store.claimStatus(Map.of(id, b.claimToken()))).containsEntry(id, JobState.SUCCEEDED);
  }

  @Test
  void aDeadWorkersStartedJobsCountTheAttemptAndItsPrefetchedJobsGoBackAsTheyWere()
      throws Exception {
    ExecutionStore store = store();
    WorkerStore workers = new WorkerStore(db.dataSource(), "pgjobs", CODEC);
    List<UUID> ids = client.enqueueAll(
        NUMBERED,
        List.of(new Numbered(1), new Numbered(2), new Numbered(3), new Numbered(4)),
        EnqueueOptions.builder().maxAttempts(1).build());
    List<ClaimedJob> claimed = store.claim(JobType.DEFAULT_QUEUE, 4, "doomed");
    Map<UUID, Long> tokens = new java.util.HashMap<>();
    claimed.forEach(c -> tokens.put(c.id(), c.claimToken()));
    List<UUID> waiting = List.of(claimed.get(2).id(), claimed.get(3).id());
    WorkerStore.Registration reg =
        new WorkerStore.Registration("doomed", "host", 1, Map.of("default", 2), List.of());
    try (Connection hb = db.dataSource().getConnection()) {
      assertThat(workers
              .heartbeat(hb, reg, tokens, waiting, 0, Duration.ofSeconds(1))
              .cancelRequested())
          .hasSize(4);
    }
    // A live worker's jobs stay where they are.
    assertThat(
            workers.rescue(Duration.ofSeconds(20), Duration.ofMinutes(5), 100).total())
        .isZero();
    // The worker dies: its row is not renewed (here: its heartbeat was 30 s ago).
    db.execute(
        "UPDATE pgjobs.workers SET last_heartbeat = now() - interval '30 seconds' WHERE id = 'doomed'");

    WorkerStore.RescueCounts counts =
        workers.rescue(Duration.ofSeconds(20), Duration.ofMinutes(5), 100);

    assertThat(counts.unclaimed()).isEqualTo(2);
    assertThat(counts.ended()).isEqualTo(2); // started, max attempts 1: failed as worker_lost
    for (UUID id : waiting) {
      Job job = job(id);
      assertThat(job.state()).isEqualTo(JobState.QUEUED);
      assertThat(job.attempts()).isZero();
      assertThat(job.errors()).isEmpty();
      assertThat(job.lockedBy()).isNull();
    }
    for (ClaimedJob started : claimed.subList(0, 2)) {
      Job job = job(started.id());
      assertThat(job.state()).isEqualTo(JobState.FAILED);
      assertThat(errorKinds(started.id())).containsExactly("worker_lost");
    }
    assertThat(ids).hasSize(4);
  }

  @Test
  void eachWriteTellsTheStateItLeftTheJobIn() throws Exception {
    ExecutionStore store = store();
    UUID retried = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    UUID snoozed = client.enqueue(NUMBERED, new Numbered(2)).job().id();
    UUID released = client.enqueue(NUMBERED, new Numbered(3)).job().id();
    UUID failed = client.enqueue(NUMBERED, new Numbered(4)).job().id();
    UUID cancelledOnRetry = client.enqueue(NUMBERED, new Numbered(5)).job().id();
    Map<UUID, ClaimedJob> claimed = new java.util.HashMap<>();
    store.claim(JobType.DEFAULT_QUEUE, 10, "w").forEach(c -> claimed.put(c.id(), c));
    assertThat(client.cancel(cancelledOnRetry).outcome())
        .isEqualTo(io.pgjobs.CancelResult.Outcome.PENDING_ON_WORKER);

    assertThat(store.retryLater(retried, claimed.get(retried).claimToken(), 60_000, "[]"))
        .isEqualTo(JobState.RETRYING);
    assertThat(store.snooze(snoozed, claimed.get(snoozed).claimToken(), 60_000))
        .isEqualTo(JobState.QUEUED);
    assertThat(store.release(released, claimed.get(released).claimToken(), "[]"))
        .isEqualTo(JobState.RETRYING);
    assertThat(store.finish(failed, claimed.get(failed).claimToken(), JobState.FAILED, "[]"))
        .isEqualTo(JobState.FAILED);
    // The job's cancellation was asked while it ran: the retry the worker meant ends it cancelled
    // instead.
    assertThat(
            store.retryLater(cancelledOnRetry, claimed.get(cancelledOnRetry).claimToken(), 0, "[]"))
        .isEqualTo(JobState.CANCELLED);
    // A second, late copy of any of them matches nothing...
    assertThat(store.retryLater(retried, claimed.get(retried).claimToken(), 0, "[]"))
        .isNull();
    // ...and the claim status says what the first one wrote (a reply lost in between is
    // recognised).
    assertThat(store.claimStatus(Map.of(retried, claimed.get(retried).claimToken())))
        .containsEntry(retried, JobState.RETRYING);
    assertThat(store.claimStatus(
            Map.of(cancelledOnRetry, claimed.get(cancelledOnRetry).claimToken())))
        .containsEntry(cancelledOnRetry, JobState.CANCELLED);
  }
}
