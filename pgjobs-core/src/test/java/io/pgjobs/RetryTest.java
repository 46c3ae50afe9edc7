package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Acceptance 3: failed attempts are retried by the type's policy and every error is kept; exhausted jobs
 * and discarded jobs end {@code failed}; a snooze runs the job again later without spending an attempt;
 * the {@link JobContext} describes the attempt.
 */
class RetryTest extends PgJobsTestBase {
  /** Fails its first {@code n} attempts (n = payload), then succeeds with {"attempt": k}. */
  static final JobType<Numbered> FLAKY =
      JobType.of("flaky", Numbered.class).withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));
  /** Always fails. */
  static final JobType<Numbered> BROKEN = JobType.of("broken", Numbered.class)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));
  /** Discards itself. */
  static final JobType<Numbered> HOPELESS = JobType.of("hopeless", Numbered.class)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));
  /** Snoozes for {@code n} ms on its first run, then succeeds. */
  static final JobType<Numbered> SLEEPY = JobType.of("sleepy", Numbered.class);
  /** Snoozes until it has been snoozed {@code n} times, as its context tells it, then succeeds. */
  static final JobType<Numbered> SNOOZES_N_TIMES = JobType.of("snoozes_n_times", Numbered.class);

  /** What a handler saw on one run. */
  record Seen(
      UUID jobId,
      String jobType,
      String queue,
      int attempt,
      int maxAttempts,
      boolean isRetry,
      boolean isLastAttempt,
      String context,
      String workerId,
      Instant startedAt) {
    static Seen of(JobContext ctx) {
      return new Seen(
          ctx.jobId(),
          ctx.jobType(),
          ctx.queue(),
          ctx.attempt(),
          ctx.maxAttempts(),
          ctx.isRetry(),
          ctx.isLastAttempt(),
          ctx.context(),
          ctx.workerId(),
          Instant.now());
    }
  }

  private final Map<UUID, List<Seen>> runs = new ConcurrentHashMap<>();
  private JobWorker worker;

  private List<Seen> record(JobContext ctx) {
    List<Seen> seen = runs.computeIfAbsent(ctx.jobId(), id -> new CopyOnWriteArrayList<>());
    seen.add(Seen.of(ctx));
    return seen;
  }

  private List<Seen> runsOf(UUID id) {
    return runs.getOrDefault(id, List.of());
  }

  @BeforeEach
  void startWorker() {
    worker = start(worker()
        .pollInterval(Duration.ofMillis(50))
        .register(FLAKY, (ctx, p) -> {
          int run = record(ctx).size();
          if (run <= p.n()) {
            throw new IllegalStateException("boom " + run);
          }
          return Map.of("attempt", ctx.attempt());
        })
        .register(BROKEN, (ctx, p) -> {
          record(ctx);
          throw new IllegalArgumentException("always broken, attempt " + ctx.attempt());
        })
        .register(HOPELESS, (ctx, p) -> {
          record(ctx);
          throw new DiscardJobException("recipient does not exist");
        })
        .register(SNOOZES_N_TIMES, (ctx, p) -> {
          record(ctx);
          if (ctx.snoozes() < p.n()) {
            throw new SnoozeJobException(Duration.ofMillis(20));
          }
          return Map.of("snoozes", ctx.snoozes(), "attempt", ctx.attempt());
        })
        .register(SLEEPY, (ctx, p) -> {
          if (record(ctx).size() == 1) {
            throw new SnoozeJobException(Duration.ofMillis(p.n()));
          }
          return null;
        }));
  }

  private static UUID enqueue(JobType<Numbered> type, int n, EnqueueOptions options) {
    return client.enqueue(type, new Numbered(n), options).job().id();
  }

  @Test
  void jobThatFailsTwiceThenSucceedsEndsSucceededAfterThreeAttemptsWithBothErrorsKept() {
    UUID id = enqueue(FLAKY, 2, EnqueueOptions.DEFAULTS);

    Job done = awaitState(id, JobState.SUCCEEDED);

    assertThat(done.attempts()).isEqualTo(3);
    assertThat(done.maxAttempts()).isEqualTo(3);
    assertThat(done.output().get("attempt").asInt()).isEqualTo(3);
    assertThat(runsOf(id)).hasSize(3);
    assertThat(done.errors()).hasSize(2);
    for (int i = 0; i < 2; i++) {
      JobError error = done.errors().get(i);
      int attempt = i + 1;
      assertThat(error.attempt()).isEqualTo(attempt);
      assertThat(error.kind()).isEqualTo("error");
      assertThat(error.message()).isEqualTo("boom " + attempt);
      assertThat(error.errorClass()).isEqualTo(IllegalStateException.class.getName());
      assertThat(error.stackHead())
          .contains("IllegalStateException: boom " + attempt)
          .contains("\tat ");
      assertThat(error.worker()).isEqualTo(worker.workerId());
      assertThat(error.at())
          .isAfterOrEqualTo(done.createdAt())
          .isBeforeOrEqualTo(done.finishedAt());
    }
    assertThat(done.errors().get(0).at()).isBeforeOrEqualTo(done.errors().get(1).at());
    assertThat(done.lockedBy()).isEqualTo(worker.workerId());
  }

  @Test
  void retriesWaitForTheTypesRetryPolicy() {
    JobType<Numbered> slowRetry = JobType.of("slow_retry", Numbered.class)
        .withRetryPolicy(RetryPolicy.fixed(Duration.ofHours(1)));
    JobWorker slow = start(worker()
        .pollInterval(Duration.ofMillis(50))
        .register(slowRetry, (ctx, p) -> {
          record(ctx);
          throw new IllegalStateException("fails");
        })
        .queue("slow", 1));
    UUID id = enqueue(slowRetry, 0, EnqueueOptions.builder().queue("slow").build());

    Job retrying = awaitState(id, JobState.RETRYING);

    assertThat(retrying.attempts()).isEqualTo(1);
    assertThat(retrying.errors())
        .singleElement()
        .satisfies(e -> assertThat(e.worker()).isEqualTo(slow.workerId()));
    assertThat(retrying.lockedBy()).isNull();
    // run_at = failure time + 1 h by the database clock; the failure came after the attempt
    // started.
    assertThat(retrying.runAt())
        .isAfterOrEqualTo(retrying.attemptedAt().plus(Duration.ofHours(1)))
        .isBefore(retrying.attemptedAt().plus(Duration.ofHours(1)).plus(Duration.ofMinutes(1)));
    assertThat(retrying.isScheduled()).isFalse(); // retrying, not queued
  }

  @Test
  void jobWhoseAttemptsAreExhaustedEndsFailedWithEveryErrorKept() {
    UUID id = enqueue(BROKEN, 0, EnqueueOptions.builder().maxAttempts(3).build());

    Job failed = awaitState(id, JobState.FAILED);

    assertThat(failed.attempts()).isEqualTo(3);
    assertThat(failed.finishedAt()).isNotNull();
    assertThat(failed.output()).isNull();
    assertThat(runsOf(id)).hasSize(3);
    assertThat(failed.errors()).extracting(JobError::attempt).containsExactly(1, 2, 3);
    assertThat(failed.errors())
        .extracting(JobError::message)
        .containsExactly(
            "always broken, attempt 1", "always broken, attempt 2", "always broken, attempt 3");
    assertThat(failed.errors()).allSatisfy(e -> {
      assertThat(e.kind()).isEqualTo("error");
      assertThat(e.errorClass()).isEqualTo(IllegalArgumentException.class.getName());
      assertThat(e.stackHead()).isNotBlank();
      assertThat(e.worker()).isEqualTo(worker.workerId());
    });
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'failed'"))
        .isEqualTo(1);
  }

  @Test
  void discardedJobFailsAfterOneAttemptWithKindDiscarded() {
    UUID id = enqueue(HOPELESS, 0, EnqueueOptions.builder().maxAttempts(5).build());

    Job failed = awaitState(id, JobState.FAILED);

    assertThat(failed.attempts()).isEqualTo(1);
    assertThat(failed.maxAttempts()).isEqualTo(5);
    assertThat(runsOf(id)).hasSize(1);
    assertThat(failed.errors()).singleElement().satisfies(e -> {
      assertThat(e.attempt()).isEqualTo(1);
      assertThat(e.kind()).isEqualTo("discarded");
      assertThat(e.message()).isEqualTo("recipient does not exist");
      assertThat(e.errorClass()).isEqualTo(DiscardJobException.class.getName());
      assertThat(e.worker()).isEqualTo(worker.workerId());
    });
  }

  @Test
  void snoozedJobRunsAgainAfterTheDelayWithoutSpendingAnAttempt() {
    // One attempt only: if the snooze spent it, the job could never be claimed again.
    UUID id = enqueue(SLEEPY, 300, EnqueueOptions.builder().maxAttempts(1).build());

    Job done = awaitState(id, JobState.SUCCEEDED);

    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.errors()).isEmpty();
    List<Seen> seen = runsOf(id);
    assertThat(seen).hasSize(2);
    assertThat(seen).extracting(Seen::attempt).containsExactly(1, 1);
    assertThat(Duration.between(seen.get(0).startedAt(), seen.get(1).startedAt()))
        .isGreaterThanOrEqualTo(Duration.ofMillis(300));
  }

  @Test
  void aHandlerKnowsHowOftenItsJobWasSnoozedAndTheJobShowsIt() {
    UUID id =
        enqueue(SNOOZES_N_TIMES, 2, EnqueueOptions.builder().maxAttempts(1).build());

    Job done = awaitState(id, JobState.SUCCEEDED);

    assertThat(runsOf(id)).hasSize(3);
    assertThat(done.output().path("snoozes").asInt()).isEqualTo(2);
    assertThat(done.output().path("attempt").asInt()).isEqualTo(1);
    assertThat(done.snoozes()).isEqualTo(2);
    assertThat(done.attempts()).isEqualTo(1);
  }

  @Test
  void snoozedJobWaitsQueuedWithItsAttemptGivenBack() {
    UUID id = enqueue(SLEEPY, 3_600_000, EnqueueOptions.DEFAULTS); // snooze for an hour

    await()
        .atMost(Duration.ofSeconds(20))
        .until(() ->
            runsOf(id).size() == 1 && client.get(id).orElseThrow().state() == JobState.QUEUED);

    Job waiting = client.get(id).orElseThrow();
    assertThat(waiting.attempts()).isZero();
    assertThat(waiting.errors()).isEmpty();
    assertThat(waiting.lockedBy()).isNull();
    assertThat(waiting.isScheduled()).isTrue();
    assertThat(waiting.runAt()).isAfterOrEqualTo(waiting.attemptedAt().plus(Duration.ofHours(1)));
  }

  @Test
  void failureOnTheOnlyAttemptFailsTheJobImmediately() {
    UUID id = enqueue(BROKEN, 0, EnqueueOptions.builder().maxAttempts(1).build());

    Job failed = awaitState(id, JobState.FAILED);

    assertThat(failed.attempts()).isEqualTo(1);
    assertThat(failed.errors()).singleElement().satisfies(e -> {
      assertThat(e.attempt()).isEqualTo(1);
      assertThat(e.kind()).isEqualTo("error");
    });
    assertThat(runsOf(id)).singleElement().satisfies(s -> {
      assertThat(s.isLastAttempt()).isTrue();
      assertThat(s.isRetry()).isFalse();
    });
  }

  @Test
  void jobContextDescribesEachAttempt() {
    UUID id = enqueue(
        FLAKY,
        2,
        EnqueueOptions.builder().maxAttempts(3).context("signup of user 42").build());

    awaitState(id, JobState.SUCCEEDED);

    List<Seen> seen = runsOf(id);
    assertThat(seen).extracting(Seen::attempt).containsExactly(1, 2, 3);
    assertThat(seen).extracting(Seen::isRetry).containsExactly(false, true, true);
    assertThat(seen).extracting(Seen::isLastAttempt).containsExactly(false, false, true);
    assertThat(seen).allSatisfy(s -> {
      assertThat(s.jobId()).isEqualTo(id);
      assertThat(s.jobType()).isEqualTo("flaky");
      assertThat(s.queue()).isEqualTo("default");
      assertThat(s.maxAttempts()).isEqualTo(3);
      assertThat(s.context()).isEqualTo("signup of user 42");
      assertThat(s.workerId()).isEqualTo(worker.workerId());
    });
  }

  @Test
  void jobContextHasNoContextStringWhenNoneWasGiven() {
    UUID id = enqueue(FLAKY, 0, EnqueueOptions.DEFAULTS);
    awaitState(id, JobState.SUCCEEDED);
    assertThat(runsOf(id)).singleElement().satisfies(s -> {
      assertThat(s.context()).isNull();
      assertThat(s.attempt()).isEqualTo(1);
      assertThat(s.isRetry()).isFalse();
      assertThat(s.isLastAttempt()).isFalse();
    });
  }
}
