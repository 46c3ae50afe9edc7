package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Acceptance 7: bulk enqueue. 100,000 jobs go in with one call (one COPY) and all run; a bulk enqueue
 * in the caller's transaction is all-or-nothing with that transaction; one idempotency key for the
 * batch is refused, keys taken from each payload make a retried batch store each job once.
 */
class BulkEnqueueTest extends PgJobsTestBase {
  private static final int MANY = 100_000;

  /** Jobs of this type take their idempotency key from their payload: {@code keyed:<n>}. */
  private static final JobType<Numbered> KEYED =
      JobType.of("keyed", Numbered.class).withIdempotencyKeyFrom("n");

  @Test
  @Tag(Tags.SOAK)
  void hundredThousandJobsEnqueuedInOneCallAreStoredAtOnceAndAllRunToSuccess() throws Exception {
    List<Numbered> payloads = numbered(MANY);

    List<UUID> ids = client.enqueueAll(NUMBERED, payloads, EnqueueOptions.DEFAULTS);

    assertThat(ids).hasSize(MANY);
    assertThat(new HashSet<>(ids)).as("distinct ids").hasSize(MANY);
    assertThat(count("pgjobs.jobs"))
        .as("jobs stored by the time enqueueAll returns")
        .isEqualTo(MANY);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'queued' AND attempts = 0"))
        .isEqualTo(MANY);
    assertThat(storedInPayloadOrder(ids))
        .as("jobs whose id is the one returned at their payload's position")
        .isEqualTo(MANY);

    try (HikariDataSource pool = db.newDataSource(10)) {
      JobWorker worker = start(JobWorker.builder(pool)
          .queue(JobType.DEFAULT_QUEUE, 50)
          .claimBatch(100)
          .shutdownGrace(Duration.ofSeconds(10))
          .register(NUMBERED, (ctx, p) -> null));

      await("all " + MANY + " jobs succeeded")
          .atMost(Duration.ofMinutes(8))
          .pollInterval(Duration.ofSeconds(1))
          .until(() ->
              count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'") == MANY);
      worker.close();
    }

    assertThat(count("pgjobs.jobs")).as("jobs left in the hot table").isZero();
    assertThat(count("pgjobs.finished_jobs")).isEqualTo(MANY);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE attempts <> 1"))
        .isZero();
  }

  @Test
  void bulkEnqueueInCallersTransactionThatRollsBackStoresNothing() throws Exception {
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      List<UUID> ids = client.enqueueAll(tx, NUMBERED, numbered(1_000), EnqueueOptions.DEFAULTS);
      assertThat(ids).hasSize(1_000);
      assertThat(countIn(tx, "SELECT count(*) FROM pgjobs.jobs"))
          .as("visible inside the transaction")
          .isEqualTo(1_000);
      assertThat(count("pgjobs.jobs")).as("visible outside before commit").isZero();
      tx.rollback();
    }

    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("pgjobs.finished_jobs")).isZero();
  }

  @Test
  void bulkEnqueueInCallersTransactionIsStoredWhenItCommits() throws Exception {
    List<UUID> ids;
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      ids = client.enqueueAll(tx, NUMBERED, numbered(1_000), EnqueueOptions.DEFAULTS);
      assertThat(count("pgjobs.jobs")).as("visible outside before commit").isZero();
      tx.commit();
    }

    assertThat(count("pgjobs.jobs")).isEqualTo(1_000);
    assertThat(storedInPayloadOrder(ids)).isEqualTo(1_000);
  }

  @Test
  void bulkEnqueueWithIdempotencyKeyIsRejectedAndStoresNothing() throws Exception {
    EnqueueOptions keyed =
        EnqueueOptions.builder().idempotencyKey("one-key-for-many").build();

    assertThatThrownBy(() -> client.enqueueAll(NUMBERED, numbered(10), keyed))
        .isInstanceOf(InvalidJobException.class)
        .satisfies(e -> assertThat(((InvalidJobException) e).field()).isEqualTo("idempotencyKey"));

    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      assertThatThrownBy(() -> client.enqueueAll(tx, NUMBERED, numbered(10), keyed))
          .isInstanceOf(InvalidJobException.class)
          .satisfies(
              e -> assertThat(((InvalidJobException) e).field()).isEqualTo("idempotencyKey"));
      tx.commit();
    }

    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("pgjobs.job_keys")).isZero();
    assertThat(count("pgjobs.finished_jobs")).isZero();
  }

  @Test
  void aKeyedBatchCalledAgainStoresNothingMoreAndReturnsTheSameIds() throws Exception {
    List<UUID> first = client.enqueueAll(KEYED, numbered(1_000), EnqueueOptions.DEFAULTS);

    List<UUID> again = client.enqueueAll(KEYED, numbered(1_000), EnqueueOptions.DEFAULTS);

    assertThat(again).as("ids of the second call, in order").isEqualTo(first);
    assertThat(new HashSet<>(first)).hasSize(1_000);
    assertThat(count("pgjobs.jobs")).isEqualTo(1_000);
    assertThat(count("pgjobs.job_keys")).isEqualTo(1_000);
    assertThat(storedInPayloadOrder(first)).isEqualTo(1_000);
    assertThat(count(
            "SELECT count(*) FROM pgjobs.jobs WHERE idempotency_key = 'keyed:' || (payload->>'n')"))
        .as("jobs carrying their payload's key")
        .isEqualTo(1_000);
  }

  @Test
  void aKeyedBatchOverlappingStoredJobsStoresOnlyTheNewOnes() throws Exception {
    EnqueuedJob single = client.enqueue(KEYED, new Numbered(5), EnqueueOptions.DEFAULTS);
    List<UUID> earlier = client.enqueueAll(KEYED, numbered(3), EnqueueOptions.DEFAULTS); // 0, 1, 2

    List<UUID> ids = client.enqueueAll(KEYED, numbered(10), EnqueueOptions.DEFAULTS); // 0 .. 9

    assertThat(ids.subList(0, 3)).as("keys stored by the earlier batch").isEqualTo(earlier);
    assertThat(ids.get(5))
        .as("key stored by the single enqueue")
        .isEqualTo(single.job().id());
    assertThat(new HashSet<>(ids)).hasSize(10);
    assertThat(count("pgjobs.jobs")).isEqualTo(10);
    assertThat(storedInPayloadOrder(ids)).as("each id's job has its payload").isEqualTo(10);
  }

  @Test
  void aKeyUsedBeforeForAnotherPayloadRefusesTheWholeBatch() {
    // keyed:1 was used for another request: n = 1 in another queue.
    client.enqueue(
        KEYED, new Numbered(1), EnqueueOptions.builder().queue("elsewhere").build());

    assertThatThrownBy(() -> client.enqueueAll(KEYED, numbered(5), EnqueueOptions.DEFAULTS))
        .isInstanceOf(IdempotencyKeyReusedException.class)
        .satisfies(e -> assertThat(((IdempotencyKeyReusedException) e).key()).isEqualTo("keyed:1"));

    assertThat(count("pgjobs.jobs")).as("only the earlier job").isEqualTo(1);
    assertThat(count("pgjobs.job_keys")).isEqualTo(1);
  }

  @Test
  void aKeyTwiceInOneBatchIsOneJobForBoth() {
    List<UUID> ids = client.enqueueAll(
        KEYED, List.of(new Numbered(1), new Numbered(2), new Numbered(1)), EnqueueOptions.DEFAULTS);

    assertThat(ids.get(2)).isEqualTo(ids.get(0));
    assertThat(ids.get(1)).isNotEqualTo(ids.get(0));
    assertThat(count("pgjobs.jobs")).isEqualTo(2);
  }

  @Test
  void aKeyedBatchInTheCallersTransactionGoesWithIt() throws Exception {
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      client.enqueueAll(tx, KEYED, numbered(100), EnqueueOptions.DEFAULTS);
      assertThat(countIn(tx, "SELECT count(*) FROM pgjobs.jobs")).isEqualTo(100);
      tx.rollback();
    }
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("pgjobs.job_keys")).as("keys rolled back with their jobs").isZero();

    List<UUID> ids = client.enqueueAll(KEYED, numbered(100), EnqueueOptions.DEFAULTS);
    assertThat(new HashSet<>(ids)).hasSize(100);
    assertThat(count("pgjobs.jobs")).isEqualTo(100);
  }

  @Test
  void keyedBatchesRacingOverTheSameKeysStoreEachJobOnce() throws Exception {
    // Overlapping batches in opposite orders: keys are inserted sorted, so they wait, never
    // deadlock.
    List<Numbered> up = numbered(500);
    List<Numbered> down = up.reversed();
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(4);
    try {
      List<java.util.concurrent.Future<List<UUID>>> results = new java.util.ArrayList<>();
      for (int t = 0; t < 8; t++) {
        List<Numbered> payloads = t % 2 == 0 ? up : down;
        results.add(pool.submit(() -> client.enqueueAll(KEYED, payloads, EnqueueOptions.DEFAULTS)));
      }
      List<UUID> reference = results.getFirst().get();
      for (int t = 0; t < results.size(); t++) {
        List<UUID> ids = results.get(t).get();
        assertThat(t % 2 == 0 ? ids : ids.reversed()).as("ids of batch " + t).isEqualTo(reference);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(count("pgjobs.jobs")).isEqualTo(500);
  }

  /**
   * The jobs of a bulk enqueue in its own transaction are made as the COPY reads them (StreamedJobs):
   * a payload refused past the first megabyte of rows, which the server has begun storing, still stores
   * nothing, and leaves the pool's connections fit for the next enqueue.
   */
  @Test
  void aPayloadRefusedInTheMiddleOfTheCopyStoresNothingOfTheBatch() throws Exception {
    java.util.concurrent.atomic.AtomicLong copiesWhenRefused =
        new java.util.concurrent.atomic.AtomicLong(-1);
    JobType<Numbered> refusing = NUMBERED.withValidator(p -> {
      if (p.n() != 40_000) {
        return List.of();
      }
      // In this test's database only: the other test JVMs run their own bulk enqueues meanwhile,
      // each in its own database (a CI run saw 2).
      copiesWhenRefused.set(count("SELECT count(*) FROM pg_stat_activity"
          + " WHERE datname = current_database() AND state = 'active'"
          + " AND query LIKE 'COPY pgjobs.jobs %'"));
      return List.of(new PayloadValidator.FieldProblem("n", "must not be 40000"));
    });
    List<Numbered> payloads = numbered(50_000);

    assertThatThrownBy(() -> client.enqueueAll(refusing, payloads, EnqueueOptions.DEFAULTS))
        .isInstanceOf(InvalidPayloadException.class)
        .hasMessageContaining("must not be 40000");
    assertThat(copiesWhenRefused.get())
        .as("COPYs of jobs under way when the payload was refused")
        .isEqualTo(1);
    List<Numbered> withNull = new java.util.ArrayList<>(numbered(30_000));
    withNull.set(25_000, null);
    assertThatThrownBy(() -> client.enqueueAll(NUMBERED, withNull, EnqueueOptions.DEFAULTS))
        .isInstanceOf(InvalidJobException.class)
        .satisfies(e -> assertThat(((InvalidJobException) e).field()).isEqualTo("payload"));

    assertThat(count("pgjobs.jobs")).as("jobs stored by the refused batches").isZero();
    List<UUID> ids = client.enqueueAll(NUMBERED, numbered(1_000), EnqueueOptions.DEFAULTS);
    assertThat(storedInPayloadOrder(ids)).as("the next batch, stored whole").isEqualTo(1_000);
    assertThat(count("pgjobs.jobs")).isEqualTo(1_000);
  }

  // ---------------------------------------------------------------- helpers

  private static List<Numbered> numbered(int count) {
    return IntStream.range(0, count).mapToObj(Numbered::new).toList();
  }

  /** How many stored jobs have, as payload {@code n}, the position of their id in {@code ids}. */
  private static long storedInPayloadOrder(List<UUID> ids) throws SQLException {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pgjobs.jobs j"
            + " JOIN unnest(?::uuid[]) WITH ORDINALITY AS r(id, position) ON r.id = j.id"
            + " WHERE (j.payload ->> 'n')::bigint = r.position - 1")) {
      ps.setArray(1, c.createArrayOf("uuid", ids.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static long countIn(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
