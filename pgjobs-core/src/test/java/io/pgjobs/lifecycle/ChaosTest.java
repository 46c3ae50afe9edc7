package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.lifecycle.Lifecycle.Work;
import io.pgjobs.lifecycle.WorkerProcesses.WorkerProcess;
import io.pgjobs.testkit.Exclusive;
import io.pgjobs.testkit.Tags;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * 20,000 jobs on 3 worker processes, one of which is killed with {@code kill -9} and restarted every few
 * seconds (every tenth of the run, at least 2 s apart), the maintenance leader among them. Beside them run
 * a process whose handlers hold a row lock on their own job while they work (heartbeats and successes
 * must skip such rows, not wait), and a process whose handlers ignore interrupts and take 2 s, which is
 * stopped gracefully with no grace and restarted at every kill (its stuck handlers are let go and their
 * jobs released). At the end every job has succeeded, ran at least once and at most once per attempt,
 * and nothing is stuck.
 */
@Tag(Tags.PROCESS)
@Tag(Tags.SOAK)
@Exclusive
class ChaosTest extends LifecycleTestBase {
  private static final int JOBS = 20_000;
  private static final int WORKERS = 3;
  private static final int KILLS = 8;
  private static final String[] SETTINGS = {
    "concurrency=8", "pool=12", "staleMs=2500", "heartbeatMs=250", "leaseTtlMs=2000", "pollMs=200"
  };

  private static final String[] LOCKER = {
    "concurrency=4",
    "pool=12",
    "staleMs=2500",
    "heartbeatMs=250",
    "leaseTtlMs=2000",
    "pollMs=200",
    "handler=locking"
  };
  private static final String[] STUBBORN = {
    "concurrency=4",
    "pool=10",
    "staleMs=2500",
    "heartbeatMs=250",
    "leaseTtlMs=2000",
    "pollMs=200",
    "handler=stubborn",
    "stubbornMs=2000",
    "graceMs=0",
    "stuckGraceMs=300"
  };

  private static long finished() {
    return count("pgjobs.finished_jobs");
  }

  /**
   * Waits (up to 15 s) until the stubborn process runs a job it started under a second ago, so that its
   * handler still has more than the stuck grace to go when the process is stopped: a stop that came before
   * the process (a fresh JVM) had claimed anything, or just as its batch of 2-second jobs ended, would let
   * nothing go. Gives up quietly when the queue runs dry first (the end of the run); the run's assertion
   * that some jobs were let go and released says whether it ever happened.
   */
  private static void awaitMidJob(WorkerProcess stubborn) {
    String sql = "SELECT count(*) FROM pgjobs.jobs WHERE locked_by = '" + stubborn.id()
        + "' AND state = 'running'"
        + " AND NOT prefetched AND attempted_at > now() - interval '1 second'";
    try {
      await("the stubborn process " + stubborn.id() + " in the middle of a job")
          .pollInterval(Duration.ofMillis(50))
          .atMost(Duration.ofSeconds(15))
          .until(() -> count(sql) > 0 || finished() >= JOBS);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      System.out.printf(
          "the stubborn process %s ran no job within 15 s; stopping it anyway%n", stubborn.id());
    }
  }

  @Test
  void everyJobSucceedsAndRunsAtMostOncePerAttemptWhileWorkersAreKilledAndRestarted() {
    // Each attempt takes 15 ms, so a kill always finds jobs in flight and the run lasts long enough
    // for the kills to spread over it.
    List<UUID> ids = client.enqueueAll(
        Lifecycle.WORK,
        Collections.nCopies(JOBS, new Work(15, Integer.MAX_VALUE)),
        EnqueueOptions.DEFAULTS);
    assertThat(Lifecycle.WORK.maxAttempts())
        .as("enough attempts that repeated kills cannot exhaust a job")
        .isEqualTo(25);
    long startedAt = System.nanoTime();
    WorkerProcess[] workers = new WorkerProcess[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
      workers[i] = processes.start("chaos-w" + i + "-0", db.jdbcUrl(), SETTINGS);
    }
    WorkerProcess locker = processes.start("chaos-locker", db.jdbcUrl(), LOCKER);
    WorkerProcess stubborn = processes.start("chaos-stubborn-0", db.jdbcUrl(), STUBBORN);

    int kills = 0;
    for (int kill = 1; kill <= KILLS; kill++) {
      long target = (long) JOBS * kill / (KILLS + 2);
      await("at least " + target + " jobs finished before kill " + kill)
          .pollDelay(Duration.ofSeconds(2))
          .pollInterval(Duration.ofMillis(100))
          .atMost(Duration.ofSeconds(120))
          .until(() -> finished() >= target);
      if (finished() >= JOBS) {
        break; // the run is over: killing now would prove nothing
      }
      int victim = kill % WORKERS;
      for (WorkerProcess w : workers) {
        assertThat(w.isAlive())
            .as("worker %s is alive (nobody else kills it)", w.id())
            .isTrue();
      }
      workers[victim].kill();
      kills++;
      System.out.printf(
          "kill %d: %s killed with %d jobs finished, %.1f s into the run%n",
          kill, workers[victim].id(), finished(), (System.nanoTime() - startedAt) / 1e9);
      workers[victim] = processes.start("chaos-w" + victim + "-" + kill, db.jdbcUrl(), SETTINGS);
      awaitMidJob(stubborn);
      stubborn.terminate(); // graceful, no grace: its handlers ignore the interrupt and are let go
      stubborn = processes.start("chaos-stubborn-" + kill, db.jdbcUrl(), STUBBORN);
    }

    await("all " + JOBS + " jobs finished")
        .pollInterval(Duration.ofMillis(250))
        .atMost(Duration.ofSeconds(180))
        .until(() -> finished() == JOBS);
    double seconds = (System.nanoTime() - startedAt) / 1e9;
    assertThat(kills).as("kills during the run").isGreaterThanOrEqualTo(KILLS / 2);

    assertCompleteRun(PgJobsTestBase::count, JOBS);
    assertThat(queryString("SELECT count(*) FROM pgjobs.finished_jobs WHERE id = ANY(?)", (Object)
            ids.toArray(UUID[]::new)))
        .as("the jobs enqueued")
        .isEqualTo(String.valueOf(JOBS));
    long rescued = count(
        "SELECT count(*) FROM pgjobs.finished_jobs WHERE errors @> '[{\"kind\": \"worker_lost\"}]'");
    assertThat(rescued).as("the kills did hit running jobs, which were rescued").isPositive();
    for (WorkerProcess w : workers) {
      assertThat(w.isAlive()).as("worker %s is alive", w.id()).isTrue();
    }
    assertThat(locker.isAlive()).isTrue();
    assertThat(stubborn.isAlive()).isTrue();
    assertThat(count("SELECT count(*) FROM effects WHERE worker = 'chaos-locker'"))
        .as("jobs run under a row lock")
        .isPositive();
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs, jsonb_array_elements(errors) AS e"
            + " WHERE e->>'kind' = 'shutdown' AND e->>'worker' LIKE 'chaos-stubborn-%'"))
        .as("jobs of stubborn handlers let go at shutdown and released")
        .isPositive();
    await("only the live workers stay registered")
        .atMost(Duration.ofSeconds(30))
        .until(() -> count("SELECT count(*) FROM pgjobs.workers") == WORKERS + 2);

    System.out.printf(
        "chaos: %d jobs, %d kills, %.1f s (%.0f jobs/s); %d rescued, %d effects, %d jobs ran more than once,"
            + " max attempts %d%n",
        JOBS,
        kills,
        seconds,
        JOBS / seconds,
        rescued,
        count("effects"),
        count("SELECT count(*) FROM pgjobs.finished_jobs WHERE attempts > 1"),
        count("SELECT max(attempts) FROM pgjobs.finished_jobs"));
  }
}
