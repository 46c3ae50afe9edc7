package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.testkit.JobRows;
import io.pgjobs.worker.JobWorker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Reading and managing jobs through {@link JobClient}: get, list, countByQueue, retry. */
class ClientQueriesTest extends PgJobsTestBase {
  /** PostgreSQL's uuid order (unsigned, byte by byte), which "newest first" follows for UUIDv7 ids. */
  private static final Comparator<UUID> PG_UUID_ORDER = Comparator.comparing(
          UUID::getMostSignificantBits, Long::compareUnsigned)
      .thenComparing(UUID::getLeastSignificantBits, Long::compareUnsigned);

  static final JobType<Numbered> OK = JobType.of("ok", Numbered.class).withQueue("work");
  static final JobType<Numbered> FAILS =
      JobType.of("fails", Numbered.class).withQueue("work").withMaxAttempts(1);
  static final JobType<Numbered> RETRIES = JobType.of("retries", Numbered.class)
      .withQueue("work")
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofHours(1)));
  static final JobType<Numbered> BLOCKS = JobType.of("blocks", Numbered.class).withQueue("work");
  /** Its queue is served by no worker: its jobs stay queued. */
  static final JobType<Numbered> PARKED = JobType.of("parked", Numbered.class).withQueue("parked");

  private final CountDownLatch release = new CountDownLatch(1);
  private final CountDownLatch blocking = new CountDownLatch(1);

  @AfterEach
  void releaseBlockedHandlers() {
    release.countDown();
  }

  private JobWorker startWorker() {
    return start(worker()
        .pollInterval(Duration.ofMillis(50))
        .register(OK, (ctx, p) -> Map.of("n", p.n()))
        .register(FAILS, (ctx, p) -> {
          throw new IllegalStateException("fails " + p.n());
        })
        .register(RETRIES, (ctx, p) -> {
          throw new IllegalStateException("retries " + p.n());
        })
        .register(BLOCKS, (ctx, p) -> {
          blocking.countDown();
          if (!release.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("never released");
          }
          return null;
        })
        .queue("work", 10));
  }

  private static UUID enqueue(JobType<Numbered> type, int n) {
    return client.enqueue(type, new Numbered(n)).job().id();
  }

  private static List<UUID> ids(JobPage page) {
    return page.jobs().stream().map(Job::id).toList();
  }

  private static List<UUID> listAll(JobFilter.Builder filter) {
    return ids(client.list(filter.limit(JobFilter.MAX_LIMIT).build()));
  }

  // ---------------------------------------------------------------- get

  @Test
  void getFindsRunningAndFinishedJobsAndNothingForAnUnknownId() {
    JobWorker worker = startWorker();
    UUID blocked = enqueue(BLOCKS, 1);

    Job running = awaitState(blocked, JobState.RUNNING);
    assertThat(running.type()).isEqualTo("blocks");
    assertThat(running.queue()).isEqualTo("work");
    assertThat(running.payload().get("n").asInt()).isEqualTo(1);
    assertThat(running.attempts()).isEqualTo(1);
    assertThat(running.lockedBy()).isEqualTo(worker.workerId());
    assertThat(running.attemptedAt()).isNotNull();
    assertThat(running.heartbeatAt()).isNotNull();
    assertThat(running.finishedAt()).isNull();
    assertThat(running.output()).isNull();

    release.countDown();
    Job finished = awaitState(blocked, JobState.SUCCEEDED);
    assertThat(finished.id()).isEqualTo(blocked);
    assertThat(finished.finishedAt()).isAfterOrEqualTo(finished.attemptedAt());
    assertThat(finished.createdAt()).isEqualTo(running.createdAt());
    assertThat(finished.lockedBy()).isEqualTo(worker.workerId());
    assertThat(finished.heartbeatAt()).isNull();

    UUID done = enqueue(OK, 7);
    assertThat(awaitState(done, JobState.SUCCEEDED).output().get("n").asInt()).isEqualTo(7);

    assertThat(client.get(UUID.randomUUID())).isEmpty();
  }

  @Test
  void getReturnsAQueuedJobAsEnqueued() {
    EnqueuedJob enqueued = client.enqueue(
        PARKED,
        new Numbered(3),
        EnqueueOptions.builder()
            .context("why")
            .priority(-3)
            .maxAttempts(9)
            .timeout(Duration.ofSeconds(30))
            .build());
    Job stored = client.get(enqueued.job().id()).orElseThrow();
    assertThat(stored).isEqualTo(enqueued.job());
    assertThat(stored.state()).isEqualTo(JobState.QUEUED);
    assertThat(stored.context()).isEqualTo("why");
    assertThat(stored.priority()).isEqualTo(-3);
    assertThat(stored.maxAttempts()).isEqualTo(9);
    assertThat(stored.timeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(stored.errors()).isEmpty();
  }

  // ---------------------------------------------------------------- list

  @Test
  void listPagesNewestFirstAcrossBothTablesWithoutDuplicates() {
    List<UUID> all = new ArrayList<>();
    for (int i = 0; i < 25; i++) {
      all.add(enqueue(i % 2 == 0 ? OK : PARKED, i)); // 13 will finish, 12 stay queued
    }
    startWorker();
    await().atMost(Duration.ofSeconds(30)).until(() -> count("pgjobs.finished_jobs") == 13);

    List<JobPage> pages = new ArrayList<>();
    String cursor = null;
    do {
      JobPage page = client.list(JobFilter.builder().limit(10).cursor(cursor).build());
      pages.add(page);
      cursor = page.nextCursor();
    } while (cursor != null && pages.size() < 10);

    assertThat(pages).extracting(p -> p.jobs().size()).containsExactly(10, 10, 5);
    assertThat(pages.get(0).nextCursor()).isNotNull();
    assertThat(pages.get(1).nextCursor()).isNotNull();
    assertThat(pages.get(2).nextCursor()).isNull();
    List<UUID> listed = pages.stream().flatMap(p -> ids(p).stream()).toList();
    assertThat(listed)
        .doesNotHaveDuplicates()
        .containsExactlyElementsOf(all.stream().sorted(PG_UUID_ORDER.reversed()).toList());
    assertThat(pages.get(0).jobs())
        .extracting(Job::state)
        .contains(JobState.SUCCEEDED, JobState.QUEUED);
    // UUIDv7 ids are time-ordered: the newest job is listed first.
    assertThat(listed.getFirst()).isEqualTo(all.getLast());
  }

  @Test
  void fullLastPageIsFollowedByAnEmptyOne() {
    for (int i = 0; i < 4; i++) {
      enqueue(PARKED, i);
    }
    JobPage first = client.list(JobFilter.builder().limit(2).build());
    JobPage second =
        client.list(JobFilter.builder().limit(2).cursor(first.nextCursor()).build());
    JobPage third =
        client.list(JobFilter.builder().limit(2).cursor(second.nextCursor()).build());
    assertThat(second.jobs()).hasSize(2);
    assertThat(third.jobs()).isEmpty();
    assertThat(third.nextCursor()).isNull();
  }

  @Test
  void listFiltersByStateTypeQueueAndCreationTime() {
    startWorker();
    UUID ok1 = enqueue(OK, 1);
    UUID fail1 = enqueue(FAILS, 2);
    UUID parked1 = enqueue(PARKED, 3);
    // The creation-time bounds compare the millisecond in a job's id (UUIDv7) with the bound's, and
    // a job of the bound's own millisecond is neither before nor after it: each bound is taken in a
    // millisecond of its own, between the jobs' milliseconds.
    Instant afterFirstBatch = nextMillisecondThenNow();
    nextMillisecondThenNow();
    UUID parked2 = enqueue(PARKED, 4);
    Instant afterParked2 = nextMillisecondThenNow();
    nextMillisecondThenNow();
    UUID ok2 = enqueue(OK, 5);
    awaitState(ok1, JobState.SUCCEEDED);
    awaitState(fail1, JobState.FAILED);
    awaitState(ok2, JobState.SUCCEEDED);

    assertThat(listAll(JobFilter.builder().state(JobState.SUCCEEDED)))
        .containsExactlyInAnyOrder(ok1, ok2);
    assertThat(listAll(JobFilter.builder().state(JobState.FAILED))).containsExactly(fail1);
    assertThat(listAll(JobFilter.builder().state(JobState.QUEUED)))
        .containsExactlyInAnyOrder(parked1, parked2);
    assertThat(listAll(JobFilter.builder().state(JobState.QUEUED, JobState.FAILED)))
        .containsExactlyInAnyOrder(parked1, parked2, fail1);
    assertThat(listAll(JobFilter.builder().state(JobState.RUNNING, JobState.CANCELLED)))
        .isEmpty();

    assertThat(listAll(JobFilter.builder().type("ok"))).containsExactlyInAnyOrder(ok1, ok2);
    assertThat(listAll(JobFilter.builder().type("ok", "fails")))
        .containsExactlyInAnyOrder(ok1, ok2, fail1);
    assertThat(listAll(JobFilter.builder().type("nope"))).isEmpty();

    assertThat(listAll(JobFilter.builder().queue("parked")))
        .containsExactlyInAnyOrder(parked1, parked2);
    assertThat(listAll(JobFilter.builder().queue("work")))
        .containsExactlyInAnyOrder(ok1, ok2, fail1);
    assertThat(
            listAll(JobFilter.builder().queue("work").state(JobState.SUCCEEDED).type("fails")))
        .isEmpty();

    // (The JVM runs in America/Sao_Paulo: bounds are instants.)
    assertThat(listAll(JobFilter.builder().createdAfter(afterFirstBatch)))
        .containsExactlyInAnyOrder(parked2, ok2);
    assertThat(listAll(JobFilter.builder().createdBefore(afterFirstBatch)))
        .containsExactlyInAnyOrder(ok1, fail1, parked1);
    assertThat(
            listAll(JobFilter.builder().createdAfter(afterFirstBatch).createdBefore(afterParked2)))
        .containsExactly(parked2);
    assertThat(listAll(JobFilter.builder().createdAfter(afterFirstBatch).state(JobState.SUCCEEDED)))
        .containsExactly(ok2);
  }

  /** Waits until the clock is in a later millisecond than when called, then returns the time. */
  private static Instant nextMillisecondThenNow() {
    long now = System.currentTimeMillis();
    await().atMost(Duration.ofSeconds(5)).until(() -> System.currentTimeMillis() > now);
    return Instant.now();
  }

  @Test
  void listFiltersByTextInPayloadOrContextIgnoringCaseAndLiterally() {
    startWorker();
    UUID finished = enqueue(OK, 424242);
    UUID byContext = client
        .enqueue(
            PARKED,
            new Numbered(1),
            EnqueueOptions.builder().context("Order 42_%").build())
        .job()
        .id();
    UUID other = client
        .enqueue(
            PARKED, new Numbered(7), EnqueueOptions.builder().context("nothing").build())
        .job()
        .id();
    awaitState(finished, JobState.SUCCEEDED);

    assertThat(listAll(JobFilter.builder().text("4242"))).containsExactly(finished);
    assertThat(listAll(JobFilter.builder().text("order 42"))).containsExactly(byContext);
    assertThat(listAll(JobFilter.builder().text("42")))
        .containsExactlyInAnyOrder(finished, byContext);
    // % and _ are plain characters, not patterns.
    assertThat(listAll(JobFilter.builder().text("42_%"))).containsExactly(byContext);
    assertThat(listAll(JobFilter.builder().text("%"))).containsExactly(byContext);
    assertThat(listAll(JobFilter.builder().text("42").state(JobState.QUEUED)))
        .containsExactly(byContext);
    assertThat(listAll(JobFilter.builder().text(""))).contains(finished, byContext, other);
    assertThatThrownBy(() ->
            JobFilter.builder().text("x".repeat(JobFilter.MAX_TEXT_LENGTH + 1)).build())
        .isInstanceOf(InvalidJobException.class)
        .satisfies(e -> assertThat(((InvalidJobException) e).field()).isEqualTo("text"));
  }

  @Test
  void invalidCursorIsRejected() {
    String notV1 = Base64.getUrlEncoder()
        .encodeToString("v2:0191e0b4-0000-7000-8000-000000000000".getBytes(StandardCharsets.UTF_8));
    String notUuid =
        Base64.getUrlEncoder().encodeToString("v1:not-a-uuid".getBytes(StandardCharsets.UTF_8));
    for (String cursor : List.of("not a cursor!", "", notV1, notUuid)) {
      assertThatThrownBy(() -> client.list(JobFilter.builder().cursor(cursor).build()))
          .isInstanceOf(InvalidJobException.class)
          .hasMessageContaining("nextCursor")
          .satisfies(e -> assertThat(((InvalidJobException) e).field()).isEqualTo("cursor"));
    }
  }

  @Test
  void pageSizeOutsideOneToAThousandIsRejected() {
    for (int limit : new int[] {0, -1, JobFilter.MAX_LIMIT + 1}) {
      assertThatThrownBy(() -> JobFilter.builder().limit(limit).build())
          .isInstanceOf(InvalidJobException.class)
          .satisfies(e -> assertThat(((InvalidJobException) e).field()).isEqualTo("limit"));
    }
  }

  // ---------------------------------------------------------------- countByQueue

  @Test
  void countByQueueCountsEveryStateAndScheduledPerQueue() {
    enqueue(PARKED, 1);
    enqueue(PARKED, 2);
    client.enqueue(
        PARKED,
        new Numbered(3),
        EnqueueOptions.builder().delay(Duration.ofHours(1)).build());
    startWorker();
    UUID ok = enqueue(OK, 1);
    UUID failed = enqueue(FAILS, 2);
    UUID retrying = enqueue(RETRIES, 3);
    UUID running = enqueue(BLOCKS, 4);
    awaitState(ok, JobState.SUCCEEDED);
    awaitState(failed, JobState.FAILED);
    awaitState(retrying, JobState.RETRYING);
    awaitState(running, JobState.RUNNING);

    List<QueueCounts> counts = client.countByQueue();

    assertThat(counts).extracting(QueueCounts::queue).containsExactly("parked", "work");
    assertThat(counts)
        .allSatisfy(c -> assertThat(c.counts().keySet()).isEqualTo(EnumSet.allOf(JobState.class)));
    QueueCounts parked = counts.get(0);
    assertThat(parked.counts())
        .containsExactlyInAnyOrderEntriesOf(Map.of(
            JobState.QUEUED,
            3L,
            JobState.RUNNING,
            0L,
            JobState.RETRYING,
            0L,
            JobState.SUCCEEDED,
            0L,
            JobState.FAILED,
            0L,
            JobState.CANCELLED,
            0L,
            JobState.BLOCKED,
            0L));
    assertThat(parked.scheduled()).isEqualTo(1);
    QueueCounts work = counts.get(1);
    assertThat(work.counts())
        .containsExactlyInAnyOrderEntriesOf(Map.of(
            JobState.QUEUED,
            0L,
            JobState.RUNNING,
            1L,
            JobState.RETRYING,
            1L,
            JobState.SUCCEEDED,
            1L,
            JobState.FAILED,
            1L,
            JobState.CANCELLED,
            0L,
            JobState.BLOCKED,
            0L));
    assertThat(work.scheduled()).isZero();
  }

  @Test
  void countByQueueOfAnEmptyDatabaseIsEmpty() {
    assertThat(client.countByQueue()).isEmpty();
  }

  // ---------------------------------------------------------------- queueDepth

  /**
   * Due waiting jobs per queue, queued or retrying, with a capability or without (one part of the count
   * per ready index, the parts summed per queue); scheduled and running jobs are not counted.
   */
  @Test
  void queueDepthCountsDueWaitingJobsPerQueueWithAndWithoutACapability() {
    EnqueueOptions gpu = EnqueueOptions.builder().capability("gpu").build();
    EnqueueOptions later = EnqueueOptions.builder().delay(Duration.ofHours(1)).build();
    enqueue(PARKED, 1);
    enqueue(PARKED, 2);
    UUID retryingDue = enqueue(PARKED, 3);
    client.enqueue(PARKED, new Numbered(4), gpu);
    UUID retryingDueWithCapability =
        client.enqueue(PARKED, new Numbered(5), gpu).job().id();
    client.enqueue(PARKED, new Numbered(6), later);
    client.enqueue(
        PARKED,
        new Numbered(7),
        EnqueueOptions.builder().capability("gpu").delay(Duration.ofHours(1)).build());
    client.enqueue(
        PARKED,
        new Numbered(8),
        EnqueueOptions.builder().queue("gpus").capability("gpu").build());
    client.enqueue(
        PARKED,
        new Numbered(9),
        EnqueueOptions.builder().queue("gpus").capability("gpu").build());
    client.enqueue(
        PARKED,
        new Numbered(10),
        EnqueueOptions.builder().queue("later").delay(Duration.ofHours(1)).build());
    db.execute("UPDATE pgjobs.jobs SET state = 'retrying', attempts = 1 WHERE id IN ('"
        + retryingDue + "', '" + retryingDueWithCapability + "')");
    startWorker();
    UUID retryingLater = enqueue(RETRIES, 11);
    UUID running = enqueue(BLOCKS, 12);
    awaitState(retryingLater, JobState.RETRYING);
    awaitState(running, JobState.RUNNING);

    assertThat(client.queueDepth()).isEqualTo(Map.of("parked", 5L, "gpus", 2L));
  }

  @Test
  void queueDepthOfAnEmptyDatabaseIsEmpty() {
    assertThat(client.queueDepth()).isEmpty();
  }

  // ---------------------------------------------------------------- retry

  @Test
  void retryOfAFailedJobQueuesItAgainWithAttemptsResetAndErrorsKeptThenItRunsAgain() {
    JobType<Numbered> failsTwice = JobType.of("fails_twice", Numbered.class)
        .withQueue("twice")
        .withMaxAttempts(2)
        .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(50)));
    AtomicInteger calls = new AtomicInteger();
    JobWorker.Builder builder = worker()
        .pollInterval(Duration.ofMillis(50))
        .register(failsTwice, (ctx, p) -> {
          if (calls.incrementAndGet() <= 2) {
            throw new IllegalStateException("call " + calls.get());
          }
          return Map.of("attempt", ctx.attempt());
        });
    JobWorker first = start(builder);
    UUID id = client.enqueue(failsTwice, new Numbered(1)).job().id();
    Job failed = awaitState(id, JobState.FAILED);
    assertThat(failed.attempts()).isEqualTo(2);
    first.close(); // so the retried job can be seen queued before anything claims it

    assertThat(client.retry(id)).isEqualTo(RetryResult.RETRIED);

    Job queued = client.get(id).orElseThrow();
    assertThat(queued.state()).isEqualTo(JobState.QUEUED);
    assertThat(queued.attempts()).isZero();
    assertThat(queued.maxAttempts()).isEqualTo(2);
    assertThat(queued.errors()).isEqualTo(failed.errors());
    assertThat(queued.finishedAt()).isNull();
    assertThat(queued.createdAt()).isEqualTo(failed.createdAt());
    assertThat(queued.runAt()).isAfterOrEqualTo(failed.finishedAt());
    assertThat(count("pgjobs.finished_jobs")).isZero();
    assertThat(count("pgjobs.jobs")).isEqualTo(1);

    start(worker().pollInterval(Duration.ofMillis(50)).register(failsTwice, (ctx, p) -> {
      calls.incrementAndGet();
      return Map.of("attempt", ctx.attempt());
    }));
    Job done = awaitState(id, JobState.SUCCEEDED);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.output().get("attempt").asInt()).isEqualTo(1);
    assertThat(done.errors()).extracting(JobError::message).containsExactly("call 1", "call 2");
    assertThat(calls.get()).isEqualTo(3);
  }

  @Test
  void retryOfACancelledJobQueuesItAgain() {
    UUID id = JobRows.in(db)
        .type("parked")
        .queue("parked")
        .payload("{\"n\":1}")
        .state("cancelled")
        .attempts(1)
        .insert();

    assertThat(client.retry(id)).isEqualTo(RetryResult.RETRIED);

    Job queued = client.get(id).orElseThrow();
    assertThat(queued.state()).isEqualTo(JobState.QUEUED);
    assertThat(queued.attempts()).isZero();
  }

  @Test
  void retryOfAJobThatIsNotFailedOrCancelledIsNotRetryableAndChangesNothing() {
    UUID queued = enqueue(PARKED, 1);
    startWorker();
    UUID succeeded = enqueue(OK, 2);
    Job done = awaitState(succeeded, JobState.SUCCEEDED);
    UUID running = enqueue(BLOCKS, 3);
    awaitState(running, JobState.RUNNING);
    Job queuedBefore = client.get(queued).orElseThrow();

    assertThat(client.retry(queued)).isEqualTo(RetryResult.NOT_RETRYABLE);
    assertThat(client.retry(succeeded)).isEqualTo(RetryResult.NOT_RETRYABLE);
    assertThat(client.retry(running)).isEqualTo(RetryResult.NOT_RETRYABLE);

    assertThat(client.get(queued).orElseThrow()).isEqualTo(queuedBefore);
    assertThat(client.get(succeeded).orElseThrow()).isEqualTo(done);
    assertThat(client.get(running).orElseThrow().state()).isEqualTo(JobState.RUNNING);
  }

  @Test
  void retryOfAnUnknownIdIsNotFound() {
    assertThat(client.retry(UUID.randomUUID())).isEqualTo(RetryResult.NOT_FOUND);
    assertThat(Arrays.asList(count("pgjobs.jobs"), count("pgjobs.finished_jobs")))
        .containsOnly(0L);
  }

  @Test
  void aCancelledJobScheduledAheadKeepsItsTimeWhenRetriedUnlessAskedToRunNow() {
    java.time.Instant inAnHour = java.time.Instant.now()
        .plus(Duration.ofHours(1))
        .truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
    UUID kept = client
        .enqueue(
            NUMBERED, new Numbered(1), EnqueueOptions.builder().runAt(inAnHour).build())
        .job()
        .id();
    UUID now = client
        .enqueue(
            NUMBERED, new Numbered(2), EnqueueOptions.builder().runAt(inAnHour).build())
        .job()
        .id();
    client.cancel(kept);
    client.cancel(now);

    assertThat(client.retry(kept)).isEqualTo(RetryResult.RETRIED);
    assertThat(client.retry(now, true)).isEqualTo(RetryResult.RETRIED);

    Job scheduled = client.get(kept).orElseThrow();
    assertThat(scheduled.runAt()).isEqualTo(inAnHour);
    assertThat(scheduled.state()).isEqualTo(JobState.QUEUED);
    Job due = client.get(now).orElseThrow();
    assertThat(due.runAt()).isBefore(inAnHour.minus(Duration.ofMinutes(59)));
    assertThat(due.state()).isEqualTo(JobState.QUEUED);
  }
}
