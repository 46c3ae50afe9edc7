package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobError;
import io.pgjobs.JobState;
import io.pgjobs.lifecycle.Lifecycle.Work;
import io.pgjobs.lifecycle.WorkerProcesses.WorkerProcess;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A worker process killed with {@code kill -9} in the middle of its jobs: the maintenance leader on
 * another worker notices the silent jobs after the stale threshold and returns them to the queue, where
 * they are run to completion once; the dead worker's registration is removed.
 */
@Tag(Tags.PROCESS)
class CrashRescueTest extends LifecycleTestBase {
  private static final Duration LONG =
      Duration.ofSeconds(120); // child JVMs starting on a loaded machine
  private static final Duration STALE = Duration.ofSeconds(3);

  private JobWorker.Builder rescuer(String id) {
    return worker()
        .workerId(id)
        .register(Lifecycle.WORK, Lifecycle.handler(id, true))
        .staleThreshold(STALE)
        .heartbeatInterval(Duration.ofMillis(300))
        .leaseTtl(Duration.ofSeconds(2))
        .pollInterval(Duration.ofMillis(200));
  }

  private WorkerProcess startDoomedWorker(String id) {
    return processes.start(
        id, db.jdbcUrl(), "concurrency=5", "staleMs=3000", "heartbeatMs=300", "leaseTtlMs=2000");
  }

  private static long runningOn(String workerId) {
    return count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running' AND locked_by = '"
        + workerId + "'");
  }

  /**
   * Handlers of {@code workerId} that started. Claimed is not started: a claimed job still in the
   * worker's buffer when a heartbeat passes is marked {@code prefetched}, and rescue gives such a job
   * back without counting an attempt, so a test about started attempts must wait for the starts.
   */
  private static long startedOn(String workerId) {
    return count("SELECT count(*) FROM starts WHERE worker = '" + workerId + "'");
  }

  @Test
  void jobsOfAKilledWorkerAreRescuedAndSucceedExactlyOnceOnAnotherWorker() {
    WorkerProcess doomed = startDoomedWorker("crash-doomed");
    List<UUID> ids = client.enqueueAll(
        Lifecycle.WORK,
        Collections.nCopies(5, Work.blockingFirstAttempt(Duration.ofSeconds(60))),
        EnqueueOptions.builder().maxAttempts(3).build());
    await().atMost(LONG).until(() -> runningOn("crash-doomed") == 5);
    await().atMost(LONG).until(() -> startedOn("crash-doomed") == 5);
    // While it lives, its heartbeat renews its jobs' heartbeat_at.
    await()
        .atMost(LONG)
        .until(() -> count(
                "SELECT count(*) FROM pgjobs.jobs WHERE locked_by = 'crash-doomed' AND heartbeat_at > attempted_at + interval '600 milliseconds'")
            == 5);
    start(rescuer("crash-rescuer"));

    Instant killedAt = Instant.now();
    doomed.kill();

    for (UUID id : ids) {
      awaitState(id, JobState.SUCCEEDED, LONG);
    }
    assertThat(count("pgjobs.jobs")).as("nothing left running or waiting").isZero();
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'"))
        .isEqualTo(5);
    for (UUID id : ids) {
      Job job = job(id);
      assertThat(job.attempts())
          .as("attempt 1 died with its worker, attempt 2 succeeded")
          .isEqualTo(2);
      assertThat(job.lockedBy()).isEqualTo("crash-rescuer");
      assertThat(job.errors()).singleElement().satisfies(e -> {
        assertThat(e.kind()).isEqualTo("worker_lost");
        assertThat(e.attempt()).isEqualTo(1);
        assertThat(e.worker()).isEqualTo("crash-doomed");
        assertThat(e.at())
            .as("rescued only after the stale threshold")
            .isAfter(killedAt.plus(STALE).minusSeconds(1));
      });
    }
    // The interrupted attempts never reached their effect; the rescued ones did, once each.
    assertThat(count("effects")).isEqualTo(5);
    assertThat(
            count(
                "SELECT count(DISTINCT job_id) FROM effects WHERE attempt = 2 AND worker = 'crash-rescuer'"))
        .isEqualTo(5);
    await("the dead worker's registration is removed")
        .atMost(LONG)
        .until(() -> count("SELECT count(*) FROM pgjobs.workers WHERE id = 'crash-doomed'") == 0);
    assertThat(count("SELECT count(*) FROM pgjobs.workers WHERE id = 'crash-rescuer'"))
        .isEqualTo(1);
  }

  @Test
  void jobsOfAWorkerKilledWithDefaultSettingsAreBackInTheQueueWithinThirtySeconds() {
    // No timing overrides anywhere: stale threshold 5 min, heartbeat 5 s, dead-worker threshold 20
    // s.
    WorkerProcess doomed =
        processes.start("dead-defaults", db.jdbcUrl(), "concurrency=3", "timings=defaults");
    List<UUID> ids = client.enqueueAll(
        Lifecycle.WORK,
        Collections.nCopies(3, Work.blockingFirstAttempt(Duration.ofSeconds(120))),
        EnqueueOptions.builder().maxAttempts(3).build());
    await().atMost(LONG).until(() -> startedOn("dead-defaults") == 3);
    start(worker()
        .workerId("rescuer-defaults")
        .register(Lifecycle.WORK, Lifecycle.handler("rescuer-defaults", true)));

    long killedAt = System.nanoTime();
    doomed.kill();

    await("the dead worker's jobs are back in the queue")
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> runningOn("dead-defaults") == 0);
    Duration back = Duration.ofNanos(System.nanoTime() - killedAt);
    System.out.printf(
        "kill -9 with default settings: jobs back in the queue %.1f s after the kill%n",
        back.toMillis() / 1e3);
    for (UUID id : ids) {
      Job job = awaitState(id, JobState.SUCCEEDED, LONG);
      assertThat(job.attempts()).isEqualTo(2);
      assertThat(job.errors()).singleElement().satisfies(e -> {
        assertThat(e.kind()).isEqualTo("worker_lost");
        assertThat(e.worker()).isEqualTo("dead-defaults");
      });
    }
  }

  @Test
  void jobOfAKilledWorkerOnItsLastAttemptIsFailedAsWorkerLost() {
    WorkerProcess doomed = startDoomedWorker("crash-doomed-last");
    Work blocking = Work.blockingFirstAttempt(Duration.ofSeconds(60));
    UUID last = client
        .enqueue(
            Lifecycle.WORK, blocking, EnqueueOptions.builder().maxAttempts(1).build())
        .job()
        .id();
    UUID notLast = client
        .enqueue(
            Lifecycle.WORK, blocking, EnqueueOptions.builder().maxAttempts(2).build())
        .job()
        .id();
    await().atMost(LONG).until(() -> runningOn("crash-doomed-last") == 2);
    await().atMost(LONG).until(() -> startedOn("crash-doomed-last") == 2);
    start(rescuer("crash-rescuer-last"));

    doomed.kill();

    Job failed = awaitState(last, JobState.FAILED, LONG);
    assertThat(failed.attempts()).isEqualTo(1);
    assertThat(failed.errors()).extracting(JobError::kind).containsExactly("worker_lost");
    Job succeeded = awaitState(notLast, JobState.SUCCEEDED, LONG);
    assertThat(succeeded.attempts()).isEqualTo(2);
    assertThat(succeeded.errors()).extracting(JobError::kind).containsExactly("worker_lost");
    assertThat(count("SELECT count(*) FROM effects WHERE job_id = '" + last + "'"))
        .isZero();
    assertThat(count("pgjobs.jobs")).isZero();
  }

  @Test
  void longJobOfALiveWorkerIsKeptAliveByHeartbeatsAndNotRescued() {
    // The worker leads maintenance itself, with a 3 s stale threshold; its job runs 8 s.
    JobWorker worker = start(worker()
        .workerId("crash-alive")
        .register(Lifecycle.WORK, Lifecycle.handler("crash-alive", true))
        .staleThreshold(Duration.ofSeconds(3))
        .heartbeatInterval(Duration.ofMillis(200))
        .leaseTtl(Duration.ofSeconds(2)));
    // Registered before start() returns, with what it serves.
    assertThat(count("SELECT count(*) FROM pgjobs.workers WHERE id = 'crash-alive' AND pid = "
            + ProcessHandle.current().pid()
            + " AND job_types @> '[\"lifecycle_work\"]' AND queues ->> 'default' = '10'"))
        .isEqualTo(1);
    await().atMost(LONG).until(worker::isMaintenanceLeader);
    UUID id = client
        .enqueue(Lifecycle.WORK, Work.blockingFirstAttempt(Duration.ofSeconds(8)))
        .job()
        .id();
    awaitState(id, JobState.RUNNING, LONG);
    long beatsBefore = worker.heartbeats();

    await("heartbeat_at renewed well past the stale threshold while the job runs")
        .atMost(LONG)
        .until(() -> count("SELECT count(*) FROM pgjobs.jobs WHERE id = '" + id
                + "' AND state = 'running' AND heartbeat_at > attempted_at + interval '4 seconds'")
            == 1);
    assertThat(worker.heartbeats()).isGreaterThan(beatsBefore);
    assertThat(count("SELECT count(*) FROM pgjobs.workers WHERE id = 'crash-alive'"
            + " AND last_heartbeat > started_at + interval '2 seconds'"))
        .as("the worker's own heartbeat")
        .isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pgjobs.workers WHERE id = 'crash-alive'"
            + " AND last_heartbeat > now() - interval '2 seconds'"))
        .isEqualTo(1);

    Job done = awaitState(id, JobState.SUCCEEDED, LONG);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.errors()).isEmpty();
    assertThat(count("effects")).isEqualTo(1);

    worker.close();
    assertThat(count("SELECT count(*) FROM pgjobs.workers WHERE id = 'crash-alive'"))
        .as("a cleanly closed worker removes its registration")
        .isZero();
  }
}
