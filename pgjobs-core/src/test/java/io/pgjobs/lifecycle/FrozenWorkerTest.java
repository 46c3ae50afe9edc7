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
import java.io.IOException;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A worker process frozen ({@code SIGSTOP}: a paused VM, a stopped container, a debugger) past the
 * dead-worker threshold, while its handler runs. It cannot fence itself, frozen as it is; maintenance on
 * another worker presumes it dead, rescues its job, and the other worker runs it to success. When the
 * frozen worker thaws ({@code SIGCONT}) its handler would simply go on, beside a job that has already
 * run again: its writes are fenced off by the claim token, but its side effects are not. Its first
 * heartbeat finds the job no longer its claim and stops the handler before it reaches its effect.
 */
@Tag(Tags.PROCESS)
class FrozenWorkerTest extends LifecycleTestBase {
  private static final Duration LONG =
      Duration.ofSeconds(120); // child JVMs starting on a loaded machine

  private static void signal(WorkerProcess process, String signal)
      throws IOException, InterruptedException {
    Process kill =
        new ProcessBuilder("kill", "-" + signal, Long.toString(process.jvm().pid())).start();
    assertThat(kill.waitFor()).as("kill -" + signal).isZero();
  }

  @Test
  void aWorkerThawedAfterItsJobWasRescuedStopsTheHandlerBeforeItsSideEffect() throws Exception {
    WorkerProcess frozen = processes.start(
        "frozen",
        db.jdbcUrl(),
        "concurrency=1",
        "maintenance=false",
        "heartbeatMs=300",
        "deadAfterMs=2000",
        "staleMs=3000");
    // Attempt 1 blocks for a minute before its effect; attempt 2 is quick.
    UUID id = client
        .enqueue(
            Lifecycle.WORK,
            Work.blockingFirstAttempt(Duration.ofMinutes(1)),
            EnqueueOptions.builder().maxAttempts(3).build())
        .job()
        .id();
    await()
        .atMost(LONG)
        .until(() -> count("SELECT count(*) FROM starts WHERE worker = 'frozen'") == 1);

    signal(frozen, "STOP");
    try {
      start(worker()
          .workerId("rescuer")
          .register(Lifecycle.WORK, Lifecycle.handler("rescuer", true))
          .workerDeadAfter(Duration.ofSeconds(2))
          .staleThreshold(Duration.ofSeconds(3))
          .heartbeatInterval(Duration.ofMillis(300))
          .leaseTtl(Duration.ofSeconds(1))
          .pollInterval(Duration.ofMillis(100)));
      Job done = awaitState(id, JobState.SUCCEEDED, LONG);
      assertThat(done.attempts()).isEqualTo(2);
      assertThat(done.lockedBy()).isEqualTo("rescuer");
      assertThat(done.errors()).singleElement().satisfies(e -> {
        assertThat(e.kind()).isEqualTo("worker_lost");
        assertThat(e.worker()).isEqualTo("frozen");
      });
    } finally {
      signal(frozen, "CONT");
    }

    // Thawed, its handler still has most of its minute to go: the first heartbeat stops it.
    await("the thawed worker stops the handler of the job it no longer holds")
        .atMost(LONG)
        .until(() -> frozen.output().contains("is no longer this worker's claim"));
    await("the thawed worker lets the job go")
        .atMost(LONG)
        .until(() -> frozen.output().contains("was no longer this worker's claim"));
    assertThat(count("SELECT count(*) FROM effects WHERE worker = 'frozen'"))
        .as("side effects of the frozen worker's run")
        .isZero();
    assertThat(count("SELECT count(*) FROM effects WHERE worker = 'rescuer'")).isEqualTo(1);
    // Nothing it wrote changed the job.
    Job after = job(id);
    assertThat(after.state()).isEqualTo(JobState.SUCCEEDED);
    assertThat(after.attempts()).isEqualTo(2);
    assertThat(after.errors()).extracting(JobError::kind).containsExactly("worker_lost");
  }
}
