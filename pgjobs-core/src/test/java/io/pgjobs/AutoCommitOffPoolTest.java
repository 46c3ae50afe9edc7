package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A pool whose connections come with auto-commit off (HikariCP {@code autoCommit=false}, as
 * {@code spring.datasource.hikari.auto-commit=false} sets it): every write pgjobs makes on a borrowed
 * connection still commits, and the pool gets each connection back in the mode it lent it.
 */
class AutoCommitOffPoolTest extends PgJobsTestBase {
  static final JobType<Numbered> PLAIN = JobType.of("plain", Numbered.class);
  /** Fails its first attempt, then succeeds. */
  static final JobType<Numbered> FLAKY =
      JobType.of("flaky", Numbered.class).withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));
  /** Snoozes on its first run, then succeeds. */
  static final JobType<Numbered> SNOOZY = JobType.of("snoozy", Numbered.class);
  /** Runs until it is cancelled. */
  static final JobType<Numbered> ENDLESS = JobType.of("endless", Numbered.class);

  private HikariDataSource pool;
  private final Map<UUID, AtomicInteger> runs = new ConcurrentHashMap<>();

  @BeforeEach
  void poolWithAutoCommitOff() {
    pool = autoCommitOffPool(10);
  }

  @AfterEach
  void closePool() {
    pool.close();
  }

  private static HikariDataSource autoCommitOffPool(int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setAutoCommit(false);
    config.setMaximumPoolSize(size);
    config.setPoolName("auto-commit-off");
    return new HikariDataSource(config);
  }

  private int count(JobContext ctx) {
    return runs.computeIfAbsent(ctx.jobId(), id -> new AtomicInteger()).incrementAndGet();
  }

  @Test
  void everyWritePathCommitsAndEveryJobRunsExactlyOnce() throws Exception {
    CountDownLatch endlessStarted = new CountDownLatch(1);
    JobClient offClient =
        JobClient.builder(pool).knownTypes(PLAIN, FLAKY, SNOOZY, ENDLESS).build();

    List<UUID> plain = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      plain.add(offClient.enqueue(PLAIN, new Numbered(i)).job().id());
    }
    plain.addAll(offClient.enqueueAll(
        PLAIN, IntStream.range(0, 200).mapToObj(Numbered::new).toList(), EnqueueOptions.DEFAULTS));
    // Stored, as the ids say: a fresh connection of the shared pool sees every one.
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE type = 'plain'"))
        .isEqualTo(220);

    UUID flaky = offClient.enqueue(FLAKY, new Numbered(1)).job().id();
    UUID snoozy = offClient.enqueue(SNOOZY, new Numbered(1)).job().id();
    UUID later = offClient
        .enqueue(
            PLAIN,
            new Numbered(-1),
            EnqueueOptions.builder().delay(Duration.ofHours(1)).build())
        .job()
        .id();
    assertThat(offClient.cancel(later).outcome()).isEqualTo(CancelResult.Outcome.CANCELLED);
    UUID endless = offClient.enqueue(ENDLESS, new Numbered(1)).job().id();

    JobWorker worker = start(JobWorker.builder(pool)
        .shutdownGrace(Duration.ofSeconds(2))
        .pollInterval(Duration.ofMillis(100))
        .register(PLAIN, (ctx, p) -> {
          count(ctx);
          return null;
        })
        .register(FLAKY, (ctx, p) -> {
          if (count(ctx) == 1) {
            throw new IllegalStateException("first attempt fails");
          }
          return null;
        })
        .register(SNOOZY, (ctx, p) -> {
          if (count(ctx) == 1) {
            throw new SnoozeJobException(Duration.ofMillis(100));
          }
          return null;
        })
        .register(ENDLESS, (ctx, p) -> {
          count(ctx);
          endlessStarted.countDown();
          while (!ctx.isCancelled()) {
            Thread.sleep(10);
          }
          throw new InterruptedException("cancelled");
        }));

    for (UUID id : plain) {
      awaitState(id, JobState.SUCCEEDED);
    }
    assertThat(awaitState(flaky, JobState.SUCCEEDED).attempts()).isEqualTo(2);
    awaitState(snoozy, JobState.SUCCEEDED);
    assertThat(endlessStarted.await(20, TimeUnit.SECONDS)).isTrue();
    assertThat(offClient.cancel(endless).outcome())
        .isEqualTo(CancelResult.Outcome.PENDING_ON_WORKER);
    awaitState(endless, JobState.CANCELLED);
    assertThat(client.get(later).orElseThrow().state()).isEqualTo(JobState.CANCELLED);

    // A retried job runs again, once (now: it had been scheduled an hour ahead).
    assertThat(offClient.retry(later, true)).isEqualTo(RetryResult.RETRIED);
    awaitState(later, JobState.SUCCEEDED);

    for (UUID id : plain) {
      assertThat(runs.get(id)).as("runs of %s", id).hasValue(1);
    }
    assertThat(runs.get(flaky)).hasValue(2);
    assertThat(runs.get(snoozy)).hasValue(2);
    assertThat(runs.get(endless)).hasValue(1);
    assertThat(runs.get(later)).hasValue(1);
    assertThat(worker.heartbeats()).isPositive();
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs")).isZero();
  }

  @Test
  void aGraphAndAWorkflowThatSleepsWaitsForASignalAndAwaitsJobsCommitEveryWrite() throws Exception {
    io.pgjobs.workflow.WorkflowType<Numbered> flow =
        io.pgjobs.workflow.WorkflowType.of("off-flow", Numbered.class);
    JobClient offClient =
        JobClient.builder(pool).knownTypes(PLAIN).knownWorkflows(flow).build();
    start(JobWorker.builder(pool)
        .queue("default", 4)
        .pollInterval(Duration.ofMillis(100))
        .register(PLAIN, (ctx, n) -> {
          count(ctx);
          return Map.of("n", n.n());
        })
        .workflow(flow, (ctx, n) -> {
          int one = ctx.step("one", Integer.class, () -> n.n() + 1).run();
          ctx.sleep(Duration.ofMillis(200));
          int signalled = ctx.awaitSignal("go", Integer.class, Duration.ofMinutes(1));
          List<io.pgjobs.workflow.AwaitedJob> done = ctx.awaitJobs("fan", jobs -> {
            for (int i = 0; i < 5; i++) {
              jobs.add(PLAIN, new Numbered(i));
            }
          });
          return Map.of("sum", one + signalled + done.size());
        }));

    // A graph: a root and two children, through the auto-commit-off pool.
    Map<String, UUID> graph = offClient
        .enqueueGraph(JobGraph.builder()
            .add("root", PLAIN, new Numbered(1))
            .add("left", PLAIN, new Numbered(2), Dependency.on("root"))
            .add("right", PLAIN, new Numbered(3), Dependency.on("root"))
            .build())
        .ids();
    UUID run = offClient.enqueue(flow.jobType(), new Numbered(10)).job().id();
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .until(() ->
            offClient.workflowSteps(run).stream().anyMatch(st -> st.name().equals("sleep#1")));
    assertThat(offClient.signalWorkflow(run, "go", 100)).as("signal stored").isTrue();
    Job done = awaitState(run, JobState.SUCCEEDED, Duration.ofSeconds(60));
    for (UUID id : graph.values()) {
      awaitState(id, JobState.SUCCEEDED);
    }

    assertThat(done.output().get("sum").asInt()).isEqualTo(11 + 100 + 5);
    assertThat(offClient.workflowSteps(run).stream().map(st -> st.name()).toList())
        .containsExactly("one", "sleep#1", "signal-deadline:go", "signal:go", "jobs:fan");
    for (UUID id : graph.values()) {
      assertThat(runs.get(id)).as("graph job %s", id).hasValue(1);
    }
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs")).isZero();
  }

  @Test
  void pausingAndResumingAQueueCommits() {
    JobClient offClient = JobClient.builder(pool).knownTypes(PLAIN).build();
    offClient.pauseQueue("default");
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.queues WHERE name = 'default' AND paused"))
        .isEqualTo(1);
    offClient.resumeQueue("default");
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.queues WHERE name = 'default' AND paused"))
        .isZero();
  }

  @Test
  void theConnectionGoesBackToThePoolWithAutoCommitOffAsItCame() throws Exception {
    try (HikariDataSource one = autoCommitOffPool(1)) {
      JobClient offClient = JobClient.builder(one).knownTypes(PLAIN).build();
      offClient.enqueue(PLAIN, new Numbered(1));
      try (Connection c = one.getConnection()) {
        assertThat(c.getAutoCommit()).isFalse();
      }
    }
  }
}
