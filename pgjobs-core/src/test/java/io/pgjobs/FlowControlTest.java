package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Flow control in the claim (issue 29): global and per-partition concurrency across workers, rates,
 * round-robin between partitions, strict order per partition, limits changed at run time, and bad input.
 * The workers here are in one JVM but each has its own pollers and connections, as separate processes
 * would; {@code FlowControlProcessesTest} kills worker JVMs.
 */
class FlowControlTest extends PgJobsTestBase {
  /** A job of one account: sleeps {@code sleepMs}, fails its first {@code failures} attempts. */
  public record Work(String account, int n, int sleepMs, int failures) {}

  static final JobType<Work> WORK = JobType.of("flow_work", Work.class)
      .withQueue("limited")
      .withMaxAttempts(10)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));

  /** One run of a handler, as the execution log records it. */
  record Run(String account, int n, int attempt, long startNanos, long endNanos) {}

  /**
   * Acceptance 4's size is 100 partitions of 100 jobs and acceptance 2's 5,000 jobs (50 s): CI runs 10 of 20
   * and 1,000; {@code -Dpgjobs.flow.fifoKeys=100 -Dpgjobs.flow.fifoJobs=100 -Dpgjobs.flow.rateJobs=5000} runs
   * the sizes (their figures are in the closing note).
   */
  static final int FIFO_KEYS = Integer.getInteger("pgjobs.flow.fifoKeys", 10);

  static final int FIFO_JOBS = Integer.getInteger("pgjobs.flow.fifoJobs", 20);
  static final int RATE_JOBS = Integer.getInteger("pgjobs.flow.rateJobs", 1_000);

  private final List<Run> log = new CopyOnWriteArrayList<>();
  private final AtomicInteger running = new AtomicInteger();
  private final AtomicInteger maxRunning = new AtomicInteger();
  private final Map<String, AtomicInteger> runningByAccount = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> maxByAccount = new ConcurrentHashMap<>();

  /**
   * While set, a handler that has started waits for it to open before its sleep: a test fills the
   * slots a limit allows and sees exactly how many, however late the two workers' claims fall.
   */
  private volatile CountDownLatch hold;

  @BeforeEach
  void noLimits() {
    db.execute("TRUNCATE pgjobs.queues, pgjobs.queue_rates");
  }

  private JobWorker startWorker(int lanes) {
    return start(worker()
        .pollInterval(Duration.ofMillis(200))
        .register(WORK, (ctx, w) -> {
          long start = System.nanoTime();
          int now = running.incrementAndGet();
          maxRunning.accumulateAndGet(now, Math::max);
          int mine = runningByAccount
              .computeIfAbsent(w.account(), a -> new AtomicInteger())
              .incrementAndGet();
          maxByAccount
              .computeIfAbsent(w.account(), a -> new AtomicInteger())
              .accumulateAndGet(mine, Math::max);
          try {
            CountDownLatch gate = hold;
            if (gate != null && !gate.await(60, TimeUnit.SECONDS)) {
              throw new IllegalStateException("the test never opened its hold");
            }
            if (w.sleepMs() > 0) {
              Thread.sleep(w.sleepMs());
            }
          } finally {
            runningByAccount.get(w.account()).decrementAndGet();
            running.decrementAndGet();
            log.add(new Run(w.account(), w.n(), ctx.attempt(), start, System.nanoTime()));
          }
          if (ctx.attempt() <= w.failures()) {
            throw new IllegalStateException(
                "planned failure " + ctx.attempt() + " of job " + w.n());
          }
          return null;
        })
        .queue("limited", lanes));
  }

  private static List<java.util.UUID> enqueue(List<Work> works) {
    return client.enqueueAll(WORK, works, EnqueueOptions.DEFAULTS);
  }

  private void awaitAllSucceeded(int jobs) {
    await()
        .atMost(Duration.ofSeconds(Math.max(60, jobs / 40)))
        .until(() ->
            count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'") == jobs);
    assertThat(count("pgjobs.jobs")).isZero();
  }

  @Test
  void globalConcurrencyHoldsAcrossWorkers() {
    client.setLimits("limited", QueueLimits.builder().globalConcurrency(4).build());
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      works.add(new Work("a" + (i % 5), i, 40, 0));
    }
    enqueue(works);
    startWorker(10);
    startWorker(10);
    startWorker(10);

    awaitAllSucceeded(60);
    assertThat(maxRunning.get())
        .as("most running at once, three workers of 10 lanes")
        .isEqualTo(4);
    assertThat(maxAtOnce(log)).isLessThanOrEqualTo(4);
  }

  @Test
  void partitionConcurrencyHoldsPerKeyAndTheGlobalLimitOverAll() {
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .globalConcurrency(5)
            .partitionBy("input.account")
            .partitionConcurrency(2)
            .build());
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < 80; i++) {
      works.add(new Work("acct-" + (i % 3), i, 30, 0)); // 3 accounts x 2 = 6 > the global 5
    }
    enqueue(works);
    startWorker(8);
    startWorker(8);

    awaitAllSucceeded(80);
    assertThat(maxRunning.get()).isEqualTo(5);
    assertThat(maxByAccount).hasSize(3);
    maxByAccount.forEach(
        (account, max) -> assertThat(max.get()).as(account).isLessThanOrEqualTo(2));
    assertThat(maxByAccount.values().stream().mapToInt(AtomicInteger::get).max().orElse(0))
        .isEqualTo(2);
  }

  /**
   * A claim of 16 jobs or more first takes the head of the queue in claim order when no partition crowds
   * it (claim_limited's fast path). Jobs of 40 partitions enqueued in turn make every head such a one, and
   * three workers of 32 lanes (more lanes than the 80 slots) claim large batches whose heads hold
   * partitions already at their limit: each partition's limit holds on that path too.
   */
  @Test
  void partitionConcurrencyHoldsWhenLargeClaimsTakeTheHeadOfTheQueue() {
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .partitionBy("input.account")
            .partitionConcurrency(2)
            .build());
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < 400; i++) {
      works.add(new Work("acct-" + (i % 40), i, 50, 0));
    }
    enqueue(works);
    startWorker(32);
    startWorker(32);
    startWorker(32);

    awaitAllSucceeded(400);
    assertThat(maxByAccount).hasSize(40);
    maxByAccount.forEach(
        (account, max) -> assertThat(max.get()).as(account).isLessThanOrEqualTo(2));
    assertThat(maxRunning.get())
        .as("claims as large as the fast path takes ran many partitions at once")
        .isGreaterThan(16);
  }

  @Test
  void partitionsTakeTurnsSoABigPartitionDoesNotStarveTheOthers() {
    client.setLimits(
        "limited", QueueLimits.builder().partitionBy("input.account").build());
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < 90; i++) {
      works.add(new Work("big", i, 0, 0)); // enqueued first: FIFO would run all 90 first
    }
    for (int i = 0; i < 9; i++) {
      works.add(new Work("small-" + i, 100 + i, 0, 0));
    }
    enqueue(works);
    startWorker(1);

    awaitAllSucceeded(99);
    List<String> order = log.stream()
        .sorted(java.util.Comparator.comparingLong(Run::startNanos))
        .map(Run::account)
        .toList();
    assertThat(order.subList(0, 10))
        .as("the first round takes one job of each of the ten partitions")
        .containsExactlyInAnyOrder(
            "big", "small-0", "small-1", "small-2", "small-3", "small-4", "small-5", "small-6",
            "small-7", "small-8");
  }

  @Test
  void partitionOfOneRunsItsJobsInEnqueueOrderThroughRetries() {
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .partitionBy("input.account")
            .partitionConcurrency(1)
            .build());
    Random random = new Random(29);
    List<Work> works = new ArrayList<>();
    for (int n = 0; n < FIFO_JOBS; n++) {
      for (int k = 0; k < FIFO_KEYS; k++) {
        works.add(new Work(
            "k" + k, n, random.nextInt(5), random.nextInt(10) == 0 ? 1 + random.nextInt(2) : 0));
      }
    }
    enqueue(works);
    startWorker(6);
    startWorker(6);

    awaitAllSucceeded(FIFO_KEYS * FIFO_JOBS);
    Map<String, List<Run>> byKey = new HashMap<>();
    log.stream()
        .sorted(java.util.Comparator.comparingLong(Run::startNanos))
        .forEach(r -> byKey.computeIfAbsent(r.account(), a -> new ArrayList<>()).add(r));
    assertThat(byKey).hasSize(FIFO_KEYS);
    byKey.forEach((key, runs) -> {
      for (int i = 1; i < runs.size(); i++) {
        Run before = runs.get(i - 1);
        Run run = runs.get(i);
        assertThat(run.startNanos())
            .as(key + ": runs never overlap")
            .isGreaterThanOrEqualTo(before.endNanos());
        assertThat(run.n())
            .as(key + ": a job starts only after every earlier one succeeded (a retry comes first)")
            .isGreaterThanOrEqualTo(before.n());
        if (run.n() == before.n()) {
          assertThat(run.attempt()).isEqualTo(before.attempt() + 1);
        }
      }
      assertThat(runs.stream().map(Run::n).distinct().toList())
          .as(key + ": every job, in enqueue order")
          .isSorted()
          .hasSize(FIFO_JOBS);
    });
    assertThat(log.stream().filter(r -> r.attempt() > 1))
        .as("some jobs were retried")
        .isNotEmpty();
  }

  @Test
  @org.junit.jupiter.api.Tag(
      io.pgjobs.testkit.Tags.SERIAL) // per-second windows of handler starts: timing
  void rateLimitSpacesStartsAndHoldsInEverySecond() {
    client.setLimits(
        "limited", QueueLimits.builder().rate(20, Duration.ofSeconds(1), 4).build());
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < 70; i++) {
      works.add(new Work("a", i, 0, 0));
    }
    enqueue(works);
    startWorker(10);
    startWorker(10);

    awaitAllSucceeded(70);
    List<Long> starts = log.stream().map(Run::startNanos).sorted().toList();
    // Any window of one second holds at most the rate plus the burst.
    for (int i = 0; i < starts.size(); i++) {
      long from = starts.get(i);
      long inWindow =
          starts.stream().filter(t -> t >= from && t < from + 1_000_000_000L).count();
      assertThat(inWindow).as("starts in the second from start " + i).isLessThanOrEqualTo(20 + 4);
    }
    double seconds = (starts.getLast() - starts.getFirst()) / 1e9;
    assertThat(seconds)
        .as("70 starts at 20 a second, 4 at once: at least (70 - 4) / 20 s")
        .isGreaterThanOrEqualTo((70 - 4) / 20.0 - 0.05);
  }

  @Test
  @org.junit.jupiter.api.Tag(io.pgjobs.testkit.Tags.SERIAL) // the rate reached is a timing bound
  void queueAndPartitionRatesHoldInEverySecondAndTheQueueRunsAtItsRate() {
    // Issue 29, acceptance 2, scaled to 10 s: 100 a second in the queue, 5 a second per partition
    // over 20 partitions, 1,000 jobs waiting.
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .rate(100, Duration.ofSeconds(1))
            .partitionBy("input.account")
            .partitionRate(5, Duration.ofSeconds(1))
            .build());
    QueueLimits limits = client.limits("limited").orElseThrow();
    int burst = limits.rate().burst();
    int keyBurst = limits.partitionRate().burst();
    assertThat(burst).as("default burst: 200 ms of 100 a second").isEqualTo(20);
    assertThat(keyBurst).as("default burst: at least 2").isEqualTo(2);
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < RATE_JOBS; i++) {
      works.add(new Work("p" + (i % 20), i, 0, 0));
    }
    enqueue(works);
    startWorker(20);
    startWorker(20);

    awaitAllSucceeded(RATE_JOBS);
    List<Run> byStart =
        log.stream().sorted(java.util.Comparator.comparingLong(Run::startNanos)).toList();
    // The claims' own times (attempted_at: the instant the rate was checked) hold the bound
    // exactly. The handlers start after their claim (milliseconds; more on a loaded machine: 127
    // and 136 in two CI runs), so their log may shift some starts of one second into the next: 25 %
    // of the rate. Without the limit the two workers' 40 lanes start thousands a second.
    assertThat(db.queryLong("SELECT max(n) FROM (SELECT count(*) OVER (ORDER BY attempted_at"
            + " RANGE BETWEEN CURRENT ROW AND interval '999999 microseconds' FOLLOWING) AS n"
            + " FROM pgjobs.finished_jobs) AS w"))
        .as("claims in any second")
        .isLessThanOrEqualTo(100 + burst);
    assertThat(maxInAnySecond(byStart))
        .as("handler starts in any second")
        .isLessThanOrEqualTo(100 + burst + 25);
    Map<String, List<Run>> byKey = new HashMap<>();
    byStart.forEach(
        r -> byKey.computeIfAbsent(r.account(), a -> new ArrayList<>()).add(r));
    byKey.forEach((key, runs) -> assertThat(maxInAnySecond(runs))
        .as("starts of " + key + " in any second")
        // As above, a handler's start may follow its claim late enough to land in the next second:
        // two more (8 against 7 in one CI run).
        .isLessThanOrEqualTo(5 + keyBurst + 2));
    double seconds = (byStart.getLast().startNanos() - byStart.getFirst().startNanos()) / 1e9;
    double rate = (byStart.size() - burst) / seconds;
    System.out.printf(
        "%,d starts in %.2f s: %.1f a second after the burst%n", RATE_JOBS, seconds, rate);
    assertThat(rate)
        .as("the queue's rate after its first burst, starts a second")
        .isBetween(95.0, 105.0);
  }

  /** The most of {@code runs} (sorted by start) that start within one second of each other. */
  private static long maxInAnySecond(List<Run> runs) {
    long max = 0;
    int from = 0;
    for (int to = 0; to < runs.size(); to++) {
      while (runs.get(to).startNanos() - runs.get(from).startNanos() >= 1_000_000_000L) {
        from++;
      }
      max = Math.max(max, to - from + 1);
    }
    return max;
  }

  @Test
  void loweringAndRaisingALimitAtRunTimeTakesEffectAtTheNextClaim() {
    client.setLimits("limited", QueueLimits.builder().globalConcurrency(5).build());
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      works.add(new Work("a", i, 20, 0));
    }
    enqueue(works);
    startWorker(8);
    startWorker(8);
    await().atMost(Duration.ofSeconds(20)).until(() -> maxRunning.get() == 5);

    client.setLimits("limited", QueueLimits.builder().globalConcurrency(1).build());
    long lowered = System.nanoTime();
    // Jobs claimed before the change finish (20 ms each); every claim after it sees the new limit.
    await().atMost(Duration.ofSeconds(5)).until(() -> running.get() <= 1);
    long settled = System.nanoTime();
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> log.stream().filter(r -> r.startNanos() > settled).count() >= 20);
    assertThat(maxAtOnce(log.stream().filter(r -> r.startNanos() > settled).toList()))
        .as("one at a time once the lowered limit holds")
        .isEqualTo(1);
    assertThat(Duration.ofNanos(settled - lowered)).isLessThan(Duration.ofSeconds(2));

    // Raised to 12: every handler started from here holds, so the slots fill to exactly the new
    // limit whenever each worker's next claim comes (20-ms jobs alone reached 12 at once only when
    // the two workers' claims fell within 20 ms of each other; a loaded CI machine missed it once).
    CountDownLatch gate = new CountDownLatch(1);
    hold = gate;
    try {
      client.setLimits("limited", QueueLimits.builder().globalConcurrency(12).build());
      await().atMost(Duration.ofSeconds(10)).until(() -> running.get() >= 12);
      assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running'"))
          .as("running in the database while 12 handlers hold")
          .isEqualTo(12);
      assertThat(running.get()).as("12 of 16 lanes busy").isEqualTo(12);

      // Cleared: the four idle lanes claim at their next poll, all 16 hold.
      client.clearLimits("limited");
      assertThat(client.limits("limited")).isEmpty();
      await().atMost(Duration.ofSeconds(10)).until(() -> running.get() == 16);
    } finally {
      hold = null;
      gate.countDown();
    }
    awaitAllSucceeded(300);
    assertThat(maxRunning.get()).as("16 lanes, no limit").isEqualTo(16);
  }

  @Test
  void limitsRoundTripAndReportUsage() {
    QueueLimits limits = QueueLimits.builder()
        .globalConcurrency(3)
        .rate(100, Duration.ofMinutes(1))
        .partitionBy("type")
        .partitionConcurrency(2)
        .partitionRate(5, Duration.ofSeconds(1), 2)
        .build();
    client.setLimits("limited", limits);
    assertThat(client.limits("limited")).contains(limits);
    assertThat(limits.rate().burst())
        .as("100 a minute: 200 ms of it is 1, at least 2")
        .isEqualTo(2);
    assertThat(QueueLimits.Rate.of(1, Duration.ofHours(1)).burst())
        .as("at most the limit")
        .isEqualTo(1);

    enqueue(List.of(new Work("a", 1, 0, 0), new Work("b", 2, 0, 0)));
    QueueLimitsStatus status = client.limitsStatus("limited").orElseThrow();
    assertThat(status.limits()).isEqualTo(limits);
    assertThat(status.source()).isEqualTo("api");
    assertThat(status.running()).isZero();
    assertThat(status.waiting()).isEqualTo(2);
    assertThat(status.partitions()).singleElement().satisfies(p -> {
      assertThat(p.partition()).isEqualTo("flow_work");
      assertThat(p.waiting()).isEqualTo(2);
    });
    assertThat(client.limitsStatus())
        .extracting(QueueLimitsStatus::queue)
        .containsExactly("limited");
  }

  @Test
  void aPartitionGivenAtEnqueueWinsOverTheRule() {
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .partitionBy("input.account")
            .partitionConcurrency(1)
            .build());
    client.enqueue(
        WORK,
        new Work("a", 1, 0, 0),
        EnqueueOptions.builder().partition("explicit").build());
    client.enqueue(WORK, new Work("a", 2, 0, 0));
    client.enqueue(WORK, new Work("", 3, 0, 0)); // an empty field: partition ""
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE limit_key = 'explicit'"))
        .isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE limit_key = 'a'"))
        .isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE limit_key = ''"))
        .isEqualTo(1);
  }

  @Test
  void waitingJobsGetTheirPartitionWhenTheRuleIsSet() {
    enqueue(List.of(new Work("x", 1, 0, 0), new Work("y", 2, 0, 0)));
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE limit_key IS NULL"))
        .isEqualTo(2);
    client.setLimits(
        "limited", QueueLimits.builder().partitionBy("input.account").build());
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE limit_key IN ('x', 'y')"))
        .isEqualTo(2);
  }

  @Test
  void aJobEnqueuedWithoutItsPartitionStillRunsOnceMaintenanceKeysIt() {
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .partitionBy("input.account")
            .partitionConcurrency(1)
            .build());
    // As plain SQL (or a client that had not read the rule yet) would insert it: no key.
    db.execute("INSERT INTO pgjobs.jobs (id, type, queue, payload, priority, max_attempts)"
        + " VALUES (gen_random_uuid(), 'flow_work', 'limited',"
        + " '{\"account\": \"raw\", \"n\": 1, \"sleepMs\": 0, \"failures\": 0}', 50, 3)");
    startWorker(2);
    awaitAllSucceeded(1);
    assertThat(log).singleElement().extracting(Run::account).isEqualTo("raw");
  }

  @Test
  void aJobStartedWithoutAKeyAsTheFirstLimitsWereSetIsCountedByMaintenance() {
    client.setLimits("limited", QueueLimits.builder().globalConcurrency(1).build());
    JobWorker worker = start(worker().register(NUMBERED, (ctx, n) -> null));
    // As an unlimited claim in flight while the limits were set would have left it: running, no key
    // (held by a live worker, so rescue leaves it alone).
    db.execute(
        "INSERT INTO pgjobs.jobs (id, type, queue, payload, priority, max_attempts, state, attempts,"
            + " locked_by, claim_token, heartbeat_at) VALUES (gen_random_uuid(), 'flow_work', 'limited',"
            + " '{}', 50, 3, 'running', 1, '" + worker.workerId() + "', 1, now())");
    // Not counted while it has no key. The maintenance leader may key it at any moment, so the
    // count is read before the keys: a job counted is a job keyed.
    long running = client.limitsStatus("limited").orElseThrow().running();
    assertThat(running)
        .isLessThanOrEqualTo(db.queryLong(
            "SELECT count(*) FROM pgjobs.jobs WHERE queue = 'limited' AND limit_key IS NOT NULL"));
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> client.limitsStatus("limited").orElseThrow().running() == 1);
  }

  @Test
  void aTypeComputesItsJobsPartitionsAndDeclaresItsQueuesLimits() {
    QueueLimits limits =
        QueueLimits.builder().partitionBy("partition").partitionConcurrency(1).build();
    JobType<Work> typed =
        WORK.withPartition(w -> "acct:" + w.account().toUpperCase()).withLimits(limits);
    JobClient byName = JobClient.builder(db.dataSource()).knownTypes(typed).build();

    client.enqueue(typed, new Work("a", 1, 0, 0));
    byName.enqueue(
        "flow_work",
        Map.of("account", "b", "n", 2, "sleepMs", 0, "failures", 0),
        EnqueueOptions.DEFAULTS);
    client.enqueueAll(typed, List.of(new Work("c", 3, 0, 0)), EnqueueOptions.DEFAULTS);
    client.enqueue(
        typed,
        new Work("d", 4, 0, 0),
        EnqueueOptions.builder().partition("given").build());
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pgjobs.jobs WHERE limit_key IN ('acct:A', 'acct:B', 'acct:C', 'given')"))
        .as("computed by the type (typed, by name, in bulk), unless given at enqueue")
        .isEqualTo(4);
    assertThatThrownBy(() -> client.enqueue(WORK.withPartition(w -> null), new Work("e", 5, 0, 0)))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("partition");

    start(worker().register(typed, (ctx, w) -> null).queue("limited", 2));
    assertThat(client.limits("limited")).contains(limits);
  }

  @Test
  void aClientThatDoesNotKnowTheTypeKeysItsJobByTheQueuesRule() {
    client.setLimits(
        "limited", QueueLimits.builder().partitionBy("input.account").build());
    JobClient other = JobClient.builder(db.dataSource()).build();
    java.util.UUID with = other
        .enqueue(
            "flow_work",
            Map.of("account", "x"),
            EnqueueOptions.builder().queue("limited").build())
        .job()
        .id();
    java.util.UUID without = other
        .enqueue(
            "flow_work",
            Map.of("n", 1),
            EnqueueOptions.builder().queue("limited").build())
        .job()
        .id();
    assertThat(
            count("SELECT count(*) FROM pgjobs.jobs WHERE limit_key = 'x' AND id = '" + with + "'"))
        .isEqualTo(1);
    assertThat(count(
            "SELECT count(*) FROM pgjobs.jobs WHERE limit_key = '' AND id = '" + without + "'"))
        .as("a field that is missing: partition \"\"")
        .isEqualTo(1);
  }

  @Test
  void aDeclaredLimitDoesNotReplaceOneSetAtRunTime() {
    client.setLimits("limited", QueueLimits.builder().globalConcurrency(2).build());
    start(worker()
        .register(WORK, (ctx, w) -> null)
        .queue("limited", 4)
        .limits("limited", QueueLimits.builder().globalConcurrency(9).build()));
    assertThat(client.limits("limited").orElseThrow().globalConcurrency()).isEqualTo(2);
    client.clearLimits("limited");
    start(worker()
        .register(WORK, (ctx, w) -> null)
        .queue("limited", 4)
        .limits("limited", QueueLimits.builder().globalConcurrency(9).build()));
    assertThat(client.limits("limited").orElseThrow().globalConcurrency()).isEqualTo(9);
  }

  @Test
  void badLimitsAreRefusedNamingTheFieldAndTheRangeAndNothingIsStored() {
    assertThatThrownBy(() -> QueueLimits.builder().globalConcurrency(0))
        .hasMessage("global_concurrency must be between 1 and 100000, was 0");
    assertThatThrownBy(() -> QueueLimits.builder().globalConcurrency(-3))
        .hasMessageContaining("global_concurrency must be between 1 and 100000");
    assertThatThrownBy(() -> QueueLimits.builder().partitionConcurrency(100_001))
        .hasMessage("partition_concurrency must be between 1 and 100000, was 100001");
    assertThatThrownBy(() -> QueueLimits.builder().rate(0, Duration.ofSeconds(1)))
        .hasMessage("rate limit must be between 1 and 1000000 starts per period, was 0");
    assertThatThrownBy(() -> QueueLimits.builder().rate(10, Duration.ofDays(2)))
        .hasMessageContaining("rate period must be whole milliseconds from 1 ms to 24 h");
    assertThatThrownBy(() -> QueueLimits.builder().rate(10, Duration.ofNanos(500)))
        .hasMessageContaining("rate period must be whole milliseconds");
    assertThatThrownBy(() -> QueueLimits.builder().rate(10, Duration.ofSeconds(1), 0))
        .hasMessage("rate burst must be between 1 and 1000000, was 0");
    assertThatThrownBy(() -> QueueLimits.builder().partitionBy("payload.account"))
        .hasMessageContaining("partition_by must be 'type', 'partition' or 'input.<field>'")
        .hasMessageContaining("was 'payload.account'");
    assertThatThrownBy(() -> QueueLimits.builder().partitionBy("input.a b"))
        .hasMessageContaining("partition_by must be");
    assertThatThrownBy(() -> QueueLimits.builder().partitionConcurrency(2).build())
        .hasMessageContaining("partition_concurrency and partition_rate need partition_by");
    assertThatThrownBy(() ->
            client.setLimits("", QueueLimits.builder().globalConcurrency(1).build()))
        .isInstanceOf(InvalidJobException.class);
    assertThatThrownBy(() -> client.setLimits(
            "x".repeat(256), QueueLimits.builder().globalConcurrency(1).build()))
        .isInstanceOf(InvalidJobException.class);
    assertThat(client.limitsStatus()).isEmpty();
    assertThat(count("SELECT count(*) FROM pgjobs.queues WHERE limited")).isZero();
  }

  @Test
  void anUnlimitedQueueIsClaimedAsBeforeAndSkipsALimitedOne() throws Exception {
    List<Work> works = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      works.add(new Work("a", i, 0, 0));
    }
    enqueue(works);
    // A limited queue's jobs are never taken by the unlimited claim, whatever a worker believes.
    client.setLimits("limited", QueueLimits.builder().globalConcurrency(1).build());
    assertThat(new io.pgjobs.store.ExecutionStore(
                db.dataSource(), "pgjobs", new io.pgjobs.json.PayloadCodec(client.jsonMapper()))
            .claim("limited", 10, "w"))
        .isEmpty();
    client.clearLimits("limited");
    startWorker(4);
    awaitAllSucceeded(20);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'"))
        .isEqualTo(20);
  }

  /** The most runs of {@code runs} that overlap at one instant. */
  static int maxAtOnce(List<Run> runs) {
    List<long[]> edges = new ArrayList<>();
    for (Run r : runs) {
      edges.add(new long[] {r.startNanos(), 1});
      edges.add(new long[] {r.endNanos(), -1});
    }
    // At equal times, ends first: a run that ends as another starts is not overlapping it.
    edges.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
    int now = 0;
    int max = 0;
    for (long[] e : edges) {
      now += (int) e[1];
      max = Math.max(max, now);
    }
    return max;
  }
}
