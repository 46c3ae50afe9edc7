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
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Graceful shutdown ({@code close()}, or SIGTERM with {@code closeOnShutdown()}): stop claiming, let
 * running jobs finish within the grace period, then interrupt the rest and release them straight back to
 * the queue (never failed because of the shutdown), and deregister.
 */
@Tag(Tags.PROCESS)
class GracefulShutdownTest extends LifecycleTestBase {
  private static final Duration LONG = Duration.ofSeconds(60);
  private static final Work THIRTY_SECONDS = Work.blockingFirstAttempt(Duration.ofSeconds(30));

  private static UUID enqueue(Work work, int maxAttempts) {
    return client
        .enqueue(
            Lifecycle.WORK,
            work,
            EnqueueOptions.builder().maxAttempts(maxAttempts).build())
        .job()
        .id();
  }

  /**
   * Waits until the job's handler has begun (its row in {@code starts}): the state {@code running} is
   * written when the job is claimed, which may be before a lane takes it from the prefetch buffer, and
   * a close in between gives the job back without running it.
   */
  private static void awaitHandlerStarted(UUID id) {
    awaitState(id, JobState.RUNNING, LONG);
    org.awaitility.Awaitility.await()
        .atMost(LONG)
        .pollInterval(Duration.ofMillis(10))
        .until(() -> count("SELECT count(*) FROM starts WHERE job_id = '" + id + "'") > 0);
  }

  private static long workersNamed(String id) {
    return count("SELECT count(*) FROM pgjobs.workers WHERE id = '" + id + "'");
  }

  @Test
  void sigtermEndsTheProcessAfterTheGraceAndReleasesItsJobsToTheQueueForAnotherWorker()
      throws Exception {
    // Stale threshold 60 s: whatever puts the jobs back in the queue below, it is not rescue.
    WorkerProcess doomed = processes.start(
        "shutdown-sigterm", db.jdbcUrl(), "concurrency=3", "graceMs=2000", "staleMs=60000");
    List<UUID> ids =
        List.of(enqueue(THIRTY_SECONDS, 3), enqueue(THIRTY_SECONDS, 3), enqueue(THIRTY_SECONDS, 1));
    UUID onLastAttempt = ids.get(2);
    await()
        .atMost(LONG)
        .until(() -> count(
                "SELECT count(*) FROM pgjobs.jobs WHERE state = 'running' AND locked_by = 'shutdown-sigterm'")
            == 3);
    // Claimed is not yet started: wait until the three handlers run (and block).
    await()
        .atMost(LONG)
        .until(() -> count("SELECT count(*) FROM starts WHERE worker = 'shutdown-sigterm'") == 3);
    assertThat(workersNamed("shutdown-sigterm")).isEqualTo(1);

    long terminatedAt = System.nanoTime();
    doomed.terminate();
    boolean exited = WorkerProcesses.awaitExit(doomed, Duration.ofSeconds(15));
    Duration took = Duration.ofNanos(System.nanoTime() - terminatedAt);

    System.out.printf("SIGTERM: worker process exited after %d ms (grace 2 s)%n", took.toMillis());
    assertThat(exited).as("worker process exited within 15 s of SIGTERM").isTrue();
    assertThat(took)
        .as("it waited for the 2 s grace first")
        .isGreaterThanOrEqualTo(Duration.ofMillis(1_900));
    // At once, with no rescue involved: every interrupted job is waiting again, due now, unlocked.
    assertThat(count("pgjobs.finished_jobs"))
        .as("nothing failed because of the shutdown")
        .isZero();
    assertThat(
            count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'retrying' AND locked_by IS NULL"
                + " AND heartbeat_at IS NULL AND run_at <= now()"))
        .isEqualTo(3);
    for (UUID id : ids) {
      Job job = job(id);
      assertThat(job.state()).isEqualTo(JobState.RETRYING);
      assertThat(job.lockedBy()).isNull();
      assertThat(job.errors()).singleElement().satisfies(e -> {
        assertThat(e.kind()).isEqualTo("shutdown");
        assertThat(e.worker()).isEqualTo("shutdown-sigterm");
      });
      assertThat(job.attempts())
          .as("the interrupted attempt counts, unless it was the last one")
          .isEqualTo(id.equals(onLastAttempt) ? 0 : 1);
    }
    assertThat(workersNamed("shutdown-sigterm")).as("deregistered").isZero();
    assertThat(count("SELECT count(*) FROM pgjobs.leases WHERE holder = 'shutdown-sigterm'"))
        .as("maintenance lease given up")
        .isZero();
    assertThat(count("effects")).isZero();

    // Another worker, whose handler finishes at once, runs them to completion.
    start(worker()
        .workerId("shutdown-successor")
        .register(Lifecycle.WORK, Lifecycle.handler("shutdown-successor", false)));
    for (UUID id : ids) {
      Job done = awaitState(id, JobState.SUCCEEDED, LONG);
      assertThat(done.attempts()).isEqualTo(id.equals(onLastAttempt) ? 1 : 2);
      assertThat(done.errors()).extracting(JobError::kind).containsExactly("shutdown");
    }
    assertThat(count("SELECT count(*) FROM effects WHERE worker = 'shutdown-successor'"))
        .isEqualTo(3);
    assertThat(count("effects")).isEqualTo(3);
  }

  @Test
  void closeLetsAJobThatFinishesWithinTheGraceSucceedAndClaimsNothingMore() {
    JobWorker worker = start(worker()
        .workerId("shutdown-in-grace")
        .register(Lifecycle.WORK, Lifecycle.handler("shutdown-in-grace", true))
        .queue("default", 1)
        .shutdownGrace(Duration.ofSeconds(15)));
    UUID running = enqueue(Work.blockingFirstAttempt(Duration.ofSeconds(5)), 3);
    awaitHandlerStarted(running);
    UUID waiting = enqueue(Work.QUICK, 3); // the worker's one slot is taken: this one waits

    long closing = System.nanoTime();
    worker.close();
    Duration took = Duration.ofNanos(System.nanoTime() - closing);

    assertThat(took)
        .as("close returns once the running job is done, not after the whole grace")
        .isLessThan(Duration.ofSeconds(13));
    Job done = job(running);
    assertThat(done.state()).isEqualTo(JobState.SUCCEEDED);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.errors()).isEmpty();
    Job notClaimed = job(waiting);
    assertThat(notClaimed.state())
        .as("no claims after close began, though a slot came free")
        .isEqualTo(JobState.QUEUED);
    assertThat(notClaimed.attempts()).isZero();
    assertThat(workersNamed("shutdown-in-grace")).isZero();
  }

  @Test
  void closeInterruptsAJobThatOutlastsTheGraceAndReleasesIt() {
    JobWorker worker = start(worker()
        .workerId("shutdown-past-grace")
        .register(Lifecycle.WORK, Lifecycle.handler("shutdown-past-grace", true))
        .shutdownGrace(Duration.ofSeconds(1)));
    UUID id = enqueue(THIRTY_SECONDS, 3);
    awaitHandlerStarted(id);

    long closing = System.nanoTime();
    worker.close();
    Duration took = Duration.ofNanos(System.nanoTime() - closing);

    assertThat(took).isBetween(Duration.ofMillis(900), Duration.ofSeconds(10));
    Job released = job(id);
    assertThat(released.state()).isEqualTo(JobState.RETRYING);
    assertThat(released.lockedBy()).isNull();
    assertThat(released.attempts()).isEqualTo(1);
    assertThat(released.errors()).extracting(JobError::kind).containsExactly("shutdown");
    assertThat(
            count("SELECT count(*) FROM pgjobs.jobs WHERE id = '" + id + "' AND run_at <= now()"))
        .isEqualTo(1);
    assertThat(workersNamed("shutdown-past-grace")).isZero();
  }
}
