package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pgjobs.metrics.MetricNames;
import io.pgjobs.metrics.MicrometerJobMetrics;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The Micrometer metrics of {@link MetricNames}, recorded by a real worker and client. */
class MetricsTest extends PgJobsTestBase {
  static final JobType<Numbered> OK = JobType.of("ok", Numbered.class);
  /** Fails its first attempt, then succeeds. */
  static final JobType<Numbered> FLAKY =
      JobType.of("flaky", Numbered.class).withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));
  /** Always fails; two attempts. */
  static final JobType<Numbered> DOOMED = JobType.of("doomed", Numbered.class)
      .withMaxAttempts(2)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));

  private SimpleMeterRegistry registry;
  private MicrometerJobMetrics metrics;
  private JobClient metered;

  @BeforeEach
  void meters() {
    registry = new SimpleMeterRegistry();
    metrics = new MicrometerJobMetrics(registry);
    metered = JobClient.builder(db.dataSource()).metrics(metrics).build();
  }

  private void startWorker() {
    start(worker()
        .metrics(metrics)
        .pollInterval(Duration.ofMillis(50))
        .register(OK, (ctx, p) -> null)
        .register(FLAKY, (ctx, p) -> {
          if (ctx.attempt() == 1) {
            throw new IllegalStateException("first attempt fails");
          }
          return null;
        })
        .register(DOOMED, (ctx, p) -> {
          throw new IllegalStateException("always");
        }));
  }

  private double counter(String name, String... tags) {
    Counter c = registry.find(name).tags(tags).counter();
    return c == null ? 0 : c.count();
  }

  /** Recordings of every duration timer matching {@code tags}. */
  private long timerCount(String... tags) {
    return registry.find(MetricNames.JOB_DURATION).tags(tags).timers().stream()
        .mapToLong(Timer::count)
        .sum();
  }

  private double started(String kind) {
    return counter(MetricNames.JOBS_STARTED, "kind", kind);
  }

  private double completed(String kind, String outcome) {
    return counter(MetricNames.JOBS_COMPLETED, "kind", kind, "outcome", outcome);
  }

  @Test
  void enqueuesAreCountedPerKindButReplaysAreNot() {
    metered.enqueue(OK, new Numbered(1));
    metered.enqueue(
        OK, new Numbered(2), EnqueueOptions.builder().idempotencyKey("once").build());
    metered.enqueue(
        OK, new Numbered(2), EnqueueOptions.builder().idempotencyKey("once").build()); // replay
    metered.enqueueAll(
        OK, List.of(new Numbered(4), new Numbered(5), new Numbered(6)), EnqueueOptions.DEFAULTS);
    metered.enqueue("some_other_service_job", java.util.Map.of(), EnqueueOptions.DEFAULTS);

    assertThat(counter(MetricNames.JOBS_ENQUEUED, "kind", "ok")).isEqualTo(5.0);
    assertThat(counter(MetricNames.JOBS_ENQUEUED, "kind", "some_other_service_job"))
        .isEqualTo(1.0);
    assertThat(count("pgjobs.jobs")).isEqualTo(6);
  }

  @Test
  void enqueueThatFailsValidationIsNotCounted() {
    try {
      metered.enqueue(
          OK, new Numbered(1), EnqueueOptions.builder().maxAttempts(0).build());
    } catch (InvalidJobException expected) {
      // counted below
    }
    assertThat(registry.find(MetricNames.JOBS_ENQUEUED).counter()).isNull();
  }

  @Test
  void workerCountsStartedAndCompletedAttemptsByKindAndOutcomeAndTimesThem() {
    startWorker();
    List<UUID> oks = List.of(
        metered.enqueue(OK, new Numbered(1)).job().id(),
        metered.enqueue(OK, new Numbered(2)).job().id(),
        metered.enqueue(OK, new Numbered(3)).job().id());
    UUID flaky = metered.enqueue(FLAKY, new Numbered(4)).job().id();
    UUID doomed = metered.enqueue(DOOMED, new Numbered(5)).job().id();

    oks.forEach(id -> awaitState(id, JobState.SUCCEEDED));
    awaitState(flaky, JobState.SUCCEEDED);
    awaitState(doomed, JobState.FAILED);
    // The outcome is recorded by the handler thread just after the database write: await it.
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> completed("ok", "succeeded") == 3
            && completed("flaky", "succeeded") == 1
            && completed("doomed", "failed") == 1);

    assertThat(started("ok")).isEqualTo(3.0);
    assertThat(completed("ok", "succeeded")).isEqualTo(3.0);
    assertThat(timerCount("kind", "ok", "outcome", "succeeded")).isEqualTo(3);

    assertThat(started("flaky")).isEqualTo(2.0);
    assertThat(completed("flaky", "retrying")).isEqualTo(1.0);
    assertThat(completed("flaky", "succeeded")).isEqualTo(1.0);
    assertThat(timerCount("kind", "flaky", "outcome", "retrying")).isEqualTo(1);
    assertThat(timerCount("kind", "flaky", "outcome", "succeeded")).isEqualTo(1);

    assertThat(started("doomed")).isEqualTo(2.0);
    assertThat(completed("doomed", "retrying")).isEqualTo(1.0);
    assertThat(completed("doomed", "failed")).isEqualTo(1.0);
    assertThat(completed("doomed", "succeeded")).isZero();
    assertThat(timerCount("kind", "doomed", "outcome", "failed")).isEqualTo(1);

    assertThat(completed("ok", "failed")).isZero();
    assertThat(completed("ok", "retrying")).isZero();
    // Every completed attempt is timed once: 3 + 2 + 2.
    assertThat(timerCount()).isEqualTo(7);
    assertThat(counter(MetricNames.JOBS_ENQUEUED, "kind", "ok")).isEqualTo(3.0);
    assertThat(counter(MetricNames.JOBS_ENQUEUED, "kind", "flaky")).isEqualTo(1.0);
    assertThat(counter(MetricNames.JOBS_ENQUEUED, "kind", "doomed")).isEqualTo(1.0);
  }

  @Test
  void handlerThatCompletesInItsOwnTransactionAndThenThrowsCountsAsSucceeded() {
    JobType<Numbered> type = JobType.of("tx_then_throw", Numbered.class).withQueue("tx_then_throw");
    start(worker().metrics(metrics).register(type, (ctx, p) -> {
      try (Connection c = ctx.dataSource().getConnection()) {
        c.setAutoCommit(false);
        ctx.complete(c, null);
        c.commit();
      }
      throw new IllegalStateException("fails after its success committed");
    }));
    UUID id = metered.enqueue(type, new Numbered(1)).job().id();

    awaitState(id, JobState.SUCCEEDED);
    await().atMost(Duration.ofSeconds(10)).until(() -> timerCount("kind", "tx_then_throw") == 1);
    assertThat(completed("tx_then_throw", "succeeded")).isEqualTo(1.0);
    assertThat(completed("tx_then_throw", "retrying")).isZero();
  }

  @Test
  void failureOfAJobNoLongerTheAttemptsCountsAsNotRecordedNotRetrying() {
    JobType<Numbered> type = JobType.of("taken_away", Numbered.class).withQueue("taken_away");
    start(worker().metrics(metrics).register(type, (ctx, p) -> {
      // What rescue does to a job whose worker stopped heartbeating: back to the queue, not ours.
      try (Connection c = ctx.dataSource().getConnection();
          PreparedStatement ps =
              c.prepareStatement("UPDATE pgjobs.jobs SET state = 'retrying', locked_by = NULL, "
                  + "heartbeat_at = NULL, run_at = now() + interval '1 hour' WHERE id = ?")) {
        ps.setObject(1, ctx.jobId());
        ps.executeUpdate();
      }
      throw new IllegalStateException("fails after the job was taken away");
    }));
    UUID id = metered.enqueue(type, new Numbered(1)).job().id();

    await().atMost(Duration.ofSeconds(30)).until(() -> timerCount("kind", "taken_away") == 1);
    assertThat(completed("taken_away", "not_recorded")).isEqualTo(1.0);
    assertThat(completed("taken_away", "retrying")).isZero();
    Job job = metered.get(id).orElseThrow();
    assertThat(job.state())
        .as("the failure was not written over the rescue")
        .isEqualTo(JobState.RETRYING);
    assertThat(job.errors()).isEmpty();
  }

  @Test
  void failureOfAJobWhoseCancellationWasAskedCountsAsCancelledNotRetrying() throws Exception {
    JobType<Numbered> type =
        JobType.of("cancelled_then_fails", Numbered.class).withQueue("cancelled_then_fails");
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    // No notifications and no heartbeat in the test's time: the worker never hears of the
    // cancellation, so its retry statement is what finds the flag and ends the job cancelled.
    start(worker()
        .metrics(metrics)
        .listen(false)
        .heartbeatInterval(Duration.ofSeconds(30))
        .workerDeadAfter(Duration.ofMinutes(2))
        .register(type, (ctx, p) -> {
          while (!release.await(10, java.util.concurrent.TimeUnit.SECONDS)) {
            // wait for the test
          }
          throw new IllegalStateException("fails after its cancellation was asked");
        }));
    UUID id = metered.enqueue(type, new Numbered(1)).job().id();
    awaitState(id, JobState.RUNNING);
    assertThat(metered.cancel(id).outcome()).isEqualTo(CancelResult.Outcome.PENDING_ON_WORKER);
    release.countDown();

    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> timerCount("kind", "cancelled_then_fails") == 1);
    assertThat(completed("cancelled_then_fails", "cancelled")).isEqualTo(1.0);
    assertThat(completed("cancelled_then_fails", "retrying")).isZero();
    assertThat(metered.get(id).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
  }

  @Test
  void durationTimerMeasuresHandlerRunTime() {
    JobType<Numbered> slowish = JobType.of("slowish", Numbered.class).withQueue("slowish");
    start(worker()
        .metrics(metrics)
        .pollInterval(Duration.ofMillis(50))
        .register(slowish, (ctx, p) -> {
          // Busy until 100 ms of the attempt have passed, measured, not slept.
          long until = System.nanoTime() + Duration.ofMillis(100).toNanos();
          while (System.nanoTime() < until) {
            Thread.onSpinWait();
          }
          return null;
        }));
    UUID id = metered.enqueue(slowish, new Numbered(1)).job().id();
    awaitState(id, JobState.SUCCEEDED);
    await().atMost(Duration.ofSeconds(10)).until(() -> timerCount("kind", "slowish") == 1);

    Timer timer = registry
        .get(MetricNames.JOB_DURATION)
        .tags("kind", "slowish", "outcome", "succeeded")
        .timer();
    assertThat(timer.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS))
        .isGreaterThanOrEqualTo(100.0);
  }

  @Test
  void queueDepthGaugeIsRegisteredForEveryServedQueue() {
    metered.enqueue(
        OK, new Numbered(1), EnqueueOptions.builder().queue("unserved").build());
    startWorker();
    Gauge gauge =
        registry.find(MetricNames.QUEUE_DEPTH).tags("queue", "default").gauge();
    assertThat(gauge).isNotNull();
    assertThat(gauge.value()).isGreaterThanOrEqualTo(0.0);
    // Queues with due jobs are reported too, even if this worker does not serve them.
    Gauge unserved =
        registry.find(MetricNames.QUEUE_DEPTH).tags("queue", "unserved").gauge();
    assertThat(unserved).isNotNull();
    assertThat(unserved.value()).isEqualTo(1.0);
  }

  @Test
  void limitedQueuesReportRunningJobsAndWhatHoldsTheirWaitingJobsBack() {
    db.execute("TRUNCATE pgjobs.queues");
    client.setLimits("capped", QueueLimits.builder().globalConcurrency(1).build());
    try {
      // Two running jobs in a queue limited to one (as after lowering its limit): the due one waits
      // for the global limit.
      for (int i = 0; i < 3; i++) {
        metered.enqueue(
            OK, new Numbered(i), EnqueueOptions.builder().queue("capped").build());
      }
      db.execute("UPDATE pgjobs.jobs SET state = 'running', locked_by = 'elsewhere', attempts = 1,"
          + " claim_token = 1, limit_key = '' WHERE id IN (SELECT id FROM pgjobs.jobs LIMIT 2)");
      startWorker();
      Gauge running =
          registry.find(MetricNames.LIMITED_RUNNING).tags("queue", "capped").gauge();
      assertThat(running).isNotNull();
      assertThat(running.value()).isEqualTo(2.0);
      assertThat(registry
              .find(MetricNames.LIMITED_WAITING)
              .tags("queue", "capped", "waiting_for", "at_global_limit")
              .gauge()
              .value())
          .isEqualTo(1.0);
      assertThat(registry
              .find(MetricNames.LIMITED_WAITING)
              .tags("queue", "capped", "waiting_for", "rate_limited")
              .gauge()
              .value())
          .isZero();
    } finally {
      db.execute("TRUNCATE pgjobs.queues");
    }
  }
}
