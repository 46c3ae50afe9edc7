package io.pgjobs.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.Job;
import io.pgjobs.JobError;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every {@link Outcome} the runner can hand over is written by the completer with its own statement:
 * the row ends in the outcome's state and the completer answers the outcome's metric label. An outcome
 * of a claim that is no longer the job's changes nothing, and neither do the writes a handler makes
 * through its context.
 */
class OutcomesTest extends PgJobsTestBase {
  private static final String WORKER = "outcomes-worker";
  private static final String ERROR = "[{\"kind\":\"test\",\"message\":\"from the test\"}]";

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

  /** Each kind of outcome: how to make it for a claim, the label, and the row it leaves. */
  static Stream<Arguments> kinds() {
    return Stream.of(
        kind(
            "retry",
            job -> new Outcome.Retry(job, 60_000, ERROR),
            "retrying",
            JobState.RETRYING,
            1),
        kind("snooze", job -> new Outcome.Snooze(job, 60_000), "snoozed", JobState.QUEUED, 0),
        kind("fail", job -> new Outcome.Failed(job, ERROR), "failed", JobState.FAILED, 1),
        kind("discard", job -> new Outcome.Discarded(job, ERROR), "discarded", JobState.FAILED, 1),
        kind(
            "cancel", job -> new Outcome.Cancelled(job, ERROR), "cancelled", JobState.CANCELLED, 1),
        kind("release", job -> new Outcome.Released(job, ERROR), "released", JobState.RETRYING, 1));
  }

  private static Arguments kind(
      String name,
      Function<ClaimedJob, Outcome> outcome,
      String label,
      JobState state,
      int attempts) {
    return Arguments.of(name, outcome, label, state, attempts);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("kinds")
  void eachOutcomeIsWrittenWithItsStatement(
      String name,
      Function<ClaimedJob, Outcome> outcome,
      String label,
      JobState state,
      int attempts) {
    ClaimedJob job = claimOne();

    assertThat(completer.record(outcome.apply(job))).isEqualTo(label);

    Job row = client.get(job.id()).orElseThrow();
    assertThat(row.state()).isEqualTo(state);
    assertThat(row.attempts()).isEqualTo(attempts);
    if (!(outcome.apply(job) instanceof Outcome.Snooze)) {
      assertThat(row.errors()).extracting(JobError::kind).containsExactly("test");
    }
    assertThat(held.get(job.id())).as("let go once written").isNull();
  }

  @Test
  void successIsQueuedAndWrittenWithTheNextBatch() {
    ClaimedJob job = claimOne();

    assertThat(completer.record(new Outcome.Succeeded(job, "{\"done\":true}", 1_000)))
        .as("its metric is counted when the batch tells what it wrote")
        .isNull();

    Job row = awaitState(job.id(), JobState.SUCCEEDED);
    assertThat(row.output().get("done").asBoolean()).isTrue();
    await().atMost(Duration.ofSeconds(5)).until(() -> held.get(job.id()) == null);
    assertThat(completer.pending()).isZero();
  }

  @Nested
  class OfAClaimThatIsNoLongerTheJobs {
    @ParameterizedTest(name = "{0}")
    @MethodSource("io.pgjobs.worker.OutcomesTest#kinds")
    void anOutcomeChangesNothing(
        String name,
        Function<ClaimedJob, Outcome> outcome,
        String label,
        JobState state,
        int attempts) {
      ClaimedJob stale = claimOne();
      ClaimedJob current = claimAgain(stale);

      assertThat(completer.record(outcome.apply(stale))).isEqualTo(JobCompleter.NOT_RECORDED);

      assertRunsUnder(current);
    }

    @Test
    void aSuccessChangesNothing() {
      ClaimedJob stale = claimOne();
      ClaimedJob current = claimAgain(stale);

      completer.record(new Outcome.Succeeded(stale, "{\"by\":\"stale\"}", 1_000));

      await().atMost(Duration.ofSeconds(5)).until(() -> completer.pending() == 0);
      assertRunsUnder(current);
    }

    @Test
    void progressHeartbeatAndCompletionInATransactionChangeNothing() throws Exception {
      ClaimedJob stale = claimOne();
      ClaimedJob current = claimAgain(stale);

      completer.progress(stale, 50, "from the stale claim");
      completer.heartbeat(stale);
      try (Connection tx = db.dataSource().getConnection()) {
        tx.setAutoCommit(false);
        assertThat(completer.succeedInTransaction(tx, stale, "{}")).isFalse();
        tx.commit();
      }

      Job row = assertRunsUnder(current);
      assertThat(row.progressPercent()).isNull();
      assertThat(completer.settleInTransaction(current))
          .isEqualTo(JobCompleter.InTransaction.ROLLED_BACK);
    }
  }

  @Test
  void progressOfTheCurrentClaimIsWritten() {
    ClaimedJob job = claimOne();

    completer.progress(job, 40, "almost half");

    Job row = client.get(job.id()).orElseThrow();
    assertThat(row.progressPercent()).isEqualTo(40);
    assertThat(row.progressMessage()).isEqualTo("almost half");
  }

  @Test
  void completionInATransactionIsSettledByWhetherItCommitted() throws Exception {
    ClaimedJob rolledBack = claimOne();
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      assertThat(completer.succeedInTransaction(tx, rolledBack, "{}")).isTrue();
      tx.rollback();
    }
    assertThat(completer.settleInTransaction(rolledBack))
        .isEqualTo(JobCompleter.InTransaction.ROLLED_BACK);
    assertThat(held.get(rolledBack.id()))
        .as("still held: an outcome is to come")
        .isNotNull();

    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      assertThat(completer.succeedInTransaction(tx, rolledBack, "{\"in\":\"tx\"}"))
          .isTrue();
      tx.commit();
    }
    assertThat(completer.settleInTransaction(rolledBack))
        .isEqualTo(JobCompleter.InTransaction.COMMITTED);
    assertThat(held.get(rolledBack.id())).isNull();
    assertThat(client.get(rolledBack.id()).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
  }

  private ClaimedJob claimOne() {
    try {
      client.enqueue(NUMBERED, new Numbered(1));
      List<ClaimedJob> claimed = store.claim("default", 1, WORKER);
      assertThat(claimed).hasSize(1);
      held.add(claimed);
      return claimed.get(0);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /** Puts the job back as if rescued, and claims it again: {@code stale} is no longer its claim. */
  private ClaimedJob claimAgain(ClaimedJob stale) {
    db.execute(
        "UPDATE pgjobs.jobs SET state = 'queued', locked_by = NULL, heartbeat_at = NULL, claim_token = NULL"
            + " WHERE id = '" + stale.id() + "'");
    try {
      ClaimedJob current = store.claim("default", 1, WORKER).get(0);
      assertThat(current.id()).isEqualTo(stale.id());
      assertThat(current.claimToken()).isNotEqualTo(stale.claimToken());
      held.add(List.of(current));
      return current;
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /** The job still runs under {@code current}, untouched by the stale claim's writes. */
  private Job assertRunsUnder(ClaimedJob current) {
    Job row = client.get(current.id()).orElseThrow();
    assertThat(row.state()).isEqualTo(JobState.RUNNING);
    assertThat(row.lockedBy()).isEqualTo(WORKER);
    assertThat(row.errors()).isEmpty();
    assertThat(row.output() == null || row.output().isNull()).as("no output").isTrue();
    assertThat(held.get(current.id())).as("the current claim stays held").isNotNull();
    return row;
  }
}
