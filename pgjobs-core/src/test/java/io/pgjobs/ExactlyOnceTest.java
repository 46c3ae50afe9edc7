package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.testkit.JvmProcess;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Acceptance 1: with many workers competing for one queue, every job runs exactly once. The handler's
 * side effect goes to a table without a unique constraint, so a job that ran twice would show up as two
 * rows, and a job that never ran as none.
 */
@Tag(Tags.PROCESS)
class ExactlyOnceTest extends PgJobsTestBase {
  private static final int JOBS = 5_000;
  private static final Duration ALL_DONE_DEADLINE = Duration.ofMinutes(4);

  private final List<JvmProcess> processes = new ArrayList<>();

  @BeforeEach
  void createEffectsTable() {
    db.execute("DROP TABLE IF EXISTS effects", "CREATE TABLE effects (job_id uuid, worker text)");
  }

  @AfterEach
  void killProcesses() {
    processes.forEach(JvmProcess::close);
    processes.clear();
  }

  @Test
  void everyJobRunsExactlyOnceAcrossEightWorkerRuntimes() {
    List<JobWorker> workers = new ArrayList<>();
    List<HikariDataSource> pools = new ArrayList<>();
    try {
      for (int i = 0; i < 8; i++) {
        HikariDataSource pool = db.newDataSource(5);
        pools.add(pool);
        JobWorker worker = JobWorker.builder(pool)
            .workerId("in-jvm-worker-" + i)
            .queue(JobType.DEFAULT_QUEUE, 10)
            .shutdownGrace(Duration.ofSeconds(10))
            .register(NUMBERED, (ctx, payload) -> {
              WorkerProcessMain.recordEffect(ctx);
              return null;
            })
            .build();
        workers.add(worker);
        worker.start();
      }

      List<UUID> ids = client.enqueueAll(NUMBERED, payloads(JOBS), EnqueueOptions.DEFAULTS);
      assertThat(new HashSet<>(ids)).hasSize(JOBS);

      await("all " + JOBS + " jobs succeeded")
          .atMost(ALL_DONE_DEADLINE)
          .pollInterval(Duration.ofMillis(200))
          .until(() -> succeededCount() == JOBS);

      // Closing lets any handler still in flight (a duplicate run, if there were one) finish and
      // write.
      workers.forEach(JobWorker::close);
      assertThat(workers).allSatisfy(w -> assertThat(w.runningJobs()).isZero());

      assertEveryJobRanExactlyOnce(ids, () -> "");
      assertThat(distinctEffectWorkers())
          .as("worker ids that ran jobs")
          .hasSizeGreaterThan(1)
          .allSatisfy(id -> assertThat(id).startsWith("in-jvm-worker-"));
    } finally {
      workers.forEach(JobWorker::close);
      pools.forEach(HikariDataSource::close);
    }
  }

  @Test
  void everyJobRunsExactlyOnceAcrossThreeWorkerProcesses() throws Exception {
    for (int i = 0; i < 3; i++) {
      processes.add(JvmProcess.start(
          "exactly-once-worker-" + i,
          WorkerProcessMain.class,
          List.of(db.jdbcUrl(), "process-worker-" + i, "10", "13"),
          Map.of()));
    }
    awaitOrExplain(
        "all worker processes ready",
        Duration.ofMinutes(2),
        () -> processes.stream().allMatch(p -> p.output().contains(WorkerProcessMain.READY)));

    List<UUID> ids = client.enqueueAll(NUMBERED, payloads(JOBS), EnqueueOptions.DEFAULTS);
    assertThat(new HashSet<>(ids)).hasSize(JOBS);

    awaitOrExplain(
        "all " + JOBS + " jobs succeeded", ALL_DONE_DEADLINE, () -> succeededCount() == JOBS);

    // SIGTERM: the shutdown hook closes each worker, so a handler still in flight finishes first.
    processes.forEach(JvmProcess::terminate);
    for (JvmProcess process : processes) {
      assertThat(process.process().waitFor(60, TimeUnit.SECONDS))
          .as("process %s exits after SIGTERM%n%s", process.pid(), outputs())
          .isTrue();
    }

    assertEveryJobRanExactlyOnce(ids, this::outputs);
    assertThat(distinctEffectWorkers())
        .as("worker processes that ran jobs%n%s", outputs())
        .hasSizeGreaterThan(1)
        .allSatisfy(id -> assertThat(id).startsWith("process-worker-"));
  }

  // ---------------------------------------------------------------- helpers

  private static List<Numbered> payloads(int count) {
    return IntStream.range(0, count).mapToObj(Numbered::new).toList();
  }

  private static long succeededCount() {
    return count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'");
  }

  private static void assertEveryJobRanExactlyOnce(List<UUID> ids, Supplier<String> diagnostics) {
    String duplicates = queryText(
        "SELECT coalesce(string_agg(job_id || ' ran on ' || workers, '; '), 'none') FROM ("
            + " SELECT job_id, string_agg(worker, ',') AS workers FROM effects"
            + " GROUP BY job_id HAVING count(*) > 1 LIMIT 20) d");
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'"))
        .as("succeeded jobs%n%s", diagnostics.get())
        .isEqualTo(JOBS);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs"))
        .as("finished jobs in any state%n%s", diagnostics.get())
        .isEqualTo(JOBS);
    assertThat(count("pgjobs.jobs"))
        .as("jobs left in the hot table%n%s", diagnostics.get())
        .isZero();
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE id = ANY('" + uuidArray(ids)
            + "'::uuid[])"))
        .as("finished jobs that are the enqueued ones")
        .isEqualTo(JOBS);
    assertThat(count("effects"))
        .as("handler runs (side-effect rows); duplicates: %s%n%s", duplicates, diagnostics.get())
        .isEqualTo(JOBS);
    assertThat(count("SELECT count(DISTINCT job_id) FROM effects"))
        .as("jobs with a side effect%n%s", diagnostics.get())
        .isEqualTo(JOBS);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs f"
            + " WHERE NOT EXISTS (SELECT 1 FROM effects e WHERE e.job_id = f.id)"))
        .as("succeeded jobs whose handler left no side effect")
        .isZero();
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE attempts <> 1"))
        .as("finished jobs that needed more than one attempt")
        .isZero();
    assertThat(count("SELECT count(*) FROM effects e JOIN pgjobs.finished_jobs f ON f.id = e.job_id"
            + " WHERE e.worker IS DISTINCT FROM f.locked_by"))
        .as("side effects written by another worker than the one that completed the job")
        .isZero();
  }

  private static List<String> distinctEffectWorkers() {
    String csv = queryText("SELECT string_agg(DISTINCT worker, ',') FROM effects");
    return csv == null ? List.of() : List.of(csv.split(","));
  }

  private static String uuidArray(List<UUID> ids) {
    StringBuilder text = new StringBuilder("{");
    for (int i = 0; i < ids.size(); i++) {
      text.append(i == 0 ? "" : ",").append(ids.get(i));
    }
    return text.append('}').toString();
  }

  /** Awaits {@code condition}, failing at once (with every process's output) if a worker process dies. */
  private void awaitOrExplain(
      String what, Duration deadline, java.util.concurrent.Callable<Boolean> condition) {
    try {
      await(what)
          .atMost(deadline)
          .pollInterval(Duration.ofMillis(200))
          .failFast(
              "a worker process died",
              () -> processes.stream().anyMatch(p -> !p.process().isAlive()))
          .until(condition);
    } catch (ConditionTimeoutException | TerminalFailureException e) {
      throw new AssertionError(e.getMessage() + "\n" + outputs(), e);
    }
  }

  private String outputs() {
    StringBuilder text = new StringBuilder();
    for (JvmProcess process : processes) {
      String output = process.output();
      if (output.length() > 6_000) {
        output = "...\n" + output.substring(output.length() - 6_000);
      }
      text.append("----- worker process ")
          .append(process.pid())
          .append(
              process.process().isAlive()
                  ? " (alive)"
                  : " (exited " + process.process().exitValue() + ")")
          .append(" -----\n")
          .append(output)
          .append('\n');
    }
    return text.toString();
  }
}
