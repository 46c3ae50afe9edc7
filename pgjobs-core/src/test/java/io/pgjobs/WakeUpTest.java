package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Acceptance 6: an idle worker is woken by LISTEN/NOTIFY as soon as a job is enqueued, long before
 * its poll interval; polling alone still finds work; a delayed job does not start before its run_at.
 */
class WakeUpTest extends PgJobsTestBase {
  /** Long enough that a job starting within {@link #WAKE_DEADLINE} cannot have been found by a poll. */
  private static final Duration LONG_POLL = Duration.ofSeconds(30);

  private static final Duration WAKE_DEADLINE = Duration.ofSeconds(5);

  /** When each job's handler started, by the database clock. */
  private final Map<UUID, Instant> startedAt = new ConcurrentHashMap<>();

  @BeforeEach
  void forgetStarts() {
    startedAt.clear();
  }

  @Test
  void idleListeningWorkerStartsNewJobWellBeforeItsPollInterval() {
    JobWorker worker = startIdleListeningWorker();

    // Each job is enqueued while the worker sits idle in its 30 s poll wait (the previous job is
    // done), so only the notification can get it started within 5 s.
    for (int i = 0; i < 3; i++) {
      UUID id = client.enqueue(NUMBERED, new Numbered(i)).job().id();
      awaitStartWithinWakeDeadline(List.of(id));
      awaitState(id, JobState.SUCCEEDED);
    }
    assertThat(worker.isListening()).isTrue();
  }

  @Test
  void idleListeningWorkerStartsBulkEnqueuedJobsWellBeforeItsPollInterval() {
    startIdleListeningWorker();

    List<UUID> ids = client.enqueueAll(NUMBERED, numbered(5), EnqueueOptions.DEFAULTS);

    awaitStartWithinWakeDeadline(ids);
  }

  @Test
  void idleListeningWorkerStartsJobsBulkEnqueuedInCallersTransactionWellBeforeItsPollInterval()
      throws Exception {
    startIdleListeningWorker();

    List<UUID> ids;
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      // Some work in the business transaction first, as an application would do.
      try (Statement st = tx.createStatement()) {
        st.execute("SELECT 1");
      }
      ids = client.enqueueAll(tx, NUMBERED, numbered(5), EnqueueOptions.DEFAULTS);
      tx.commit();
    }

    awaitStartWithinWakeDeadline(ids);
  }

  @Test
  void idleListeningWorkerStartsJobEnqueuedInCallersTransactionWellBeforeItsPollInterval()
      throws Exception {
    startIdleListeningWorker();

    UUID id;
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      try (Statement st = tx.createStatement()) {
        st.execute("SELECT 1");
      }
      id = client
          .enqueue(tx, NUMBERED, new Numbered(1), EnqueueOptions.DEFAULTS)
          .job()
          .id();
      tx.commit();
    }

    awaitStartWithinWakeDeadline(List.of(id));
  }

  @Test
  void workerWithoutListenFindsJobsByPollingAlone() {
    JobWorker worker = start(worker()
        .listen(false)
        .pollInterval(Duration.ofMillis(200))
        .register(NUMBERED, this::recordStart));
    assertThat(worker.isListening()).isFalse();

    // The second job is enqueued after the worker's first claims are long done: only a poll finds
    // it.
    for (int i = 0; i < 2; i++) {
      UUID id = client.enqueue(NUMBERED, new Numbered(i)).job().id();
      Job done = awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(30));
      assertThat(done.attempts()).isEqualTo(1);
      assertThat(startedAt).containsKey(id);
    }
    assertThat(worker.isListening()).isFalse();
  }

  @Test
  void delayedJobDoesNotStartBeforeItsRunAtAndStartsAfterIt() {
    start(worker().pollInterval(Duration.ofMillis(100)).register(NUMBERED, this::recordStart));

    Job enqueued = client
        .enqueue(
            NUMBERED,
            new Numbered(1),
            EnqueueOptions.builder().delay(Duration.ofSeconds(2)).build())
        .job();
    assertThat(Duration.between(enqueued.createdAt(), enqueued.runAt()))
        .isEqualTo(Duration.ofSeconds(2));

    Job done = awaitState(enqueued.id(), JobState.SUCCEEDED, Duration.ofSeconds(30));
    assertThat(startedAt.get(enqueued.id()))
        .as("handler start by the database clock")
        .isAfterOrEqualTo(enqueued.runAt());
    assertThat(done.attemptedAt()).as("claim time").isAfterOrEqualTo(enqueued.runAt());
    assertThat(done.runAt()).isEqualTo(enqueued.runAt());
    assertThat(done.attempts()).isEqualTo(1);
  }

  @Test
  void bulkEnqueuedDelayedJobsDoNotStartBeforeTheirRunAtAndStartAfterIt() {
    start(worker().pollInterval(Duration.ofMillis(100)).register(NUMBERED, this::recordStart));

    Instant before = databaseNow();
    List<UUID> ids = client.enqueueAll(
        NUMBERED,
        numbered(10),
        EnqueueOptions.builder().delay(Duration.ofSeconds(2)).build());

    for (UUID id : ids) {
      Job done = awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(30));
      assertThat(done.runAt())
          .as("run_at of a job enqueued with a 2 s delay")
          .isAfterOrEqualTo(before.plusSeconds(2));
      assertThat(Duration.between(done.createdAt(), done.runAt())).isEqualTo(Duration.ofSeconds(2));
      assertThat(startedAt.get(id))
          .as("handler start by the database clock")
          .isAfterOrEqualTo(done.runAt());
      assertThat(done.attemptedAt()).as("claim time").isAfterOrEqualTo(done.runAt());
    }
  }

  // ---------------------------------------------------------------- helpers

  /**
   * Starts a worker with LISTEN on and a 30 s poll interval and waits until it listens and has run a
   * first job, so that it is idle in its poll wait when the test enqueues.
   */
  private JobWorker startIdleListeningWorker() {
    JobWorker worker =
        start(worker().pollInterval(LONG_POLL).register(NUMBERED, this::recordStart));
    await("worker listening").atMost(Duration.ofSeconds(30)).until(worker::isListening);
    // The warm-up job may need a poll if notifications are broken: let the assertions that follow
    // report that, not this preparation.
    UUID warmUp = client.enqueue(NUMBERED, new Numbered(-1)).job().id();
    awaitState(warmUp, JobState.SUCCEEDED, LONG_POLL.plusSeconds(30));
    await("worker idle").atMost(Duration.ofSeconds(10)).until(() -> worker.runningJobs() == 0);
    startedAt.clear();
    return worker;
  }

  private void awaitStartWithinWakeDeadline(List<UUID> ids) {
    await("jobs started by notification, not by the " + LONG_POLL + " poll")
        .atMost(WAKE_DEADLINE)
        .pollInterval(Duration.ofMillis(20))
        .until(() -> startedAt.keySet().containsAll(ids));
  }

  private Object recordStart(JobContext ctx, Numbered payload) throws Exception {
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT clock_timestamp()")) {
      rs.next();
      startedAt.put(ctx.jobId(), rs.getTimestamp(1).toInstant());
    }
    return null;
  }

  private static Instant databaseNow() {
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT clock_timestamp()")) {
      rs.next();
      return rs.getTimestamp(1).toInstant();
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static List<Numbered> numbered(int count) {
    return IntStream.range(0, count).mapToObj(Numbered::new).toList();
  }
}
