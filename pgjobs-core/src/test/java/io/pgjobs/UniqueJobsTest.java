package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.UniqueOptions.Replace;
import io.pgjobs.lifecycle.TcpProxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Acceptance 4: unique jobs. Concurrent enqueues of one unique job yield one job; once it has finished a
 * new one can be enqueued; periods expire; duplicates can replace run_at and payload; keys by fields and
 * by queue; bulk enqueue; the rules against idempotency keys.
 */
class UniqueJobsTest extends PgJobsTestBase {
  private static final int THREADS = 10;
  private static final int ROUNDS = 20;

  /** A payload with an id and a version, for uniqueness by field. */
  public record Order(String id, int version) {}

  private static final JobType<Numbered> UNIQUE_BY_ARGS = JobType.of(
          "unique_numbered", Numbered.class)
      .withUnique(UniqueOptions.builder().byArgs().build());
  private static final JobType<Order> ORDER = JobType.of("order_sync", Order.class);

  private static EnqueueOptions unique(UniqueOptions.Builder u) {
    return EnqueueOptions.builder().unique(u.build()).build();
  }

  private static long unfinished(String type) {
    return count("SELECT count(*) FROM pgjobs.jobs WHERE type = '" + type + "'");
  }

  @Test
  void tenThreadsEnqueueingTheSameUniqueJobConcurrentlyGetOneJobEachRoundAndANewOneAfterItFinished()
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      CyclicBarrier barrier = new CyclicBarrier(THREADS);
      Set<UUID> perRoundJobs = new HashSet<>();
      for (int round = 0; round < ROUNDS; round++) {
        List<Future<EnqueuedJob>> futures = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
          futures.add(pool.submit(() -> {
            barrier.await(30, TimeUnit.SECONDS); // all ten released at once
            return client.enqueue(UNIQUE_BY_ARGS, new Numbered(42));
          }));
        }
        List<EnqueuedJob> results = new ArrayList<>();
        for (Future<EnqueuedJob> f : futures) {
          results.add(f.get(60, TimeUnit.SECONDS));
        }
        List<EnqueuedJob> created =
            results.stream().filter(EnqueuedJob::created).toList();
        assertThat(created)
            .as("round %d: exactly one enqueue stored a job", round)
            .hasSize(1);
        UUID id = created.getFirst().job().id();
        assertThat(results)
            .as("round %d: every enqueue answered with that job", round)
            .extracting(r -> r.job().id())
            .containsOnly(id);
        assertThat(results.stream().filter(EnqueuedJob::duplicate).count()).isEqualTo(THREADS - 1);
        assertThat(unfinished("unique_numbered"))
            .as("round %d: unfinished jobs", round)
            .isEqualTo(1);
        assertThat(perRoundJobs.add(id)).as("round %d made a new job", round).isTrue();

        // Finish it (cancel moves it out of the hot table): the next round must get a new job.
        assertThat(client.cancel(id).outcome()).isEqualTo(CancelResult.Outcome.CANCELLED);
      }
      assertThat(perRoundJobs).hasSize(ROUNDS);
      assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE type = 'unique_numbered'"))
          .isEqualTo(ROUNDS);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aRunningJobStillCountsAndOnceItSucceededANewOneIsEnqueued() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    start(worker().queue(JobType.DEFAULT_QUEUE, 1).register(UNIQUE_BY_ARGS, (ctx, p) -> {
      release.await(30, TimeUnit.SECONDS);
      return null;
    }));
    EnqueuedJob first = client.enqueue(UNIQUE_BY_ARGS, new Numbered(1));
    assertThat(first.created()).isTrue();
    awaitState(first.job().id(), JobState.RUNNING);

    EnqueuedJob whileRunning = client.enqueue(UNIQUE_BY_ARGS, new Numbered(1));
    assertThat(whileRunning.duplicate()).isTrue();
    assertThat(whileRunning.job().id()).isEqualTo(first.job().id());
    assertThat(whileRunning.job().state()).isEqualTo(JobState.RUNNING);

    EnqueuedJob otherArgs = client.enqueue(UNIQUE_BY_ARGS, new Numbered(2));
    assertThat(otherArgs.created()).as("other args, other key").isTrue();

    release.countDown();
    awaitState(first.job().id(), JobState.SUCCEEDED);
    EnqueuedJob after = client.enqueue(UNIQUE_BY_ARGS, new Numbered(1));
    assertThat(after.created()).as("a new job once the first has finished").isTrue();
    assertThat(after.job().id()).isNotEqualTo(first.job().id());
  }

  @Test
  void withinAPeriodTheJobIsADuplicateAndInTheNextPeriodANewOneIsStored() throws Exception {
    EnqueueOptions perSecond =
        unique(UniqueOptions.builder().byFields("id").period(Duration.ofSeconds(1)));
    EnqueuedJob first;
    // now() is the transaction's start: both enqueues fall in one period, whatever the clock does.
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      first = client.enqueue(tx, ORDER.name(), new Order("a", 1), perSecond);
      EnqueuedJob second = client.enqueue(tx, ORDER.name(), new Order("a", 2), perSecond);
      assertThat(first.created()).isTrue();
      assertThat(second.duplicate()).isTrue();
      assertThat(second.job().id()).isEqualTo(first.job().id());
      tx.commit();
    }

    AtomicReference<EnqueuedJob> next = new AtomicReference<>();
    await("an enqueue in the next period stores a new job")
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(50))
        .until(() -> {
          next.set(client.enqueue(ORDER.name(), new Order("a", 3), perSecond));
          return next.get().created();
        });
    assertThat(next.get().job().id()).isNotEqualTo(first.job().id());
    assertThat(client.get(first.job().id()).orElseThrow().state())
        .as("the first is still waiting")
        .isEqualTo(JobState.QUEUED);
    assertThat(next.get().job().createdAt().truncatedTo(ChronoUnit.SECONDS))
        .as("created in a later one-second period")
        .isAfter(first.job().createdAt().truncatedTo(ChronoUnit.SECONDS));
    assertThat(unfinished("order_sync")).isEqualTo(2);
  }

  @Test
  void replaceUpdatesRunAtAndPayloadOfTheWaitingJobOnlyWhenAsked() {
    Instant later = Instant.now().plus(Duration.ofHours(2)).truncatedTo(ChronoUnit.MILLIS);
    Instant sooner = Instant.now().plus(Duration.ofMinutes(5)).truncatedTo(ChronoUnit.MILLIS);
    UniqueOptions replacing = UniqueOptions.builder()
        .byFields("id")
        .replace(Replace.RUN_AT, Replace.PAYLOAD)
        .build();
    UniqueOptions keeping = UniqueOptions.builder().byFields("id").build();

    EnqueuedJob first = client.enqueue(
        ORDER,
        new Order("a", 1),
        EnqueueOptions.builder().runAt(later).unique(replacing).build());
    EnqueuedJob kept = client.enqueue(
        ORDER,
        new Order("a", 2),
        EnqueueOptions.builder().runAt(sooner).unique(keeping).build());
    assertThat(kept.duplicate()).isTrue();
    assertThat(kept.job().runAt()).as("no replace asked: run_at kept").isEqualTo(later);
    assertThat(kept.job().payload().get("version").asInt()).isEqualTo(1);

    EnqueuedJob replaced = client.enqueue(
        ORDER,
        new Order("a", 3),
        EnqueueOptions.builder().runAt(sooner).unique(replacing).build());
    assertThat(replaced.duplicate()).isTrue();
    assertThat(replaced.job().id()).isEqualTo(first.job().id());
    assertThat(replaced.job().runAt()).isEqualTo(sooner);
    assertThat(replaced.job().payload().get("version").asInt()).isEqualTo(3);
    Job stored = client.get(first.job().id()).orElseThrow();
    assertThat(stored.runAt()).isEqualTo(sooner);
    assertThat(stored.payload().get("version").asInt()).isEqualTo(3);

    EnqueuedJob onlyRunAt = client.enqueue(
        ORDER,
        new Order("a", 4),
        EnqueueOptions.builder()
            .runAt(later)
            .unique(
                UniqueOptions.builder().byFields("id").replace(Replace.RUN_AT).build())
            .build());
    assertThat(onlyRunAt.job().runAt()).isEqualTo(later);
    assertThat(onlyRunAt.job().payload().get("version").asInt())
        .as("payload not asked")
        .isEqualTo(3);
    assertThat(unfinished("order_sync")).isEqualTo(1);
  }

  @Test
  void replaceLeavesARunningJobAsItIs() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    start(worker().queue(JobType.DEFAULT_QUEUE, 1).register(ORDER, (ctx, p) -> {
      release.await(30, TimeUnit.SECONDS);
      return null;
    }));
    UniqueOptions replacing = UniqueOptions.builder()
        .byFields("id")
        .replace(Replace.RUN_AT, Replace.PAYLOAD)
        .build();
    EnqueuedJob first = client.enqueue(
        ORDER, new Order("r", 1), EnqueueOptions.builder().unique(replacing).build());
    Job running = awaitState(first.job().id(), JobState.RUNNING);
    Instant later = Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.MILLIS);

    EnqueuedJob dup = client.enqueue(
        ORDER,
        new Order("r", 2),
        EnqueueOptions.builder().runAt(later).unique(replacing).build());

    assertThat(dup.duplicate()).isTrue();
    assertThat(dup.job().state()).isEqualTo(JobState.RUNNING);
    assertThat(dup.job().runAt()).isEqualTo(running.runAt());
    assertThat(dup.job().payload().get("version").asInt()).isEqualTo(1);
    release.countDown();
    awaitState(first.job().id(), JobState.SUCCEEDED);
  }

  @Test
  void byFieldsComparesOnlyTheListedFieldsAndRefusesAPayloadWithoutOne() {
    EnqueueOptions byId = unique(UniqueOptions.builder().byFields("id"));
    EnqueuedJob a1 = client.enqueue(ORDER, new Order("a", 1), byId);
    EnqueuedJob a2 = client.enqueue(ORDER, new Order("a", 2), byId);
    EnqueuedJob b1 = client.enqueue(ORDER, new Order("b", 1), byId);
    assertThat(a2.duplicate()).isTrue();
    assertThat(a2.job().id()).isEqualTo(a1.job().id());
    assertThat(b1.created()).isTrue();

    EnqueuedJob wholeA2 =
        client.enqueue(ORDER, new Order("a", 2), unique(UniqueOptions.builder().byArgs()));
    assertThat(wholeA2.created())
        .as("a rule by the whole payload is another key")
        .isTrue();
    EnqueuedJob byType = client.enqueue(ORDER, new Order("z", 9), unique(UniqueOptions.builder()));
    EnqueuedJob byType2 = client.enqueue(ORDER, new Order("y", 8), unique(UniqueOptions.builder()));
    assertThat(byType2.duplicate()).as("by type alone: one job of the type").isTrue();
    assertThat(byType2.job().id()).isEqualTo(byType.job().id());

    long before = count("pgjobs.jobs");
    assertThatThrownBy(() -> client.enqueue(ORDER, new Order(null, 1), byId))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("'id'")
        .hasMessageContaining("unique");
    assertThatThrownBy(() -> client.enqueue(
            ORDER, new Order("a", 1), unique(UniqueOptions.builder().byFields("/no/such"))))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("'/no/such'");
    assertThat(count("pgjobs.jobs")).as("nothing stored on rejection").isEqualTo(before);
  }

  @Test
  void byQueueMakesTheSameJobInTwoQueuesTwoJobs() {
    UniqueOptions byQueue = UniqueOptions.builder().byArgs().byQueue().build();
    EnqueuedJob q1 = client.enqueue(
        ORDER,
        new Order("a", 1),
        EnqueueOptions.builder().queue("q1").unique(byQueue).build());
    EnqueuedJob q2 = client.enqueue(
        ORDER,
        new Order("a", 1),
        EnqueueOptions.builder().queue("q2").unique(byQueue).build());
    EnqueuedJob q1Again = client.enqueue(
        ORDER,
        new Order("a", 1),
        EnqueueOptions.builder().queue("q1").unique(byQueue).build());
    assertThat(q2.created()).isTrue();
    assertThat(q1Again.job().id()).isEqualTo(q1.job().id());

    UniqueOptions notByQueue = UniqueOptions.builder().byArgs().build();
    EnqueuedJob n1 = client.enqueue(
        ORDER,
        new Order("n", 1),
        EnqueueOptions.builder().queue("q1").unique(notByQueue).build());
    EnqueuedJob n2 = client.enqueue(
        ORDER,
        new Order("n", 1),
        EnqueueOptions.builder().queue("q2").unique(notByQueue).build());
    assertThat(n2.duplicate()).isTrue();
    assertThat(n2.job().id()).isEqualTo(n1.job().id());
    assertThat(n2.job().queue()).as("the existing job keeps its queue").isEqualTo("q1");
  }

  @Test
  void bulkEnqueueHonoursUniquenessWithinTheBatchAndAgainstExistingJobs() throws Exception {
    EnqueueOptions byId = unique(UniqueOptions.builder().byFields("id"));
    EnqueuedJob existing = client.enqueue(ORDER, new Order("a", 0), byId);

    List<UUID> ids = client.enqueueAll(
        ORDER,
        List.of(new Order("a", 1), new Order("b", 1), new Order("b", 2), new Order("c", 1)),
        byId);

    assertThat(ids).hasSize(4);
    assertThat(ids.get(0)).as("a: the existing job").isEqualTo(existing.job().id());
    assertThat(ids.get(1)).as("b twice in one batch: one job").isEqualTo(ids.get(2));
    assertThat(new HashSet<>(ids)).hasSize(3);
    assertThat(unfinished("order_sync")).isEqualTo(3);
    assertThat(client.get(ids.get(1)).orElseThrow().payload().get("version").asInt())
        .as("the first b")
        .isEqualTo(1);
    assertThat(client.get(ids.get(3)).orElseThrow().payload().get("id").asString())
        .isEqualTo("c");

    // Bulk and single enqueues compute the same key with a period (one transaction: one now()).
    EnqueueOptions hourly =
        unique(UniqueOptions.builder().byFields("id").period(Duration.ofHours(1)));
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      EnqueuedJob single = client.enqueue(tx, ORDER, new Order("p", 1), hourly);
      List<UUID> bulk =
          client.enqueueAll(tx, ORDER, List.of(new Order("p", 2), new Order("q", 1)), hourly);
      assertThat(bulk.getFirst()).isEqualTo(single.job().id());
      tx.commit();
    }
    assertThat(unfinished("order_sync")).isEqualTo(5);

    // Non-unique bulk enqueues stay on COPY and store no key.
    client.enqueueAll(NUMBERED, List.of(new Numbered(1), new Numbered(1)), EnqueueOptions.DEFAULTS);
    assertThat(count(
            "SELECT count(*) FROM pgjobs.jobs WHERE type = 'numbered' AND unique_key IS NULL"))
        .isEqualTo(2);
  }

  /**
   * Finding 15: a bulk enqueue with a period computes the period from its INSERT's own now() (as the
   * single enqueue does), not from a clock read in another statement before it. The network stalls
   * 1.5 s just before the INSERT reaches the server, so more than a one-second period passes between
   * anything read before and the INSERT: the stored key must still be the key of the period the row's
   * created_at (the INSERT's now()) falls in, or a single enqueue in that period would store a second job.
   */
  @Test
  void bulkEnqueueWithAPeriodTakesThePeriodOfItsOwnInsert() throws Exception {
    UniqueOptions perSecond =
        UniqueOptions.builder().byFields("id").period(Duration.ofSeconds(1)).build();
    UniqueOptions perSecondWithSucceeded = UniqueOptions.builder()
        .byFields("id")
        .period(Duration.ofSeconds(1))
        .states(JobState.QUEUED, JobState.RUNNING, JobState.RETRYING, JobState.SUCCEEDED)
        .build();
    try (TcpProxy proxy = TcpProxy.before(db.jdbcUrl());
        HikariDataSource pool = poolThrough(proxy)) {
      JobClient producer = JobClient.builder(pool).build();

      // The default states: the key is the job's unique_key column.
      proxy.delayMessage("INSERT INTO pgjobs.jobs", Duration.ofMillis(1_500));
      UUID id = producer
          .enqueueAll(
              ORDER,
              List.of(new Order("p15", 1)),
              EnqueueOptions.builder().unique(perSecond).build())
          .getFirst();
      assertThat(keyOfCreatedAtsPeriod(
              "SELECT unique_key, created_at FROM pgjobs.jobs WHERE id = ?", id, perSecond))
          .as("key stored by the bulk enqueue is its INSERT's period's")
          .isTrue();

      // Finished states counted: the key is a row of unique_keys naming the job.
      proxy.delayMessage("INSERT INTO pgjobs.unique_keys", Duration.ofMillis(1_500));
      UUID held = producer
          .enqueueAll(
              ORDER,
              List.of(new Order("p15-states", 1)),
              EnqueueOptions.builder().unique(perSecondWithSucceeded).build())
          .getFirst();
      assertThat(keyOfCreatedAtsPeriod(
              "SELECT k.unique_key, j.created_at FROM pgjobs.unique_keys k JOIN pgjobs.jobs j ON j.id = k.job_id"
                  + " WHERE j.id = ? AND k.expires_at = to_timestamp(ceil(extract(epoch FROM j.created_at + interval '1 microsecond')))",
              held,
              perSecondWithSucceeded))
          .as("key (and end of period) stored by the bulk enqueue are its INSERT's period's")
          .isTrue();
    }
  }

  /**
   * Whether the key the query returns with a created_at (one row for {@code id}) is the key of the
   * one-second period that created_at falls in, as {@code EnqueueSql.UNIQUE_KEY} computes it.
   */
  private static boolean keyOfCreatedAtsPeriod(String sql, UUID id, UniqueOptions rule)
      throws Exception {
    byte[] base = UniqueKeys.base(
        "order_sync",
        JobType.DEFAULT_QUEUE,
        "{\"id\":\"" + client.get(id).orElseThrow().payload().get("id").asString()
            + "\",\"version\":1}",
        rule);
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT q.unique_key = sha256(?::bytea || int8send(floor(extract(epoch FROM q.created_at) * 1000)::bigint / 1000))"
                + " FROM (" + sql + ") AS q")) {
      ps.setBytes(1, base);
      ps.setObject(2, id);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("the job's key row").isTrue();
        return rs.getBoolean(1);
      }
    }
  }

  private static HikariDataSource poolThrough(TcpProxy proxy) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(proxy.through(db.jdbcUrl()));
    config.setMaximumPoolSize(1);
    config.setMinimumIdle(0);
    return new HikariDataSource(config);
  }

  @Test
  void bulkEnqueueWithReplaceLeavesTheLastPayloadOfEqualKeysAndARolledBackBatchStoresNothing()
      throws Exception {
    EnqueueOptions replacing =
        unique(UniqueOptions.builder().byFields("id").replace(Replace.PAYLOAD));
    List<UUID> ids = client.enqueueAll(
        ORDER, List.of(new Order("a", 1), new Order("a", 2), new Order("a", 3)), replacing);
    assertThat(new HashSet<>(ids)).hasSize(1);
    assertThat(client.get(ids.getFirst()).orElseThrow().payload().get("version").asInt())
        .as("as three enqueues one by one would leave it")
        .isEqualTo(3);

    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      client.enqueueAll(tx, ORDER, List.of(new Order("r1", 1), new Order("r2", 1)), replacing);
      tx.rollback();
    }
    assertThat(unfinished("order_sync")).isEqualTo(1);
  }

  @Test
  void aPayloadOfAMebibyteOnATypeWithTheLongestNameIsUniqueByTheWholePayload() {
    JobType<Order> type = JobType.of("u".repeat(255), Order.class);
    String big = "x\u00e9\"'\\\uD83D\uDE00\t".repeat((1 << 20) / 8); // ~1 MiB of awkward characters
    EnqueueOptions byArgs = unique(UniqueOptions.builder().byArgs());
    // U+0000 cannot be stored in jsonb: refused by the database as every enqueue is (LimitsTest),
    // nothing stored.
    assertThatThrownBy(() -> client.enqueue(type, new Order("before \u0000 after", 1), byArgs))
        .isInstanceOf(PgJobsException.class);
    assertThat(unfinished("u".repeat(255))).isZero();

    EnqueuedJob first = client.enqueue(type, new Order(big, 1), byArgs);
    EnqueuedJob again = client.enqueue(type, new Order(big, 1), byArgs);
    EnqueuedJob other = client.enqueue(type, new Order(big, 2), byArgs);

    assertThat(first.created()).isTrue();
    assertThat(again.duplicate()).isTrue();
    assertThat(again.job().id()).isEqualTo(first.job().id());
    assertThat(other.created()).as("another payload is another key").isTrue();
    assertThat(unfinished("u".repeat(255))).isEqualTo(2);
  }

  @Test
  void bulkAndSingleEnqueuesRacingOnOverlappingKeysGetOneJobPerKeyWithoutDeadlock()
      throws Exception {
    EnqueueOptions byId = unique(UniqueOptions.builder().byFields("id"));
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      for (int round = 0; round < 5; round++) {
        db.execute("TRUNCATE pgjobs.jobs");
        java.util.Map<String, Set<UUID>> idsByKey =
            overlappingBulkAndSingleEnqueues(pool, ORDER, byId);
        assertThat(idsByKey).hasSize(10);
        idsByKey.forEach((k, ids) -> assertThat(ids)
            .as("round: every caller got the one job of key %s", k)
            .hasSize(1));
        assertThat(unfinished("order_sync")).isEqualTo(10);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void idempotencyKeysAndUniqueRules() {
    // Both on one enqueue: refused, nothing stored.
    assertThatThrownBy(() -> EnqueueOptions.builder()
            .idempotencyKey("k")
            .unique(UniqueOptions.BY_TYPE)
            .build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("unique");
    // Both on one type: refused.
    assertThatThrownBy(() -> JobType.of("both", Order.class)
            .withIdempotencyKeyFrom("id")
            .withUnique(UniqueOptions.BY_TYPE))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("not both");

    // An explicit idempotency key replaces the type's unique rule for that enqueue.
    EnqueuedJob k1 = client.enqueue(
        UNIQUE_BY_ARGS,
        new Numbered(5),
        EnqueueOptions.builder().idempotencyKey("k1").build());
    EnqueuedJob k2 = client.enqueue(
        UNIQUE_BY_ARGS,
        new Numbered(5),
        EnqueueOptions.builder().idempotencyKey("k2").build());
    assertThat(k1.created()).isTrue();
    assertThat(k2.created()).as("the key decides, not the type's unique rule").isTrue();
    EnqueuedJob k1Again = client.enqueue(
        UNIQUE_BY_ARGS,
        new Numbered(5),
        EnqueueOptions.builder().idempotencyKey("k1").build());
    assertThat(k1Again.replayed()).isTrue();
    assertThat(k1Again.duplicate()).isFalse();

    // An explicit unique rule replaces the type's idempotency key from a field.
    JobType<Order> keyed = JobType.of("keyed_order", Order.class).withIdempotencyKeyFrom("id");
    EnqueuedJob u1 =
        client.enqueue(keyed, new Order("x", 1), unique(UniqueOptions.builder().byFields("id")));
    EnqueuedJob u2 =
        client.enqueue(keyed, new Order("x", 2), unique(UniqueOptions.builder().byFields("id")));
    assertThat(u1.job().idempotencyKey()).isNull();
    assertThat(u2.duplicate()).isTrue();
    assertThat(count(
            "SELECT count(*) FROM pgjobs.job_keys WHERE idempotency_key LIKE 'keyed_order:%'"))
        .isZero();
  }

  @Test
  void invalidRulesAreRefusedNamingTheOption() {
    assertThatThrownBy(() -> UniqueOptions.builder().period(Duration.ZERO).build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("unique.period");
    assertThatThrownBy(
            () -> UniqueOptions.builder().period(Duration.ofSeconds(-5)).build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("unique.period");
    assertThatThrownBy(
            () -> UniqueOptions.builder().period(Duration.ofDays(400)).build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("366 days");
    assertThatThrownBy(() -> UniqueOptions.builder().byArgs().byFields("id").build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("not both");
    assertThatThrownBy(() -> UniqueOptions.builder().byFields("id", "id").build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("twice");
    assertThatThrownBy(() -> UniqueOptions.builder().byFields("bad field!").build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("unique.byArgs");
    assertThatThrownBy(() -> Replace.parse("priority"))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("allowed: run_at, payload");
  }

  @Test
  void jobsWithoutUniquenessStoreNoKey() {
    client.enqueue(NUMBERED, new Numbered(1));
    client.enqueue(NUMBERED, new Numbered(1));
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE unique_key IS NULL"))
        .isEqualTo(2);
    assertThat(count("SELECT count(*) FROM pg_indexes WHERE indexname = 'jobs_unique_key_uidx'"
            + " AND indexdef LIKE '%WHERE (unique_key IS NOT NULL)%'"))
        .isEqualTo(1);
  }

  /** A payload whose type is unique by default through its annotation. */
  @JobDefaults(
      name = "nightly_digest",
      unique =
          @JobDefaults.Unique(
              enabled = true,
              byArgs = {"id"},
              period = "1h",
              replace = Replace.PAYLOAD))
  public record Digest(String id, int version) {}

  @Test
  void jobDefaultsAnnotationMakesATypeUniqueAndChildJobsKeepTheirRule() throws Exception {
    JobType<Digest> digest = JobType.of(Digest.class);
    assertThat(digest.unique())
        .isEqualTo(UniqueOptions.builder()
            .byFields("id")
            .period(Duration.ofHours(1))
            .replace(Replace.PAYLOAD)
            .build());
    // One transaction: one now(), so one period whatever the clock does.
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      EnqueuedJob first = client.enqueue(tx, digest, new Digest("d", 1), EnqueueOptions.DEFAULTS);
      EnqueuedJob second = client.enqueue(tx, digest, new Digest("d", 2), EnqueueOptions.DEFAULTS);
      assertThat(second.duplicate()).isTrue();
      assertThat(second.job().id()).isEqualTo(first.job().id());
      assertThat(second.job().payload().get("version").asInt()).isEqualTo(2);
      tx.commit();
    }

    // A handler's ctx.enqueue keeps the unique rule it was given.
    CountDownLatch done = new CountDownLatch(1);
    List<EnqueuedJob> children = new java.util.concurrent.CopyOnWriteArrayList<>();
    start(worker().queue(JobType.DEFAULT_QUEUE, 1).register(NUMBERED, (ctx, p) -> {
      for (int i = 0; i < 2; i++) {
        children.add(ctx.enqueue(
            ORDER, new Order("child", i), unique(UniqueOptions.builder().byFields("id"))));
      }
      done.countDown();
      return null;
    }));
    client.enqueue(NUMBERED, new Numbered(1));
    assertThat(done.await(20, TimeUnit.SECONDS)).isTrue();
    assertThat(children).hasSize(2);
    assertThat(children.get(1).duplicate()).isTrue();
    assertThat(children.get(1).job().id()).isEqualTo(children.get(0).job().id());

    @JobDefaults(name = "bad_unique", unique = @JobDefaults.Unique(enabled = true, period = "0s"))
    record BadUnique(String id) {}
    assertThatThrownBy(() -> JobType.of(BadUnique.class))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("@JobDefaults");
  }

  /**
   * {@value #THREADS} callers at once, each enqueueing its own version of the orders k0..k9 (in its own
   * order): the even ones in one bulk call, the odd ones one by one. Returns the job ids each key was
   * answered with, over all callers.
   */
  static java.util.Map<String, Set<UUID>> overlappingBulkAndSingleEnqueues(
      ExecutorService pool, JobType<Order> type, EnqueueOptions options) throws Exception {
    CyclicBarrier barrier = new CyclicBarrier(THREADS);
    List<Future<java.util.Map<String, UUID>>> futures = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int thread = t;
      futures.add(pool.submit(() -> {
        List<Order> orders = new ArrayList<>();
        for (int k = 0; k < 10; k++) {
          orders.add(
              new Order("k" + ((k * 7 + thread * 3) % 10), thread)); // every thread its own order
        }
        barrier.await(30, TimeUnit.SECONDS);
        java.util.Map<String, UUID> seen = new java.util.HashMap<>();
        if (thread % 2 == 0) {
          List<UUID> ids = client.enqueueAll(type, orders, options);
          for (int i = 0; i < orders.size(); i++) {
            seen.put(orders.get(i).id(), ids.get(i));
          }
        } else {
          for (Order o : orders) {
            seen.put(o.id(), client.enqueue(type, o, options).job().id());
          }
        }
        return seen;
      }));
    }
    java.util.Map<String, Set<UUID>> idsByKey = new java.util.HashMap<>();
    for (Future<java.util.Map<String, UUID>> f : futures) {
      f.get(120, TimeUnit.SECONDS)
          .forEach((k, id) -> idsByKey.computeIfAbsent(k, x -> new HashSet<>()).add(id));
    }
    return idsByKey;
  }
}
