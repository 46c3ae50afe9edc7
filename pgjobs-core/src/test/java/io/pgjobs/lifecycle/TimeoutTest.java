package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobContext;
import io.pgjobs.JobError;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.RetryPolicy;
import io.pgjobs.testkit.Tags;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Timeouts per job type and per job: the handler is interrupted and the attempt fails with kind timeout. */
class TimeoutTest extends LifecycleTestBase {
  private static final Duration LONG =
      Duration.ofSeconds(60); // child JVMs starting on a loaded machine

  /** Sleeps 10 s unless interrupted; counts how often it was interrupted. */
  private final AtomicInteger interrupted = new AtomicInteger();

  private Object sleepTenSeconds(JobContext ctx, Numbered payload) throws InterruptedException {
    try {
      Thread.sleep(10_000);
    } catch (InterruptedException e) {
      interrupted.incrementAndGet();
      throw e;
    }
    return null;
  }

  @Test
  @Tag(Tags.SLOW)
  void typeTimeoutInterruptsTheHandlerAndRetriesUntilAttemptsAreExhausted() {
    JobType<Numbered> type = JobType.of("timeout_by_type", Numbered.class)
        .withTimeout(Duration.ofSeconds(1))
        .withMaxAttempts(3)
        .withRetryPolicy(RetryPolicy.fixed(Duration.ofSeconds(2)));
    start(worker().register(type, this::sleepTenSeconds));
    long enqueuedAt = System.nanoTime();
    UUID id = client.enqueue(type, new Numbered(1)).job().id();

    Job afterFirst = awaitState(id, JobState.RETRYING, LONG);
    assertThat(afterFirst.attempts()).isEqualTo(1);
    assertThat(afterFirst.errors()).singleElement().satisfies(e -> assertTimeout(e, 1));
    assertThat(afterFirst.lockedBy()).isNull();
    // Failed after the 1 s timeout, not after the handler's 10 s.
    assertThat(Duration.ofNanos(System.nanoTime() - enqueuedAt)).isLessThan(Duration.ofSeconds(9));

    Job done = awaitState(id, JobState.FAILED, LONG);
    assertThat(done.attempts()).isEqualTo(3);
    assertThat(done.errors()).hasSize(3);
    for (int i = 0; i < 3; i++) {
      assertTimeout(done.errors().get(i), i + 1);
    }
    assertThat(interrupted).hasValue(3);
    assertThat(Duration.ofNanos(System.nanoTime() - enqueuedAt))
        .as("three 1 s attempts and two 2 s retry delays, not three 10 s sleeps")
        .isLessThan(Duration.ofSeconds(25));
  }

  @Test
  void jobTimeoutOverridesTheTypeTimeoutBothWays() {
    JobType<Numbered> longTimeout =
        JobType.of("timeout_long_type", Numbered.class).withMaxAttempts(1);
    JobType<Numbered> shortTimeout = JobType.of("timeout_short_type", Numbered.class)
        .withTimeout(Duration.ofSeconds(1))
        .withMaxAttempts(1);
    start(worker().register(longTimeout, this::sleepTenSeconds).register(shortTimeout, (ctx, p) -> {
      Thread.sleep(2_000);
      return "slow but allowed";
    }));

    UUID cutShort = client
        .enqueue(
            longTimeout,
            new Numbered(1),
            EnqueueOptions.builder().timeout(Duration.ofSeconds(1)).build())
        .job()
        .id();
    UUID givenMore = client
        .enqueue(
            shortTimeout,
            new Numbered(2),
            EnqueueOptions.builder().timeout(Duration.ofSeconds(30)).build())
        .job()
        .id();

    Job failed = awaitState(cutShort, JobState.FAILED, LONG);
    assertThat(failed.timeout()).isEqualTo(Duration.ofSeconds(1));
    assertThat(failed.errors()).singleElement().satisfies(e -> assertTimeout(e, 1));
    Job succeeded = awaitState(givenMore, JobState.SUCCEEDED, LONG);
    assertThat(succeeded.errors()).isEmpty();
    assertThat(succeeded.output().asString()).isEqualTo("slow but allowed");
  }

  @Test
  void finishedJobsAreNotHeldInMemoryByTheirTimeoutTimers() {
    // Every attempt schedules a timeout (default 1 h). A finished attempt's timer must not keep its
    // job context (and payload) reachable until the hour is over, or a busy worker runs out of
    // memory.
    JobType<Numbered> type = JobType.of("timeout_memory", Numbered.class);
    ConcurrentLinkedQueue<WeakReference<JobContext>> contexts = new ConcurrentLinkedQueue<>();
    start(worker().register(type, (ctx, p) -> {
      contexts.add(new WeakReference<>(ctx));
      return null;
    }));
    List<UUID> ids = client.enqueueAll(
        type, List.of(new Numbered(1), new Numbered(2), new Numbered(3)), EnqueueOptions.DEFAULTS);
    for (UUID id : ids) {
      awaitState(id, JobState.SUCCEEDED, LONG);
    }
    assertThat(contexts).hasSize(3);

    await("the finished jobs' contexts are garbage collected")
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> {
          System.gc();
          return contexts.stream().allMatch(ref -> ref.get() == null);
        });
  }

  private static void assertTimeout(JobError error, int attempt) {
    assertThat(error.kind()).isEqualTo("timeout");
    assertThat(error.attempt()).isEqualTo(attempt);
    assertThat(error.message()).contains("timed out after");
    assertThat(error.errorClass()).isEqualTo(InterruptedException.class.getName());
  }
}
