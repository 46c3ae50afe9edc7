package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobError;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.RetryPolicy;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The write path of running jobs at its edges: outputs jsonb cannot store, rows locked by other
 * transactions, handlers that ignore interrupts, claims whose reply is lost, prefetched jobs that wait
 * too long, a shutdown racing lanes that are just starting.
 */
@Tag(Tags.SLOW)
class WritePathTest extends LifecycleTestBase {

  /** A payload: what the handler returns (as output) and how long it works. */
  public record Task(String output, long sleepMillis) {}

  static final JobType<Task> TASK = JobType.of("task", Task.class);

  private static List<UUID> enqueue(int count, Task task) {
    return client.enqueueAll(TASK, Collections.nCopies(count, task), EnqueueOptions.DEFAULTS);
  }

  /** The job's heartbeat_at, in epoch milliseconds. */
  private static long heartbeatOf(UUID id) {
    return db.queryLong(
        "SELECT (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM pgjobs.jobs WHERE id = '"
            + id + "'");
  }

  // ---------------------------------------------------------------- item 2: a poisoned success

  @Test
  void anOutputJsonbCannotStoreFailsOnlyItsJobAndTheWorkerKeepsGoing() {
    List<UUID> good = new ArrayList<>(enqueue(300, new Task("fine", 0)));
    UUID poisoned = client.enqueue(TASK, new Task("poison", 0)).job().id();
    good.addAll(enqueue(300, new Task("also fine", 0)));
    // Jackson writes U+0000 as \u0000, which jsonb refuses: the output cannot be stored.
    start(worker()
        .completionBatch(1_000)
        .pollInterval(Duration.ofMillis(50))
        .register(
            TASK,
            (ctx, t) ->
                Map.of("echo", t.output().equals("poison") ? "nul \u0000 inside" : t.output())));

    Job failed = awaitState(poisoned, JobState.FAILED, Duration.ofSeconds(30));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() ->
            count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'") == 600);
    JobError error = failed.errors().get(failed.errors().size() - 1);
    assertThat(error.kind()).isEqualTo("unstorable_output");
    assertThat(error.message()).startsWith("output is not storable").contains("\\u0000");
    assertThat(failed.attempts()).isEqualTo(1);

    // The worker still claims and writes.
    List<UUID> later = enqueue(50, new Task("later", 0));
    later.forEach(id -> awaitState(id, JobState.SUCCEEDED));
    assertThat(count("pgjobs.jobs")).isZero();
  }

  @Test
  void outputsWithAwkwardCharactersOtherThanNulAreStoredAsGiven() {
    String awkward =
        "quote \" backslash \\ tab \t newline \n cr \r bell \u0007 esc \u001b del \u007f"
            + " nbsp \u00a0 bom \ufeff ls \u2028 ps \u2029 emoji 😀 cjk 漢字 rtl \u202e combining e\u0301 max \uffff"
            + " sql '; DROP TABLE jobs; -- json {\"a\":[1,2]}";
    UUID id = client.enqueue(TASK, new Task(awkward, 0)).job().id();
    start(worker().register(TASK, (ctx, t) -> Map.of("echo", t.output())));

    Job done = awaitState(id, JobState.SUCCEEDED);
    assertThat(done.output().path("echo").asString()).isEqualTo(awkward);
  }

  // ---------------------------------------------------------------- item 4: row locks

  @Test
  void aRowLockedByAnotherTransactionStallsNeitherTheHeartbeatNorTheSuccessesOfTheWorkersOtherJobs()
      throws Exception {
    UUID locked = client.enqueue(TASK, new Task("locked", 0)).job().id();
    UUID longRunning = client.enqueue(TASK, new Task("long", 0)).job().id();
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch lockedHandlerReached = new CountDownLatch(1);
    start(worker().heartbeatInterval(Duration.ofMillis(200)).register(TASK, (ctx, t) -> {
      if (t.output().equals("locked")) {
        lockedHandlerReached.countDown();
      }
      if (!t.output().equals("quick")) {
        release.await(); // interruptible: released by the test
      }
      return null;
    }));
    awaitState(locked, JobState.RUNNING);
    awaitState(longRunning, JobState.RUNNING);
    assertThat(lockedHandlerReached.await(10, TimeUnit.SECONDS)).isTrue();

    try (Connection other = db.dataSource().getConnection()) {
      other.setAutoCommit(false);
      try (Statement st = other.createStatement()) {
        // An operator's long transaction holding the job's row (as cancel(connection, id) does).
        st.execute("SELECT 1 FROM pgjobs.jobs WHERE id = '" + locked + "' FOR UPDATE");
      }
      long before = heartbeatOf(longRunning);
      await("the other job's heartbeat advances while the row is locked")
          .atMost(Duration.ofSeconds(10))
          .until(() -> heartbeatOf(longRunning) > before + 600);

      // The locked job finishes: its success waits for the lock, the others' do not.
      List<UUID> quick = enqueue(20, new Task("quick", 0));
      release.countDown();
      quick.forEach(id -> awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(10)));
      awaitState(longRunning, JobState.SUCCEEDED, Duration.ofSeconds(10));
      assertThat(storedState(locked)).isEqualTo("running");
      other.rollback();
    }
    awaitState(locked, JobState.SUCCEEDED, Duration.ofSeconds(10));
    assertThat(job(locked).attempts()).isEqualTo(1);
  }

  @Test
  void aSuccessWhoseStatementWorksLongerThanTheLockWaitIsWrittenOnceNotCancelledAndDoneAgain()
      throws Exception {
    // A statement that ends a job may rightly work for seconds without waiting for any lock: a
    // parent whose end unblocks a large graph. Here a trigger of the test's stands in for that
    // work, longer than the completer's lock wait (1 s), and counts its runs in a sequence (which a
    // rollback does not undo). A statement timeout would cancel the first run and do it again with
    // the skip-locked form: two runs.
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement()) {
      st.execute("CREATE SEQUENCE public.long_success_runs");
      st.execute(
          "CREATE FUNCTION public.long_success() RETURNS trigger LANGUAGE plpgsql AS $$"
              + " BEGIN IF EXISTS (SELECT 1 FROM ended WHERE payload ->> 'output' = 'long-statement') THEN"
              + " PERFORM nextval('public.long_success_runs'); PERFORM pg_sleep(1.5); END IF; RETURN NULL; END $$");
      st.execute(
          "CREATE TRIGGER long_success AFTER DELETE ON pgjobs.jobs REFERENCING OLD TABLE AS ended"
              + " FOR EACH STATEMENT EXECUTE FUNCTION public.long_success()");
    }
    try {
      UUID id = client.enqueue(TASK, new Task("long-statement", 0)).job().id();
      start(worker().register(TASK, (ctx, t) -> t.output()));
      awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(20));
      assertThat(db.queryLong("SELECT last_value FROM public.long_success_runs"))
          .isEqualTo(1L);
      assertThat(job(id).attempts()).isEqualTo(1);
    } finally {
      try (Connection c = db.dataSource().getConnection();
          Statement st = c.createStatement()) {
        st.execute("DROP TRIGGER long_success ON pgjobs.jobs");
        st.execute("DROP FUNCTION public.long_success()");
        st.execute("DROP SEQUENCE public.long_success_runs");
      }
    }
  }

  @Test
  void aHandlerThatKeepsATransactionOpenOnItsOwnRowAfterCompletingDoesNotStallTheOthersHeartbeat()
      throws Exception {
    UUID holder = client.enqueue(TASK, new Task("holder", 0)).job().id();
    UUID other = client.enqueue(TASK, new Task("other", 0)).job().id();
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch completed = new CountDownLatch(1);
    start(worker().heartbeatInterval(Duration.ofMillis(200)).register(TASK, (ctx, t) -> {
      if (t.output().equals("holder")) {
        try (Connection tx = ctx.dataSource().getConnection()) {
          tx.setAutoCommit(false);
          ctx.complete(tx, Map.of("done", true)); // deletes the row: locked until commit
          completed.countDown();
          release.await();
          tx.commit();
        }
        return null;
      }
      release.await();
      return null;
    }));
    assertThat(completed.await(10, TimeUnit.SECONDS)).isTrue();
    awaitState(other, JobState.RUNNING);
    long before = heartbeatOf(other);
    await("the other job's heartbeat advances")
        .atMost(Duration.ofSeconds(10))
        .until(() -> heartbeatOf(other) > before + 600);
    release.countDown();
    awaitState(holder, JobState.SUCCEEDED);
    awaitState(other, JobState.SUCCEEDED);
  }

  // ---------------------------------------------------------------- item 5: handlers that ignore
  // interrupts

  @Test
  void aHandlerThatIgnoresInterruptsIsLetGoAfterItsTimeoutAndItsJobRetried() {
    JobType<Task> stubborn = JobType.of("stubborn", Task.class)
        .withTimeout(Duration.ofMillis(300))
        .withMaxAttempts(2)
        .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(10)));
    CountDownLatch firstMayReturn = new CountDownLatch(1);
    AtomicInteger secondRuns = new AtomicInteger();
    UUID id = client.enqueue(stubborn, new Task("x", 0)).job().id();
    JobWorker worker = start(worker()
        .stuckHandlerGrace(Duration.ofMillis(300))
        .heartbeatInterval(Duration.ofMillis(200))
        .queue(JobType.DEFAULT_QUEUE, 2)
        .register(stubborn, (ctx, t) -> {
          if (ctx.attempt() == 1) {
            while (true) { // ignores every interrupt until the test lets it return
              try {
                if (firstMayReturn.await(10, TimeUnit.SECONDS)) {
                  return Map.of("from", "the stuck first attempt");
                }
              } catch (InterruptedException ignored) {
                // a stubborn handler
              }
            }
          }
          secondRuns.incrementAndGet();
          return Map.of("from", "attempt 2");
        }));

    Job done = awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(15));
    assertThat(done.attempts()).isEqualTo(2);
    assertThat(done.output().path("from").asString()).isEqualTo("attempt 2");
    assertThat(errorKinds(id)).containsExactly("timeout");
    assertThat(done.errors().get(0).message()).contains("timed out");
    assertThat(secondRuns).hasValue(1);
    await().atMost(Duration.ofSeconds(5)).until(() -> worker.stuckLanes() == 1);
    assertThat(worker.heldJobs()).isZero(); // the stuck job is no longer heartbeated
    await("the stuck lane is reported in the worker's row")
        .atMost(Duration.ofSeconds(10))
        .until(() -> client.workers().stream()
            .anyMatch(w -> w.id().equals(worker.workerId()) && w.stuckLanes() == 1));

    firstMayReturn.countDown();
    await().atMost(Duration.ofSeconds(5)).until(() -> worker.stuckLanes() == 0);
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> client.workers().stream()
            .anyMatch(w -> w.id().equals(worker.workerId()) && w.stuckLanes() == 0));
    Job after = job(id);
    assertThat(after.output().path("from").asString())
        .isEqualTo("attempt 2"); // the late return wrote nothing
    assertThat(after.attempts()).isEqualTo(2);
  }

  // ---------------------------------------------------------------- item 6: a claim whose reply
  // was lost

  @Test
  void jobsOfAClaimWhoseReplyWasLostAreGivenBackWithoutSpendingAnAttempt() throws Exception {
    JobType<Task> once = JobType.of("once", Task.class).withMaxAttempts(1);
    List<UUID> lost = client.enqueueAll(
        once, Collections.nCopies(3, new Task("lost", 0)), EnqueueOptions.DEFAULTS);
    // The claim commits, its reply never arrives: the jobs are running under the worker, unknown to
    // it.
    ExecutionStore store = new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
    List<ClaimedJob> claimed = store.claim(JobType.DEFAULT_QUEUE, 10, "worker-lost-reply");
    assertThat(claimed).hasSize(3);
    // The worker's next claim fails (the claim token sequence is exhausted for a moment; a claim
    // draws a token only when it finds a job, so one more is waiting).
    UUID next = client.enqueue(once, new Task("next", 0)).job().id();
    long current = db.queryLong("SELECT last_value FROM pgjobs.claim_tokens");
    db.execute("ALTER SEQUENCE pgjobs.claim_tokens MAXVALUE " + current);
    Logger poller = (Logger) LoggerFactory.getLogger("io.pgjobs.worker.QueuePoller");
    ListAppender<ILoggingEvent> claimFailures = new ListAppender<>();
    claimFailures.start();
    poller.addAppender(claimFailures);
    try {
      start(worker()
          .workerId("worker-lost-reply")
          .pollInterval(Duration.ofMillis(100))
          .register(once, (ctx, t) -> Map.of("attempt", ctx.attempt())));
      await("a claim failed")
          .atMost(Duration.ofSeconds(15))
          .pollInterval(Duration.ofMillis(20))
          .until(() -> claimFailures.list.stream()
              .anyMatch(e -> e.getFormattedMessage().contains("failed")));
    } finally {
      db.execute("ALTER SEQUENCE pgjobs.claim_tokens NO MAXVALUE");
      poller.detachAppender(claimFailures);
    }

    assertThat(awaitState(next, JobState.SUCCEEDED, Duration.ofSeconds(15)).attempts())
        .isEqualTo(1);
    for (UUID id : lost) {
      Job done = awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(15));
      assertThat(done.attempts()).isEqualTo(1);
      assertThat(done.errors()).isEmpty();
    }
  }

  // ---------------------------------------------------------------- item 7: hoarded prefetch

  @Test
  void prefetchedJobsThatWaitTooLongForALaneGoBackToTheQueueForAnIdleWorker() {
    JobType<Task> slow = JobType.of("slow", Task.class);
    Map<UUID, String> ranOn = new ConcurrentHashMap<>();
    // One priority level: the quick jobs, enqueued first, come before the slow ones in claim order,
    // and the claim that reaches the slow ones is still sized by the quick jobs' rate.
    List<UUID> quick = client.enqueueAll(
        TASK, Collections.nCopies(20_000, new Task("q", 0)), EnqueueOptions.DEFAULTS);
    List<UUID> slowJobs = client.enqueueAll(
        slow, Collections.nCopies(40, new Task("s", 400)), EnqueueOptions.DEFAULTS);
    start(worker()
        .workerId("hoarder")
        .queue(JobType.DEFAULT_QUEUE, 2)
        .register(TASK, (ctx, t) -> null)
        .register(slow, (ctx, t) -> {
          ranOn.put(ctx.jobId(), ctx.workerId());
          Thread.sleep(t.sleepMillis());
          return null;
        }));
    await("the hoarder has claimed slow jobs ahead")
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(20))
        .until(() ->
            count("SELECT count(*) FROM pgjobs.jobs WHERE type = 'slow' AND locked_by = 'hoarder'")
                > 4);
    start(worker()
        .workerId("idle")
        .queue(JobType.DEFAULT_QUEUE, 40)
        .pollInterval(Duration.ofMillis(100))
        .register(TASK, (ctx, t) -> null)
        .register(slow, (ctx, t) -> {
          ranOn.put(ctx.jobId(), ctx.workerId());
          Thread.sleep(t.sleepMillis());
          return null;
        }));

    slowJobs.forEach(id -> awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(60)));
    quick.forEach(id -> assertThat(storedState(id)).isEqualTo("succeeded"));
    long onIdle = ranOn.values().stream().filter("idle"::equals).count();
    // 40 jobs of 400 ms on 2 lanes would take 8 s on the hoarder alone; the idle worker takes most.
    assertThat(onIdle).as("slow jobs run by the idle worker").isGreaterThanOrEqualTo(20);
    assertThat(count(
            "SELECT count(*) FROM pgjobs.finished_jobs WHERE type = 'slow' AND attempts <> 1"))
        .isZero();
  }

  // ---------------------------------------------------------------- items 8 and 14: shutdown

  @Test
  void closeReturnsOnlyOnceTheReleaseOfAHandlerItLetGoIsWritten() throws Exception {
    UUID id = enqueue(1, new Task("stubborn", 0)).get(0);
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch letOut = new CountDownLatch(1);
    JobWorker worker = JobWorker.builder(db.dataSource())
        .shutdownGrace(Duration.ZERO)
        .stuckHandlerGrace(Duration.ofMillis(100))
        .register(TASK, (ctx, t) -> {
          started.countDown();
          while (true) { // ignores the interrupt of the shutdown until the test lets it out
            try {
              letOut.await();
              return null;
            } catch (InterruptedException ignored) {
              // stubborn
            }
          }
        })
        .build()
        .start();
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    java.util.concurrent.CompletableFuture<Void> closed;
    try (Connection locker = db.dataSource().getConnection()) {
      // The release will wait for this row lock: the write of the let-go handler's outcome is in
      // flight.
      locker.setAutoCommit(false);
      try (PreparedStatement ps =
          locker.prepareStatement("SELECT 1 FROM pgjobs.jobs WHERE id = ? FOR UPDATE")) {
        ps.setObject(1, id);
        ps.executeQuery().close();
      }
      closed = java.util.concurrent.CompletableFuture.runAsync(worker::close);
      await("the release waiting for the row lock")
          .atMost(Duration.ofSeconds(10))
          .until(
              () -> count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                      + " AND wait_event_type = 'Lock' AND query LIKE '%released AS%'")
                  > 0);
      letOut
          .countDown(); // the handler returns: nothing but the release is left for close() to wait
      // for

      await("close() waiting for the release")
          .during(Duration.ofMillis(500))
          .atMost(Duration.ofSeconds(2))
          .until(() -> !closed.isDone());
      locker.commit();
    }
    closed.get(15, TimeUnit.SECONDS);

    // Written before close() returned: the job is back in the queue with the shutdown on record.
    assertThat(queryString("SELECT state FROM pgjobs.jobs WHERE id = ?", id)).isEqualTo("retrying");
    assertThat(
            count(
                "SELECT count(*) FROM pgjobs.jobs, jsonb_array_elements(errors) AS e WHERE e->>'kind' = 'shutdown'"))
        .isEqualTo(1);
  }

  @Test
  void
      closeWithNoGraceStopsEveryHandlerIncludingThoseStartingDuringTheStopAndLogsNoWarningOfRejection() {
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    root.addAppender(appender);
    try {
      for (int round = 0; round < 5; round++) {
        db.execute("TRUNCATE pgjobs.jobs, pgjobs.finished_jobs");
        List<UUID> ids = enqueue(400, new Task("long", 30_000));
        JobWorker worker = JobWorker.builder(db.dataSource())
            .shutdownGrace(Duration.ZERO)
            .queue(JobType.DEFAULT_QUEUE, 200)
            .register(TASK, (ctx, t) -> {
              Thread.sleep(t.sleepMillis());
              return null;
            })
            .build()
            .start();
        int startedAtLeast = round * 40; // round 0 closes while the first lanes are starting
        await().atMost(Duration.ofSeconds(10)).until(() -> worker.runningJobs() >= startedAtLeast);
        long started = System.nanoTime();
        worker.close();
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(8));
        assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running'"))
            .as("jobs left running after close, round " + round)
            .isZero();
        assertThat(count("pgjobs.jobs") + count("pgjobs.finished_jobs")).isEqualTo(ids.size());
      }
      List<String> noise = appender.list.stream()
          .filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
          .map(ILoggingEvent::getFormattedMessage)
          .filter(m -> m.contains("RejectedExecution") || m.contains("could not start a job"))
          .toList();
      assertThat(noise).isEmpty();
    } finally {
      root.detachAppender(appender);
    }
  }
}
