package io.pgjobs;

import static io.pgjobs.JobState.CANCELLED;
import static io.pgjobs.JobState.QUEUED;
import static io.pgjobs.JobState.RETRYING;
import static io.pgjobs.JobState.RUNNING;
import static io.pgjobs.JobState.SUCCEEDED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.UniqueJobsTest.Order;
import io.pgjobs.UniqueOptions.Replace;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.WorkerStore;
import java.sql.Connection;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Acceptance 4 for unique rules whose set of states holds finished ones (V18__unique_states.sql):
 * concurrent enqueues yield one job, a job finished in a state of the set still counts, one finished
 * outside it does not, periods expire, bulk enqueue and replace follow the same rule, maintenance removes
 * key rows that hold nothing, and the set is validated.
 */
class UniqueStatesTest extends PgJobsTestBase {
  private static final int THREADS = 10;
  private static final int ROUNDS = 20;

  /** Unique among the unfinished states and succeeded: "not again while one waits, runs or has succeeded". */
  private static final UniqueOptions UNTIL_PRUNED = UniqueOptions.builder()
      .byFields("id")
      .states(QUEUED, RUNNING, RETRYING, SUCCEEDED)
      .build();

  private static final JobType<Order> SUCCEEDS = JobType.of("unique_states_ok", Order.class);
  private static final JobType<Order> FAILS =
      JobType.of("unique_states_fail", Order.class).withMaxAttempts(1);

  private ExecutorService pool;

  @BeforeEach
  void emptyKeys() {
    db.execute("TRUNCATE pgjobs.unique_keys");
    pool = Executors.newFixedThreadPool(THREADS);
  }

  @AfterEach
  void stopPool() {
    pool.shutdownNow();
  }

  /**
   * Lets a FAILS job fail once opened: a job that failed at once would let a later thread of the same
   * burst store a new job rightly (failed is outside the set), so each round holds the job running until
   * every enqueue of the burst has answered.
   */
  private final AtomicReference<CountDownLatch> failGate =
      new AtomicReference<>(new CountDownLatch(0));

  /** A worker without maintenance (whose key pruning would race the assertions on unique_keys). */
  private void startWorker() {
    start(worker()
        .maintenance(false)
        .queue(JobType.DEFAULT_QUEUE, 2)
        .register(SUCCEEDS, (ctx, p) -> null)
        .register(FAILS, (ctx, p) -> {
          failGate.get().await(30, TimeUnit.SECONDS);
          throw new IllegalStateException("fails on purpose");
        }));
  }

  private static EnqueueOptions unique(UniqueOptions.Builder u) {
    return unique(u.build());
  }

  private static EnqueueOptions unique(UniqueOptions u) {
    return EnqueueOptions.builder().unique(u).build();
  }

  /** Ten threads released at once, each enqueueing {@code payload}; their answers. */
  private List<EnqueuedJob> burst(JobType<Order> type, Order payload, EnqueueOptions options)
      throws Exception {
    CyclicBarrier barrier = new CyclicBarrier(THREADS);
    List<Future<EnqueuedJob>> futures = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      futures.add(pool.submit(() -> {
        barrier.await(30, TimeUnit.SECONDS);
        return client.enqueue(type, payload, options);
      }));
    }
    List<EnqueuedJob> results = new ArrayList<>();
    for (Future<EnqueuedJob> f : futures) {
      results.add(f.get(60, TimeUnit.SECONDS));
    }
    return results;
  }

  private static UUID theOneCreated(List<EnqueuedJob> results, String what) {
    List<EnqueuedJob> created = results.stream().filter(EnqueuedJob::created).toList();
    assertThat(created).as("%s: exactly one enqueue stored a job", what).hasSize(1);
    UUID id = created.getFirst().job().id();
    assertThat(results)
        .as("%s: every enqueue answered with that job", what)
        .extracting(r -> r.job().id())
        .containsOnly(id);
    return id;
  }

  @Test
  void tenThreadsGetOneJobEachRoundAndOnceItSucceededEveryFurtherEnqueueReturnsTheSucceededJob()
      throws Exception {
    startWorker();
    EnqueueOptions options = unique(UNTIL_PRUNED);
    for (int round = 0; round < ROUNDS; round++) {
      Order order =
          new Order("round-" + round, 0); // a key per round: a fresh "period" without a clock
      UUID id = theOneCreated(burst(SUCCEEDS, order, options), "round " + round);
      awaitState(id, SUCCEEDED);

      List<EnqueuedJob> after = burst(SUCCEEDS, new Order(order.id(), 1), options);
      assertThat(after)
          .as("round %d: succeeded is in the set, so every enqueue is a duplicate", round)
          .allMatch(EnqueuedJob::duplicate)
          .extracting(r -> r.job().id())
          .containsOnly(id);
      assertThat(after).extracting(r -> r.job().state()).containsOnly(SUCCEEDED);
    }
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE type = 'unique_states_ok'"))
        .isEqualTo(ROUNDS);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE type = 'unique_states_ok'"))
        .isZero();
  }

  @Test
  void tenThreadsGetOneNewJobEachRoundOnceThePreviousFailedOutsideTheSet() throws Exception {
    startWorker();
    EnqueueOptions options = unique(UNTIL_PRUNED); // failed is not in the set
    Set<UUID> perRound = new HashSet<>();
    for (int round = 0; round < ROUNDS; round++) {
      CountDownLatch gate = new CountDownLatch(1);
      failGate.set(gate);
      UUID id = theOneCreated(burst(FAILS, new Order("same", round), options), "round " + round);
      assertThat(perRound.add(id)).as("round %d made a new job", round).isTrue();
      gate.countDown();
      awaitState(id, JobState.FAILED);
    }
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE type = 'unique_states_fail'"))
        .isEqualTo(ROUNDS);
    assertThat(count("pgjobs.unique_keys"))
        .as("one key row, handed from job to job")
        .isEqualTo(1);
  }

  @Test
  void aCancelledJobCountsOnlyWhenCancelledIsInTheSet() {
    EnqueueOptions withCancelled =
        unique(UniqueOptions.builder().byFields("id").states(QUEUED, RUNNING, RETRYING, CANCELLED));
    EnqueuedJob first = client.enqueue(SUCCEEDS, new Order("c", 1), withCancelled);
    client.cancel(first.job().id());
    EnqueuedJob again = client.enqueue(SUCCEEDS, new Order("c", 2), withCancelled);
    assertThat(again.duplicate()).isTrue();
    assertThat(again.job().id()).isEqualTo(first.job().id());
    assertThat(again.job().state()).isEqualTo(CANCELLED);

    EnqueueOptions withSucceeded = unique(UNTIL_PRUNED);
    EnqueuedJob other = client.enqueue(SUCCEEDS, new Order("c", 3), withSucceeded);
    client.cancel(other.job().id());
    EnqueuedJob next = client.enqueue(SUCCEEDS, new Order("c", 4), withSucceeded);
    assertThat(next.created()).as("cancelled is not in this set").isTrue();
  }

  @Test
  void aSucceededJobCountsWithinItsPeriodAndTheNextPeriodStoresANewJob() throws Exception {
    startWorker();
    EnqueueOptions perSecond = unique(UniqueOptions.builder()
        .byFields("id")
        .period(Duration.ofSeconds(1))
        .states(QUEUED, RUNNING, RETRYING, SUCCEEDED));
    EnqueuedJob first;
    // now() is the transaction's start: both enqueues fall in one period, whatever the clock does.
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      first = client.enqueue(tx, SUCCEEDS, new Order("p", 1), perSecond);
      EnqueuedJob second = client.enqueue(tx, SUCCEEDS, new Order("p", 2), perSecond);
      assertThat(first.created()).isTrue();
      assertThat(second.duplicate())
          .as("the same transaction sees its own holder")
          .isTrue();
      assertThat(second.job().id()).isEqualTo(first.job().id());
      tx.commit();
    }
    awaitState(first.job().id(), SUCCEEDED);
    assertThat(count("SELECT count(*) FROM pgjobs.unique_keys WHERE expires_at IS NOT NULL"))
        .isEqualTo(1);

    AtomicReference<EnqueuedJob> next = new AtomicReference<>();
    await("an enqueue in a later period stores a new job")
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(50))
        .until(() -> {
          next.set(client.enqueue(SUCCEEDS, new Order("p", 3), perSecond));
          return next.get().created();
        });
    assertThat(next.get().job().id()).isNotEqualTo(first.job().id());
    assertThat(next.get().job().createdAt().truncatedTo(ChronoUnit.SECONDS))
        .as("created in a later one-second period")
        .isAfter(first.job().createdAt().truncatedTo(ChronoUnit.SECONDS));
  }

  @Test
  void bulkEnqueueReturnsTheSucceededHolderAndStoresOneJobPerNewKey() throws Exception {
    startWorker();
    EnqueueOptions options = unique(UNTIL_PRUNED);
    EnqueuedJob done = client.enqueue(SUCCEEDS, new Order("a", 0), options);
    awaitState(done.job().id(), SUCCEEDED);

    List<UUID> ids = client.enqueueAll(
        FAILS, List.of(new Order("x", 1), new Order("y", 1), new Order("y", 2)), options);
    assertThat(ids.get(1)).as("y twice in one batch: one job").isEqualTo(ids.get(2));
    assertThat(new HashSet<>(ids)).hasSize(2);
    awaitState(ids.get(0), JobState.FAILED);
    awaitState(ids.get(1), JobState.FAILED);

    List<UUID> second = client.enqueueAll(
        SUCCEEDS, List.of(new Order("a", 1), new Order("b", 1), new Order("b", 2)), options);
    assertThat(second.get(0)).as("a: the succeeded job").isEqualTo(done.job().id());
    assertThat(second.get(1)).isEqualTo(second.get(2)).isNotEqualTo(done.job().id());
    List<UUID> failedKeys =
        client.enqueueAll(FAILS, List.of(new Order("x", 2), new Order("y", 3)), options);
    assertThat(failedKeys)
        .as("x and y failed, outside the set: new jobs")
        .doesNotContain(ids.get(0), ids.get(1))
        .doesNotHaveDuplicates();

    // Bulk and single enqueues compute the same key, period included (one transaction: one now()).
    EnqueueOptions hourly = unique(UniqueOptions.builder()
        .byFields("id")
        .period(Duration.ofHours(1))
        .states(QUEUED, RUNNING, RETRYING, SUCCEEDED));
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      EnqueuedJob single = client.enqueue(tx, SUCCEEDS, new Order("h", 1), hourly);
      List<UUID> bulk =
          client.enqueueAll(tx, SUCCEEDS, List.of(new Order("h", 2), new Order("i", 1)), hourly);
      assertThat(bulk.getFirst()).isEqualTo(single.job().id());
      tx.rollback();
    }
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE payload->>'id' IN ('h', 'i')"))
        .as("a rolled-back batch stores nothing")
        .isZero();
    assertThat(client.enqueue(SUCCEEDS, new Order("h", 3), hourly).created())
        .as("nor its key rows")
        .isTrue();
  }

  @Test
  void bulkAndSingleEnqueuesRacingOnOverlappingKeysGetOneJobPerKeyWithoutDeadlock()
      throws Exception {
    EnqueueOptions options = unique(UNTIL_PRUNED);
    for (int round = 0; round < 5; round++) {
      db.execute("TRUNCATE pgjobs.jobs, pgjobs.unique_keys");
      java.util.Map<String, Set<UUID>> idsByKey =
          UniqueJobsTest.overlappingBulkAndSingleEnqueues(pool, SUCCEEDS, options);
      assertThat(idsByKey).hasSize(10);
      idsByKey.forEach((k, ids) ->
          assertThat(ids).as("every caller got the one job of key %s", k).hasSize(1));
      assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE type = 'unique_states_ok'"))
          .isEqualTo(10);
    }
  }

  @Test
  void replaceUpdatesAWaitingHolderAndLeavesASucceededOneAsItIs() throws Exception {
    Instant later = Instant.now().plus(Duration.ofHours(2)).truncatedTo(ChronoUnit.MILLIS);
    Instant sooner = Instant.now().plus(Duration.ofMinutes(5)).truncatedTo(ChronoUnit.MILLIS);
    UniqueOptions replacing = UniqueOptions.builder()
        .byFields("id")
        .states(QUEUED, RUNNING, RETRYING, SUCCEEDED)
        .replace(Replace.RUN_AT, Replace.PAYLOAD)
        .build();
    EnqueuedJob first = client.enqueue(
        SUCCEEDS,
        new Order("r", 1),
        EnqueueOptions.builder().runAt(later).unique(replacing).build());
    EnqueuedJob replaced = client.enqueue(
        SUCCEEDS,
        new Order("r", 2),
        EnqueueOptions.builder().runAt(sooner).unique(replacing).build());
    assertThat(replaced.duplicate()).isTrue();
    assertThat(replaced.job().id()).isEqualTo(first.job().id());
    assertThat(replaced.job().runAt()).isEqualTo(sooner);
    assertThat(replaced.job().payload().get("version").asInt()).isEqualTo(2);

    List<UUID> bulk = client.enqueueAll(
        SUCCEEDS,
        List.of(new Order("r", 3)),
        EnqueueOptions.builder().runAt(later).unique(replacing).build());
    assertThat(bulk).containsExactly(first.job().id());
    Job afterBulk = client.get(first.job().id()).orElseThrow();
    assertThat(afterBulk.runAt()).isEqualTo(later);
    assertThat(afterBulk.payload().get("version").asInt()).isEqualTo(3);

    // Run it now and let it succeed: a finished job is never changed by a duplicate.
    client.enqueue(
        SUCCEEDS, new Order("r", 4), EnqueueOptions.builder().unique(replacing).build());
    startWorker();
    Job succeeded = awaitState(first.job().id(), SUCCEEDED);
    assertThat(succeeded.payload().get("version").asInt()).isEqualTo(4);
    EnqueuedJob onFinished = client.enqueue(
        SUCCEEDS,
        new Order("r", 5),
        EnqueueOptions.builder().runAt(later).unique(replacing).build());
    assertThat(onFinished.duplicate()).isTrue();
    assertThat(onFinished.job().state()).isEqualTo(SUCCEEDED);
    assertThat(onFinished.job().payload().get("version").asInt()).isEqualTo(4);
    assertThat(onFinished.job().runAt()).isEqualTo(succeeded.runAt());
  }

  @Test
  void theDefaultSetKeepsTheHotTableKeyAndASetWithFinishedStatesUsesTheKeyTableOnly() {
    assertThat(UniqueOptions.builder()
            .byFields("id")
            .states(QUEUED, RUNNING, RETRYING)
            .build())
        .as("the unfinished states are the default")
        .isEqualTo(UniqueOptions.builder().byFields("id").build());
    EnqueuedJob byDefault = client.enqueue(
        SUCCEEDS, new Order("d", 1), unique(UniqueOptions.builder().byFields("id")));
    EnqueuedJob withStates = client.enqueue(SUCCEEDS, new Order("d", 1), unique(UNTIL_PRUNED));
    assertThat(withStates.created()).as("two rules, two keys").isTrue();
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE unique_key IS NOT NULL AND id = '"
            + byDefault.job().id() + "'"))
        .isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE unique_key IS NULL AND id = '"
            + withStates.job().id() + "'"))
        .isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pgjobs.unique_keys WHERE job_id = '"
            + withStates.job().id() + "' AND finished_states = '{succeeded}'"))
        .isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pgjobs.unique_keys WHERE job_id = '"
            + byDefault.job().id() + "'"))
        .isZero();
  }

  @Test
  void aSetWithoutEveryUnfinishedStateIsRefusedSayingWhy() {
    assertThatThrownBy(
            () -> UniqueOptions.builder().states(QUEUED, RUNNING, SUCCEEDED).build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("unique.states")
        .hasMessageContaining("missing retrying")
        .hasMessageContaining("must never meet a unique constraint");
    assertThatThrownBy(() -> UniqueOptions.builder().states(SUCCEEDED).build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("missing queued, running, retrying");
    assertThat(UniqueOptions.builder()
            .states(QUEUED, RUNNING, RETRYING, SUCCEEDED, JobState.FAILED, CANCELLED)
            .build()
            .finishedStates())
        .containsExactly(SUCCEEDED, JobState.FAILED, CANCELLED);
  }

  @Test
  void maintenanceDeletesKeyRowsThatHoldNothingAndKeepsTheOthers() throws Exception {
    WorkerStore store =
        new WorkerStore(db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
    EnqueueOptions options = unique(UNTIL_PRUNED);
    EnqueuedJob waiting = client.enqueue(
        SUCCEEDS,
        new Order("waiting", 1),
        EnqueueOptions.builder()
            .runAt(Instant.now().plus(Duration.ofHours(1)))
            .unique(UNTIL_PRUNED)
            .build());
    EnqueuedJob cancelled = client.enqueue(SUCCEEDS, new Order("cancelled", 1), options);
    client.cancel(cancelled.job().id());
    EnqueuedJob expiring = client.enqueue(
        SUCCEEDS,
        new Order("expiring", 1),
        unique(UniqueOptions.builder()
            .byFields("id")
            .period(Duration.ofSeconds(1))
            .states(QUEUED, RUNNING, RETRYING, SUCCEEDED)));
    startWorker();
    EnqueuedJob succeeded = client.enqueue(SUCCEEDS, new Order("succeeded", 1), options);
    awaitState(succeeded.job().id(), SUCCEEDED);
    awaitState(expiring.job().id(), SUCCEEDED);
    assertThat(count("pgjobs.unique_keys")).isEqualTo(4);

    assertThat(store.pruneUniqueKeys(Duration.ofHours(1), 100))
        .as("the cancelled job's key")
        .isEqualTo(1);
    await("the one-second period ends")
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> store.pruneUniqueKeys(Duration.ZERO, 100) == 1);
    db.execute("DELETE FROM pgjobs.finished_jobs WHERE id = '" + succeeded.job().id()
        + "'"); // as pruning does
    assertThat(store.pruneUniqueKeys(Duration.ZERO, 100))
        .as("the pruned job's key")
        .isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pgjobs.unique_keys WHERE job_id = '"
            + waiting.job().id() + "'"))
        .as("a waiting holder keeps its key")
        .isEqualTo(1);
    assertThat(count("pgjobs.unique_keys")).isEqualTo(1);
    assertThat(client.enqueue(SUCCEEDS, new Order("succeeded", 2), options).created())
        .as("once its key row is gone, the key is free")
        .isTrue();
  }

  @Test
  void aWorkersMaintenanceDeletesTheKeyOfAJobCancelledOutsideTheSet() {
    EnqueuedJob cancelled = client.enqueue(SUCCEEDS, new Order("m", 1), unique(UNTIL_PRUNED));
    client.cancel(cancelled.job().id());
    assertThat(count("pgjobs.unique_keys")).isEqualTo(1);
    start(worker().register(SUCCEEDS, (ctx, p) -> null)); // maintenance on, as by default
    await("the pruning pass deletes the key row")
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> count("pgjobs.unique_keys") == 0);
  }

  /** A payload whose type counts succeeded jobs by default, through its annotation. */
  @JobDefaults(
      name = "hourly_report",
      unique =
          @JobDefaults.Unique(
              enabled = true,
              byArgs = {"id"},
              period = "1h",
              states = {QUEUED, RUNNING, RETRYING, SUCCEEDED}))
  public record Report(String id) {}

  @Test
  void jobDefaultsAnnotationTakesTheStatesAndRefusesAnIncompleteSet() {
    assertThat(JobType.of(Report.class).unique())
        .isEqualTo(UniqueOptions.builder()
            .byFields("id")
            .period(Duration.ofHours(1))
            .states(QUEUED, RUNNING, RETRYING, SUCCEEDED)
            .build());

    @JobDefaults(
        name = "bad_states",
        unique = @JobDefaults.Unique(enabled = true, states = SUCCEEDED))
    record BadStates(String id) {}
    assertThatThrownBy(() -> JobType.of(BadStates.class))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("unique.states")
        .hasMessageContaining("@JobDefaults");
  }
}
