package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Acceptance 4: a job enqueued in the caller's transaction exists only if it commits; a handler that
 * completes its job in its own transaction makes the job's success and its database effects one unit.
 */
class TransactionalTest extends PgJobsTestBase {
  /** Committed work of handlers: one row per effect. */
  private static final String EFFECTS = "tx_effects";

  /** How the handler of {@link #TX} ends its transaction, chosen by the payload number. */
  static final int COMMIT = 1;

  static final int ROLLBACK_AND_THROW = 2;
  static final int ROLLBACK_AND_RETURN = 3;
  static final int ROLLBACK_AND_THROW_ON_FIRST_ATTEMPT = 4;

  static final JobType<Numbered> TX = JobType.of("tx_effect", Numbered.class)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));
  /** Same handler, but a failed attempt waits an hour, so the job stays {@code retrying}. */
  static final JobType<Numbered> TX_SLOW_RETRY = JobType.of("tx_effect_slow", Numbered.class)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofHours(1)));

  private final Set<Integer> ran = ConcurrentHashMap.newKeySet();
  private final List<Integer> handlerCalls = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void createEffectsTable() {
    db.execute(
        "CREATE TABLE " + EFFECTS + " (job_id uuid NOT NULL, attempt int NOT NULL, note text)");
  }

  @BeforeEach
  void emptyEffects() {
    db.execute("TRUNCATE " + EFFECTS);
  }

  private JobWorker startWorker() {
    JobHandler<Numbered> inTransaction = (ctx, p) -> {
      handlerCalls.add(ctx.attempt());
      try (Connection c = ctx.dataSource().getConnection()) {
        c.setAutoCommit(false);
        try (PreparedStatement ps =
            c.prepareStatement("INSERT INTO " + EFFECTS + " VALUES (?, ?, ?)")) {
          ps.setObject(1, ctx.jobId());
          ps.setInt(2, ctx.attempt());
          ps.setString(3, "mode " + p.n());
          ps.executeUpdate();
        }
        ctx.complete(c, Map.of("invoice", ctx.attempt()));
        boolean commit =
            p.n() == COMMIT || (p.n() == ROLLBACK_AND_THROW_ON_FIRST_ATTEMPT && ctx.attempt() > 1);
        if (commit) {
          c.commit();
          return null;
        }
        c.rollback();
        if (p.n() == ROLLBACK_AND_RETURN) {
          return Map.of("ignored", true);
        }
        throw new IllegalStateException("rolled back on attempt " + ctx.attempt());
      }
    };
    return start(worker()
        .pollInterval(Duration.ofMillis(50))
        .register(NUMBERED, (ctx, p) -> {
          ran.add(p.n());
          return null;
        })
        .register(TX, inTransaction)
        .register(TX_SLOW_RETRY, inTransaction));
  }

  private static long effects(UUID jobId) {
    return count("SELECT count(*) FROM " + EFFECTS + " WHERE job_id = '" + jobId + "'");
  }

  private static long[] tableCounts() {
    return new long[] {count("pgjobs.jobs"), count("pgjobs.finished_jobs"), count("pgjobs.job_keys")
    };
  }

  // ---------------------------------------------------------------- enqueue in the caller's
  // transaction

  @Test
  void jobEnqueuedInATransactionThatRollsBackIsNeverStored() throws SQLException {
    long[] before = tableCounts();
    UUID typed;
    UUID byName;
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      typed = client
          .enqueue(
              tx,
              NUMBERED,
              new Numbered(1),
              EnqueueOptions.builder().idempotencyKey("rolled-back-key").build())
          .job()
          .id();
      byName = client
          .enqueue(tx, "numbered", Map.of("n", 2), EnqueueOptions.DEFAULTS)
          .job()
          .id();
      try (var st = tx.createStatement();
          var rs = st.executeQuery("SELECT count(*) FROM pgjobs.jobs")) {
        rs.next();
        assertThat(rs.getLong(1))
            .as("jobs visible inside the transaction")
            .isEqualTo(before[0] + 2);
      }
      assertThat(client.get(typed)).as("visible to other connections").isEmpty();
      tx.rollback();
    }

    assertThat(client.get(typed)).isEmpty();
    assertThat(client.get(byName)).isEmpty();
    assertThat(tableCounts()).containsExactly(before);
  }

  @Test
  void jobEnqueuedInATransactionThatRollsBackIsNeverRunByARunningWorker() throws SQLException {
    startWorker();
    UUID rolledBack;
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      rolledBack = client
          .enqueue(tx, NUMBERED, new Numbered(1), EnqueueOptions.DEFAULTS)
          .job()
          .id();
      // While the transaction is open, a committed job enqueued after it runs: the worker is
      // polling and does not see the uncommitted one.
      UUID during = client.enqueue(NUMBERED, new Numbered(100)).job().id();
      awaitState(during, JobState.SUCCEEDED);
      tx.rollback();
    }
    UUID after = client.enqueue(NUMBERED, new Numbered(101)).job().id();
    awaitState(after, JobState.SUCCEEDED);

    assertThat(ran).containsExactlyInAnyOrder(100, 101);
    assertThat(client.get(rolledBack)).isEmpty();
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("pgjobs.finished_jobs")).isEqualTo(2);
  }

  @Test
  void jobEnqueuedInATransactionThatCommitsRunsWithTheBusinessWrite() throws SQLException {
    startWorker();
    UUID id;
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      try (PreparedStatement ps = tx.prepareStatement(
          "INSERT INTO " + EFFECTS + " VALUES (gen_random_uuid(), 0, 'order')")) {
        ps.executeUpdate();
      }
      id = client
          .enqueue(tx, NUMBERED, new Numbered(7), EnqueueOptions.DEFAULTS)
          .job()
          .id();
      assertThat(client.get(id)).isEmpty(); // not visible before commit
      tx.commit();
    }

    Job done = awaitState(id, JobState.SUCCEEDED);

    assertThat(done.attempts()).isEqualTo(1);
    assertThat(ran).containsExactly(7);
    assertThat(count(EFFECTS)).isEqualTo(1);
  }

  @Test
  void retryInATransactionThatRollsBackLeavesTheJobFailed() throws SQLException {
    JobType<Numbered> doomed = JobType.of("doomed", Numbered.class);
    start(worker()
        .pollInterval(Duration.ofMillis(50))
        .register(doomed, (ctx, p) -> {
          throw new IllegalStateException("no");
        })
        .queue("doomed", 1));
    UUID id = client
        .enqueue(
            doomed,
            new Numbered(1),
            EnqueueOptions.builder().queue("doomed").maxAttempts(1).build())
        .job()
        .id();
    awaitState(id, JobState.FAILED);

    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      assertThat(client.retry(tx, id)).isEqualTo(RetryResult.RETRIED);
      tx.rollback();
    }

    Job still = client.get(id).orElseThrow();
    assertThat(still.state()).isEqualTo(JobState.FAILED);
    assertThat(still.attempts()).isEqualTo(1);
  }

  // ---------------------------------------------------------------- completing in the handler's
  // transaction

  @Test
  void handlerThatCompletesInItsCommittedTransactionSucceedsWithItsOutputAndOneEffect() {
    startWorker();
    UUID id = client.enqueue(TX, new Numbered(COMMIT)).job().id();

    Job done = awaitState(id, JobState.SUCCEEDED);

    assertThat(done.output().get("invoice").asInt()).isEqualTo(1);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.errors()).isEmpty();
    assertThat(effects(id)).isEqualTo(1);
    assertThat(handlerCalls).containsExactly(1);
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("pgjobs.finished_jobs")).isEqualTo(1);
  }

  @Test
  void handlerThatRollsBackAndThrowsLeavesNeitherEffectNorSuccessAndFailsOnItsLastAttempt() {
    startWorker();
    UUID id = client
        .enqueue(
            TX,
            new Numbered(ROLLBACK_AND_THROW),
            EnqueueOptions.builder().maxAttempts(1).build())
        .job()
        .id();

    Job failed = awaitState(id, JobState.FAILED);

    assertThat(failed.output()).isNull();
    assertThat(failed.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("error");
      assertThat(e.message()).isEqualTo("rolled back on attempt 1");
    });
    assertThat(effects(id)).isZero();
  }

  @Test
  void handlerThatRollsBackAndThrowsWithAttemptsLeftIsRetrying() {
    startWorker();
    UUID id =
        client.enqueue(TX_SLOW_RETRY, new Numbered(ROLLBACK_AND_THROW)).job().id();

    Job retrying = awaitState(id, JobState.RETRYING);

    assertThat(retrying.attempts()).isEqualTo(1);
    assertThat(retrying.errors())
        .singleElement()
        .satisfies(e -> assertThat(e.kind()).isEqualTo("error"));
    assertThat(effects(id)).isZero();
  }

  @Test
  void rolledBackAttemptLeavesNoEffectAndTheRetryThatCommitsLeavesExactlyOne() {
    startWorker();
    UUID id = client
        .enqueue(
            TX,
            new Numbered(ROLLBACK_AND_THROW_ON_FIRST_ATTEMPT),
            EnqueueOptions.builder().maxAttempts(2).build())
        .job()
        .id();

    Job done = awaitState(id, JobState.SUCCEEDED);

    assertThat(done.attempts()).isEqualTo(2);
    assertThat(done.output().get("invoice").asInt()).isEqualTo(2);
    assertThat(done.errors()).extracting(JobError::attempt).containsExactly(1);
    assertThat(effects(id)).isEqualTo(1);
    assertThat(count("SELECT max(attempt) FROM " + EFFECTS + " WHERE job_id = '" + id + "'"))
        .as("the one effect is the second attempt's")
        .isEqualTo(2);
  }

  @Test
  void handlerThatRollsBackButReturnsNormallyFailsTheAttemptAsTransactionRolledBack() {
    startWorker();
    UUID id = client
        .enqueue(
            TX,
            new Numbered(ROLLBACK_AND_RETURN),
            EnqueueOptions.builder().maxAttempts(1).build())
        .job()
        .id();

    Job failed = awaitState(id, JobState.FAILED);

    assertThat(failed.output()).isNull();
    assertThat(failed.attempts()).isEqualTo(1);
    assertThat(failed.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("transaction_rolled_back");
      assertThat(e.attempt()).isEqualTo(1);
      assertThat(e.message()).contains("did not commit");
    });
    assertThat(effects(id)).isZero();
  }

  @Test
  void handlerThatRollsBackButReturnsNormallyWithAttemptsLeftIsRetrying() {
    startWorker();
    UUID id =
        client.enqueue(TX_SLOW_RETRY, new Numbered(ROLLBACK_AND_RETURN)).job().id();

    Job retrying = awaitState(id, JobState.RETRYING);

    assertThat(retrying.attempts()).isEqualTo(1);
    assertThat(retrying.errors())
        .singleElement()
        .satisfies(e -> assertThat(e.kind()).isEqualTo("transaction_rolled_back"));
    assertThat(effects(id)).isZero();
    assertThat(handlerCalls).containsExactly(1);
  }
}
