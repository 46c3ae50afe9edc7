package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.CancelCounts;
import io.pgjobs.CancelResult;
import io.pgjobs.CancelResult.Outcome;
import io.pgjobs.DiscardJobException;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.InvalidJobException;
import io.pgjobs.Job;
import io.pgjobs.JobHandler;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.RetryPolicy;
import io.pgjobs.SnoozeJobException;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Cancellation, three-way: a waiting job is cancelled at once, a running one is flagged and stopped by
 * its worker, a finished one is left alone; plus not found and cancellation by filter.
 */
class CancelTest extends LifecycleTestBase {
  private static final Duration LONG =
      Duration.ofSeconds(60); // child JVMs starting on a loaded machine

  /** Released after each test so no handler outlives it. */
  private final CountDownLatch release = new CountDownLatch(1);

  private final AtomicInteger handlersStarted = new AtomicInteger();
  private final AtomicInteger interruptsIgnored = new AtomicInteger();

  @AfterEach
  void releaseHandlers() {
    release.countDown();
  }

  /** A handler that blocks until the test releases it and ignores interrupts (but counts them). */
  private <P> JobHandler<P> stubbornHandler() {
    return (ctx, payload) -> {
      handlersStarted.incrementAndGet();
      while (true) {
        try {
          release.await();
          return null;
        } catch (InterruptedException e) {
          interruptsIgnored.incrementAndGet();
        }
      }
    };
  }

  private static JobType<Numbered> type(String name) {
    return JobType.of(name, Numbered.class);
  }

  private static UUID enqueue(JobType<Numbered> type, EnqueueOptions options) {
    return client.enqueue(type, new Numbered(1), options).job().id();
  }

  // ------------------------------------------------------------------ waiting jobs

  @Test
  void queuedAndScheduledJobsAreCancelledAtOnce() {
    JobType<Numbered> type = type("cancel_waiting"); // no worker runs it
    UUID queued = enqueue(type, EnqueueOptions.DEFAULTS);
    UUID scheduled =
        enqueue(type, EnqueueOptions.builder().delay(Duration.ofHours(1)).build());

    for (UUID id : List.of(queued, scheduled)) {
      CancelResult result = client.cancel(id);

      assertThat(result).isEqualTo(new CancelResult(Outcome.CANCELLED, JobState.CANCELLED));
      assertThat(tableOf(id)).isEqualTo("finished_jobs");
      assertThat(storedState(id)).isEqualTo("cancelled");
      assertThat(job(id).finishedAt()).isNotNull();
    }
    assertThat(count("pgjobs.jobs")).isZero();
  }

  @Test
  void retryingJobIsCancelledAtOnceAndKeepsItsErrorHistory() {
    JobType<Numbered> type =
        type("cancel_retrying").withRetryPolicy(RetryPolicy.fixed(Duration.ofHours(1)));
    start(worker().register(type, (ctx, p) -> {
      throw new IllegalStateException("first attempt fails");
    }));
    UUID id = enqueue(type, EnqueueOptions.DEFAULTS);
    awaitState(id, JobState.RETRYING);

    CancelResult result = client.cancel(id);

    assertThat(result).isEqualTo(new CancelResult(Outcome.CANCELLED, JobState.CANCELLED));
    assertThat(tableOf(id)).isEqualTo("finished_jobs");
    assertThat(storedState(id)).isEqualTo("cancelled");
    assertThat(job(id).attempts()).isEqualTo(1);
    assertThat(errorKinds(id)).containsExactly("error");
  }

  // ------------------------------------------------------------------ finished and unknown jobs

  @Test
  void finishedJobsAreReportedAlreadyTerminalAndLeftUnchanged() {
    JobType<Numbered> ok = type("cancel_done_ok");
    JobType<Numbered> discard = type("cancel_done_discard");
    start(worker().register(ok, (ctx, p) -> "done").register(discard, (ctx, p) -> {
      throw new DiscardJobException("no point");
    }));
    UUID succeeded = enqueue(ok, EnqueueOptions.DEFAULTS);
    UUID failed = enqueue(discard, EnqueueOptions.DEFAULTS);
    UUID cancelled = enqueue(
        type("cancel_done_cancelled"),
        EnqueueOptions.builder().queue("unserved").build());
    assertThat(client.cancel(cancelled).outcome()).isEqualTo(Outcome.CANCELLED);
    Job succeededBefore = awaitState(succeeded, JobState.SUCCEEDED);
    Job failedBefore = awaitState(failed, JobState.FAILED);
    Job cancelledBefore = job(cancelled);

    assertThat(client.cancel(succeeded))
        .isEqualTo(new CancelResult(Outcome.ALREADY_TERMINAL, JobState.SUCCEEDED));
    assertThat(client.cancel(failed))
        .isEqualTo(new CancelResult(Outcome.ALREADY_TERMINAL, JobState.FAILED));
    assertThat(client.cancel(cancelled))
        .isEqualTo(new CancelResult(Outcome.ALREADY_TERMINAL, JobState.CANCELLED));

    assertThat(storedState(succeeded)).isEqualTo("succeeded");
    assertThat(storedState(failed)).isEqualTo("failed");
    assertThat(storedState(cancelled)).isEqualTo("cancelled");
    assertThat(job(succeeded)).isEqualTo(succeededBefore);
    assertThat(job(failed)).isEqualTo(failedBefore);
    assertThat(job(cancelled)).isEqualTo(cancelledBefore);
  }

  @Test
  void unknownIdIsReportedNotFound() {
    UUID unknown = UUID.randomUUID();

    assertThat(client.cancel(unknown)).isEqualTo(new CancelResult(Outcome.NOT_FOUND, null));
    assertThat(tableOf(unknown)).isNull();
  }

  // ------------------------------------------------------------------ running jobs

  @Test
  void runningJobIsFlaggedOnItsRowAndEndsCancelledWhenItsHandlerReturns() {
    JobType<Numbered> type = type("cancel_running_stubborn");
    start(worker().register(type, stubbornHandler()));
    UUID id = enqueue(type, EnqueueOptions.DEFAULTS);
    await().atMost(LONG).until(() -> handlersStarted.get() == 1);
    assertThat(cancelRequested(id)).isFalse();

    CancelResult result = client.cancel(id);

    assertThat(result).isEqualTo(new CancelResult(Outcome.PENDING_ON_WORKER, JobState.RUNNING));
    // The handler ignores interrupts, so the job is still running: flagged, not finished.
    assertThat(storedState(id)).isEqualTo("running");
    assertThat(cancelRequested(id)).isTrue();
    assertThat(job(id).cancelRequested()).isTrue();
    // The notification reached the worker: it interrupted the handler.
    await().atMost(LONG).until(() -> interruptsIgnored.get() >= 1);
    // Asking again changes nothing.
    assertThat(client.cancel(id))
        .isEqualTo(new CancelResult(Outcome.PENDING_ON_WORKER, JobState.RUNNING));

    release
        .countDown(); // the handler returns normally, yet the job was cancelled: it ends cancelled
    Job done = awaitState(id, JobState.CANCELLED, LONG);
    assertThat(tableOf(id)).isEqualTo("finished_jobs");
    assertThat(done.output()).isNull();
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(errorKinds(id)).containsExactly("cancelled");
  }

  @Test
  void cooperativeHandlerSeesIsCancelledAndTheJobEndsCancelledWithinASecond() {
    JobType<Numbered> type = type("cancel_cooperative");
    AtomicBoolean sawCancelled = new AtomicBoolean();
    start(worker().register(type, (ctx, p) -> {
      handlersStarted.incrementAndGet();
      while (!ctx.isCancelled()) {
        LockSupport.parkNanos(1_000_000); // a step of work
      }
      sawCancelled.set(true);
      return "stopped early";
    }));
    UUID id = enqueue(type, EnqueueOptions.DEFAULTS);
    await().atMost(LONG).until(() -> handlersStarted.get() == 1);

    long cancelledAt = System.nanoTime();
    CancelResult result = client.cancel(id);

    assertThat(result).isEqualTo(new CancelResult(Outcome.PENDING_ON_WORKER, JobState.RUNNING));
    Duration left = Duration.ofSeconds(1).minusNanos(System.nanoTime() - cancelledAt);
    await("job " + id + " cancelled within 1 s of the cancel call")
        .atMost(left)
        .pollInterval(Duration.ofMillis(10))
        .until(() -> "cancelled".equals(storedState(id)));
    assertThat(sawCancelled).isTrue();
    Job done = job(id);
    assertThat(done.state()).isEqualTo(JobState.CANCELLED);
    assertThat(done.output()).as("a cancelled job keeps no output").isNull();
    assertThat(errorKinds(id)).containsExactly("cancelled");
  }

  @Test
  void blockingHandlerIsInterruptedAndTheJobEndsCancelled() {
    JobType<Numbered> type = type("cancel_blocking");
    AtomicBoolean interrupted = new AtomicBoolean();
    AtomicBoolean flagSeen = new AtomicBoolean();
    start(worker().register(type, (ctx, p) -> {
      handlersStarted.incrementAndGet();
      try {
        Thread.sleep(60_000);
      } catch (InterruptedException e) {
        interrupted.set(true);
        flagSeen.set(ctx.isCancelled());
        throw e;
      }
      return null;
    }));
    UUID id = enqueue(type, EnqueueOptions.DEFAULTS);
    await().atMost(LONG).until(() -> handlersStarted.get() == 1);
    long cancelledAt = System.nanoTime();

    assertThat(client.cancel(id))
        .isEqualTo(new CancelResult(Outcome.PENDING_ON_WORKER, JobState.RUNNING));

    Job done = awaitState(id, JobState.CANCELLED, Duration.ofSeconds(10));
    assertThat(Duration.ofNanos(System.nanoTime() - cancelledAt))
        .isLessThan(Duration.ofSeconds(10));
    assertThat(interrupted).as("handler interrupted").isTrue();
    assertThat(flagSeen).as("isCancelled() true when interrupted").isTrue();
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("cancelled");
      assertThat(e.errorClass()).isEqualTo(InterruptedException.class.getName());
    });
    assertThat(tableOf(id)).isEqualTo("finished_jobs");
  }

  @Test
  void workerThatMissesTheNotificationStopsTheJobWhenItsHeartbeatSeesTheFlag() {
    JobType<Numbered> type = type("cancel_not_listening");
    AtomicBoolean interrupted = new AtomicBoolean();
    // No LISTEN connection: the cancel flag reaches this worker only through its heartbeat's reply.
    start(worker()
        .listen(false)
        .heartbeatInterval(Duration.ofMillis(200))
        .register(type, (ctx, p) -> {
          handlersStarted.incrementAndGet();
          try {
            Thread.sleep(60_000);
          } catch (InterruptedException e) {
            interrupted.set(true);
            throw e;
          }
          return null;
        }));
    UUID id = enqueue(type, EnqueueOptions.DEFAULTS);
    await().atMost(LONG).until(() -> handlersStarted.get() == 1);

    assertThat(client.cancel(id))
        .isEqualTo(new CancelResult(Outcome.PENDING_ON_WORKER, JobState.RUNNING));

    awaitState(id, JobState.CANCELLED, Duration.ofSeconds(10));
    assertThat(interrupted).isTrue();
    assertThat(errorKinds(id)).containsExactly("cancelled");
  }

  /**
   * A worker that has not yet heard of a cancellation (no LISTEN, next heartbeat 30 s away) and whose
   * attempt then fails by itself: the failure must not put the cancelled job back in the queue.
   */
  @Test
  void attemptThatFailsBeforeItsWorkerHearsOfTheCancellationEndsCancelledNotRetrying() {
    JobType<Numbered> type =
        type("cancel_then_fail").withRetryPolicy(RetryPolicy.fixed(Duration.ZERO));
    JobWorker worker = start(worker()
        .listen(false)
        .heartbeatInterval(Duration.ofSeconds(30))
        .workerDeadAfter(Duration.ofMinutes(2))
        .register(type, (ctx, p) -> {
          handlersStarted.incrementAndGet();
          release.await();
          throw new IllegalStateException("failed by itself");
        }));
    UUID id = enqueue(type, EnqueueOptions.DEFAULTS);
    await().atMost(LONG).until(() -> handlersStarted.get() == 1);
    assertThat(client.cancel(id))
        .isEqualTo(new CancelResult(Outcome.PENDING_ON_WORKER, JobState.RUNNING));

    release.countDown();

    await().atMost(LONG).until(() -> !"running".equals(storedState(id)));
    assertThat(storedState(id))
        .as("a job whose cancellation was asked is not retried")
        .isEqualTo("cancelled");
    assertThat(handlersStarted).as("and never runs again").hasValue(1);
    assertThat(tableOf(id)).isEqualTo("finished_jobs");
    assertThat(errorKinds(id)).as("the attempt's own failure is kept").containsExactly("error");
    assertThat(worker.runningJobs()).isZero();
  }

  /** Same, when the handler snoozes: the snooze must not put the cancelled job back in the queue. */
  @Test
  void jobThatSnoozesBeforeItsWorkerHearsOfTheCancellationEndsCancelledNotQueued() {
    JobType<Numbered> type = type("cancel_then_snooze");
    JobWorker worker = start(worker()
        .listen(false)
        .heartbeatInterval(Duration.ofSeconds(30))
        .workerDeadAfter(Duration.ofMinutes(2))
        .register(type, (ctx, p) -> {
          handlersStarted.incrementAndGet();
          release.await();
          throw new SnoozeJobException(Duration.ZERO);
        }));
    UUID id = enqueue(type, EnqueueOptions.DEFAULTS);
    await().atMost(LONG).until(() -> handlersStarted.get() == 1);
    assertThat(client.cancel(id))
        .isEqualTo(new CancelResult(Outcome.PENDING_ON_WORKER, JobState.RUNNING));

    release.countDown();

    await().atMost(LONG).until(() -> !"running".equals(storedState(id)));
    assertThat(storedState(id))
        .as("a job whose cancellation was asked is not snoozed")
        .isEqualTo("cancelled");
    assertThat(handlersStarted).as("and never runs again").hasValue(1);
    assertThat(tableOf(id)).isEqualTo("finished_jobs");
    assertThat(worker.runningJobs()).isZero();
  }

  /**
   * Same, when the worker shuts down: the release back to the queue must not undo the cancellation.
   */
  @Test
  void jobCancelledBeforeItsWorkerHearsOfItIsNotReleasedToTheQueueOnShutdown() {
    JobType<Numbered> type = type("cancel_then_shutdown");
    JobWorker worker = start(worker()
        .listen(false)
        .heartbeatInterval(Duration.ofSeconds(30))
        .workerDeadAfter(Duration.ofMinutes(2))
        .shutdownGrace(Duration.ZERO)
        .register(type, (ctx, p) -> {
          handlersStarted.incrementAndGet();
          Thread.sleep(60_000);
          return null;
        }));
    UUID id = enqueue(type, EnqueueOptions.DEFAULTS);
    await().atMost(LONG).until(() -> handlersStarted.get() == 1);
    assertThat(client.cancel(id))
        .isEqualTo(new CancelResult(Outcome.PENDING_ON_WORKER, JobState.RUNNING));

    worker.close();

    assertThat(storedState(id))
        .as("a job whose cancellation was asked is not released to the queue")
        .isEqualTo("cancelled");
    assertThat(tableOf(id)).isEqualTo("finished_jobs");
    assertThat(errorKinds(id)).containsExactly("shutdown");
  }

  @Test
  void flaggedJobWhoseWorkerDiedEndsCancelledWhenRescued() {
    UUID id = plantStaleRunningJob("dead-worker");

    assertThat(client.cancel(id))
        .isEqualTo(new CancelResult(Outcome.PENDING_ON_WORKER, JobState.RUNNING));
    assertThat(cancelRequested(id)).isTrue();

    // A worker with a short stale threshold leads maintenance and rescues the silent job: as
    // cancellation was asked, it ends cancelled rather than going back to the queue.
    start(worker().register(NUMBERED, (ctx, p) -> null).staleThreshold(Duration.ofSeconds(1)));
    Job done = awaitState(id, JobState.CANCELLED, LONG);
    assertThat(errorKinds(id)).containsExactly("worker_lost");
    assertThat(done.attempts()).isEqualTo(1);
  }

  // ------------------------------------------------------------------ by filter

  @Test
  void cancelAllByTypeCancelsWaitingJobsAndFlagsRunningOnes() {
    JobType<Numbered> a = type("cancel_all_a").withQueue("cq");
    JobType<Numbered> b = type("cancel_all_b").withQueue("cq");
    start(worker().register(a, stubbornHandler()).register(b, stubbornHandler()).queue("cq", 2));
    List<UUID> running =
        List.of(enqueue(a, EnqueueOptions.DEFAULTS), enqueue(a, EnqueueOptions.DEFAULTS));
    await().atMost(LONG).until(() -> handlersStarted.get() == 2);
    List<UUID> waiting = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      waiting.add(enqueue(a, EnqueueOptions.DEFAULTS)); // the worker is full: these wait
    }
    waiting.add(enqueue(a, EnqueueOptions.builder().delay(Duration.ofHours(1)).build()));
    waiting.add(enqueue(a, EnqueueOptions.builder().queue("unserved").build()));
    List<UUID> otherType =
        List.of(enqueue(b, EnqueueOptions.DEFAULTS), enqueue(b, EnqueueOptions.DEFAULTS));

    CancelCounts counts = client.cancelAll(Set.of(a.name()), Set.of(), Set.of());

    assertThat(counts).isEqualTo(new CancelCounts(5, 2));
    for (UUID id : waiting) {
      assertThat(tableOf(id)).isEqualTo("finished_jobs");
      assertThat(storedState(id)).isEqualTo("cancelled");
    }
    for (UUID id : running) {
      assertThat(storedState(id)).isEqualTo("running");
      assertThat(cancelRequested(id)).isTrue();
    }
    for (UUID id : otherType) {
      assertThat(storedState(id)).isEqualTo("queued");
      assertThat(cancelRequested(id)).isFalse();
    }

    // The cancel notification reaches the worker asynchronously; only once it interrupted both
    // handlers does their normal return count as cancelled (a handler that returns before its
    // worker hears of the cancellation has done the work: its job succeeds).
    await().atMost(LONG).until(() -> interruptsIgnored.get() >= 2);
    release.countDown();
    for (UUID id : running) {
      awaitState(id, JobState.CANCELLED, LONG);
    }
    for (UUID id : otherType) {
      awaitState(id, JobState.SUCCEEDED, LONG);
    }
  }

  @Test
  void cancelAllByQueueAndStateTouchesOnlyWhatMatches() {
    JobType<Numbered> a = type("cancel_all_q").withQueue("cq");
    start(worker().register(a, stubbornHandler()).queue("cq", 1));
    UUID running = enqueue(a, EnqueueOptions.DEFAULTS);
    await().atMost(LONG).until(() -> handlersStarted.get() == 1);
    List<UUID> waitingInQueue =
        List.of(enqueue(a, EnqueueOptions.DEFAULTS), enqueue(a, EnqueueOptions.DEFAULTS));
    EnqueueOptions elsewhere = EnqueueOptions.builder().queue("other").build();
    List<UUID> otherQueue = List.of(enqueue(a, elsewhere), enqueue(a, elsewhere));

    assertThat(client.cancelAll(Set.of(), Set.of("cq"), Set.of(JobState.RUNNING)))
        .isEqualTo(new CancelCounts(0, 1));
    assertThat(cancelRequested(running)).isTrue();
    for (UUID id : waitingInQueue) {
      assertThat(storedState(id)).isEqualTo("queued");
    }

    assertThat(client.cancelAll(Set.of(), Set.of("cq"), Set.of(JobState.QUEUED, JobState.RETRYING)))
        .isEqualTo(new CancelCounts(2, 0));
    for (UUID id : waitingInQueue) {
      assertThat(storedState(id)).isEqualTo("cancelled");
    }
    for (UUID id : otherQueue) {
      assertThat(storedState(id)).isEqualTo("queued");
      assertThat(cancelRequested(id)).isFalse();
    }
    assertThatThrownBy(() -> client.cancelAll(Set.of(), Set.of("cq"), Set.of(JobState.SUCCEEDED)))
        .isInstanceOf(InvalidJobException.class);

    await()
        .atMost(LONG)
        .until(() -> interruptsIgnored.get() >= 1); // the worker heard of the cancellation
    release.countDown();
    awaitState(running, JobState.CANCELLED, LONG);
  }
}
