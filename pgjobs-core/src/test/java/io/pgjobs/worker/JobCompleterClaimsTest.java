package io.pgjobs.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.testkit.Await;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The completer never lets go of a claim that is still the worker's: a give-back that finds the job's
 * row locked by another transaction tries again once the lock goes (the job is not left running, to be
 * rescued later as if it had started), and a write that matched nothing while the claim still holds the
 * job is not reported as "no longer this worker's claim".
 */
class JobCompleterClaimsTest extends PgJobsTestBase {
  private static final String WORKER = "completer-worker";

  private ExecutionStore store;
  private HeldJobs held;
  private JobCompleter completer;

  @BeforeEach
  void startCompleter() {
    store = new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
    held = new HeldJobs();
    completer = new JobCompleter(store, held, JobMetrics.NONE, 100, 1_000);
    completer.start(WORKER);
  }

  @AfterEach
  void closeCompleter() {
    completer.close(Duration.ofSeconds(2));
  }

  @Test
  void giveBackOfALockedClaimIsWrittenOnceTheLockGoes() throws Exception {
    ClaimedJob job = claimOne();
    try (Connection other = db.dataSource().getConnection()) {
      other.setAutoCommit(false);
      lockRow(other, job);

      int given = completer.unclaim(List.of(job));

      assertThat(given).as("given back while the row is locked").isZero();
      assertThat(held.get(job.id())).as("still held, so the heartbeat keeps it").isNotNull();
      assertThat(client.get(job.id()).orElseThrow().state()).isEqualTo(JobState.RUNNING);
      other.rollback();
    }

    Await.awaitState(client::get, job.id(), Job::state, JobState.QUEUED, Duration.ofSeconds(10));
    Job back = client.get(job.id()).orElseThrow();
    assertThat(back.attempts()).as("the claim's attempt given back").isZero();
    assertThat(back.errors()).isEmpty();
    assertThat(back.lockedBy()).isNull();
    await().atMost(Duration.ofSeconds(5)).until(() -> held.get(job.id()) == null);
  }

  @Test
  void giveBackOfAnUnknownLockedClaimIsHeldUntilWritten() throws Exception {
    // A claim whose reply was lost: the worker never held the job; reconciling finds and gives it
    // back.
    client.enqueue(NUMBERED, new Numbered(2));
    ClaimedJob job = store.claim("default", 1, WORKER).get(0);
    ClaimedJob unknown = store.unknownClaims(WORKER, "default", List.of()).get(0);
    try (Connection other = db.dataSource().getConnection()) {
      other.setAutoCommit(false);
      lockRow(other, job);

      assertThat(completer.unclaim(List.of(unknown))).isZero();

      assertThat(held.get(job.id()))
          .as("held meanwhile, so the heartbeat keeps it")
          .isNotNull();
      other.rollback();
    }

    Await.awaitState(client::get, job.id(), Job::state, JobState.QUEUED, Duration.ofSeconds(10));
    assertThat(client.get(job.id()).orElseThrow().attempts()).isZero();
    await().atMost(Duration.ofSeconds(5)).until(() -> held.get(job.id()) == null);
  }

  @Test
  void giveBackOfAnUnlockedClaimIsWrittenAtOnce() throws Exception {
    ClaimedJob job = claimOne();

    assertThat(completer.unclaim(List.of(job))).isEqualTo(1);

    Job back = client.get(job.id()).orElseThrow();
    assertThat(back.state()).isEqualTo(JobState.QUEUED);
    assertThat(back.attempts()).isZero();
    assertThat(held.get(job.id())).isNull();
  }

  @Test
  void writeThatMatchedNothingWhileTheClaimHoldsTheJobIsTriedAgain() throws Exception {
    ClaimedJob job = claimOne();
    AtomicInteger tries = new AtomicInteger();

    String label = completer.write(
        job,
        JobCompleter.Intent.SNOOZE,
        () ->
            tries.incrementAndGet() == 1 ? null : store.snooze(job.id(), job.claimToken(), 60_000));

    assertThat(label).isEqualTo("snoozed");
    assertThat(tries).hasValue(2);
    assertThat(client.get(job.id()).orElseThrow().state()).isEqualTo(JobState.QUEUED);
  }

  @Test
  void writeOfAClaimThatIsNoLongerOursIsReportedNotRecorded() throws Exception {
    ClaimedJob job = claimOne();
    db.execute(
        "UPDATE pgjobs.jobs SET state = 'queued', locked_by = NULL, heartbeat_at = NULL, claim_token = NULL"
            + " WHERE id = '" + job.id() + "'");

    String label = completer.write(
        job, JobCompleter.Intent.SNOOZE, () -> store.snooze(job.id(), job.claimToken(), 60_000));

    assertThat(label).isEqualTo(JobCompleter.NOT_RECORDED);
  }

  private ClaimedJob claimOne() throws Exception {
    client.enqueue(NUMBERED, new Numbered(1));
    List<ClaimedJob> claimed = store.claim("default", 1, WORKER);
    assertThat(claimed).hasSize(1);
    held.add(claimed);
    return claimed.get(0);
  }

  private static void lockRow(Connection c, ClaimedJob job) throws Exception {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT 1 FROM pgjobs.jobs WHERE id = ? FOR UPDATE")) {
      ps.setObject(1, job.id());
      ps.executeQuery().close();
    }
  }
}
