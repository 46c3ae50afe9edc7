package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.lifecycle.WorkerProcesses.WorkerProcess;
import io.pgjobs.lifecycle.WorkflowWorkerMain.Order;
import io.pgjobs.testkit.Tags;
import io.pgjobs.workflow.WorkflowStep;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 30, acceptance 1: a three-step workflow with compensations ({@link WorkflowWorkerMain}) run by two
 * worker JVMs of one lane each, while the test kills with -9 a worker in the middle of step two (several
 * rounds) and in the middle of the compensation of step two, each time starting a new worker. From the
 * execution log the steps write (start and end of every action, flushed at once) and the database:
 *
 * <ul>
 *   <li>step one never runs again once it has ended, and every run that should succeed succeeds;
 *   <li>a run whose step three fails runs the compensation of step two, then that of step one, each to
 *       its end exactly once, also when a kill cut the compensation of step two short (it runs again
 *       after the rescue: a cut action is at-least-once, and the run's {@code attempts} show it);
 *   <li>every run ends in the state it should, with its steps recorded as done or compensated.
 * </ul>
 */
@Tag(Tags.PROCESS)
class WorkflowChaosTest extends LifecycleTestBase {
  private static final int RUNS = 24;
  private static final int KILLS_IN_STEP_TWO = 3;
  private static final int KILLS_IN_COMPENSATION = 2;

  /** One log line. */
  record Line(boolean start, UUID run, String what, long micros, String process) {}

  @Test
  void stepsRunOnceAndCompensationsRunOnceInReverseOrderWhileWorkersAreKilled(@TempDir Path logs)
      throws Exception {
    Map<UUID, Boolean> fails = new HashMap<>();
    for (int i = 0; i < RUNS; i++) {
      boolean failAtThree = i % 2 == 1;
      UUID id = client
          .enqueue(WorkflowWorkerMain.FLOW.jobType(), new Order(i + 1, failAtThree))
          .job()
          .id();
      fails.put(id, failAtThree);
    }
    WorkerProcess[] workers = {start(logs, "wf-w0"), start(logs, "wf-w1")};
    int started = 2;
    Map<String, Integer> cutBy = new HashMap<>(); // "run what" cut short by a kill
    int killsInTwo = 0;
    int killsInUndo = 0;
    while ((killsInTwo < KILLS_IN_STEP_TWO || killsInUndo < KILLS_IN_COMPENSATION)
        && finished() < RUNS) {
      String wanted = killsInTwo < KILLS_IN_STEP_TWO ? "two" : "undo-two";
      // A worker whose one lane is in the middle of the action wanted (-2: every run ended first).
      int victim = await("a worker in the middle of " + wanted)
          .pollInterval(Duration.ofMillis(20))
          .atMost(Duration.ofSeconds(120))
          .until(() -> finished() >= RUNS ? -2 : busyWith(workers, logs, wanted), v -> v != -1);
      if (victim == -2) {
        break;
      }
      workers[victim].kill();
      workers[victim].jvm().process().waitFor();
      // What the kill cut: the last action of the victim's log, started and not ended (one lane).
      Line last = lastLine(logs, workers[victim].id());
      if (last != null && last.start()) {
        cutBy.merge(last.run() + " " + last.what(), 1, Integer::sum);
        if (last.what().equals("two")) {
          killsInTwo++;
        } else if (last.what().equals("undo-two")) {
          killsInUndo++;
        }
      }
      System.out.printf(
          "kill of %s cut %s; %d of %d runs ended%n", workers[victim].id(), last, finished(), RUNS);
      workers[victim] = start(logs, "wf-w" + started++);
    }
    await("all " + RUNS + " runs ended")
        .pollInterval(Duration.ofMillis(250))
        .atMost(Duration.ofSeconds(180))
        .until(() -> finished() == RUNS);

    assertThat(killsInTwo).as("kills in the middle of step two").isEqualTo(KILLS_IN_STEP_TWO);
    assertThat(killsInUndo)
        .as("kills in the middle of the compensation of step two")
        .isEqualTo(KILLS_IN_COMPENSATION);
    List<Line> lines = read(logs);
    for (Map.Entry<UUID, Boolean> e : fails.entrySet()) {
      UUID run = e.getKey();
      boolean failed = e.getValue();
      Job job = job(run);
      assertThat(job.state())
          .as("run %s (step three fails: %s)", run, failed)
          .isEqualTo(failed ? JobState.FAILED : JobState.SUCCEEDED);
      // Step one ended once and never started again after it ended: a resumed run returned its
      // record.
      assertThat(ends(lines, run, "one")).as("ends of step one of %s", run).isEqualTo(1);
      assertThat(starts(lines, run, "one"))
          .as("starts of step one of %s (each start beyond the first cut by a kill)", run)
          .isEqualTo(1 + cutBy.getOrDefault(run + " one", 0));
      int cutInTwo = cutBy.getOrDefault(run + " two", 0);
      int cutInUndo = cutBy.getOrDefault(run + " undo-two", 0);
      if (cutInTwo + cutInUndo > 0) {
        assertThat(job.attempts())
            .as("a run a kill cut short ran again, and its attempts say so")
            .isGreaterThan(1);
      }
      Map<String, String> steps = new HashMap<>();
      for (WorkflowStep s : client.workflowSteps(run)) {
        steps.put(s.name(), s.state());
      }
      if (!failed) {
        assertThat(ends(lines, run, "undo-two") + ends(lines, run, "undo-one"))
            .as("compensations of %s, which succeeded", run)
            .isZero();
        assertThat(steps).containsEntry("one", "done").containsEntry("three", "done");
        continue;
      }
      // Compensations: each ran to its end exactly once, step two's before step one's started.
      assertThat(ends(lines, run, "undo-two")).as("ends of undo-two of %s", run).isEqualTo(1);
      assertThat(ends(lines, run, "undo-one")).as("ends of undo-one of %s", run).isEqualTo(1);
      assertThat(starts(lines, run, "undo-two"))
          .as("starts of undo-two of %s (each beyond the first cut by a kill)", run)
          .isEqualTo(1 + cutInUndo);
      assertThat(starts(lines, run, "undo-one"))
          .isEqualTo(1 + cutBy.getOrDefault(run + " undo-one", 0));
      long undoTwoEnd = lines.stream()
          .filter(l -> !l.start() && l.run().equals(run) && l.what().equals("undo-two"))
          .mapToLong(Line::micros)
          .max()
          .orElseThrow();
      long undoOneStart = lines.stream()
          .filter(l -> l.start() && l.run().equals(run) && l.what().equals("undo-one"))
          .mapToLong(Line::micros)
          .min()
          .orElseThrow();
      assertThat(undoOneStart)
          .as("the compensation of step one of %s starts after that of step two ended", run)
          .isGreaterThan(undoTwoEnd);
      assertThat(steps)
          .as("recorded steps of %s", run)
          .containsEntry("one", "compensated")
          .containsEntry("two", "compensated")
          .doesNotContainKey("three");
    }
    System.out.printf(
        "%d runs, %d kills in step two and %d in its compensation, cut: %s%n",
        RUNS, killsInTwo, killsInUndo, cutBy);
  }

  @Test
  void aRunWhoseWorkerDiesDuringItsLastAttemptIsCompensatedByOneMoreExecutionAndFails(
      @TempDir Path logs) throws Exception {
    // A queue of its own: the other test's workers, if still running, serve only theirs.
    UUID run = client
        .enqueue(
            WorkflowWorkerMain.ONE_ATTEMPT.jobType(),
            new Order(7, false),
            io.pgjobs.EnqueueOptions.builder().queue(LAST_QUEUE).build())
        .job()
        .id();
    WorkerProcess[] workers = {start(logs, "last-w0", LAST_QUEUE)};
    await("the worker in the middle of step two (a minute long) of the run's only attempt")
        .pollInterval(Duration.ofMillis(100))
        .atMost(Duration.ofSeconds(120))
        .until(() -> busyWith(workers, logs, "two") == 0);
    workers[0].kill();
    workers[0].jvm().process().waitFor();
    start(logs, "last-w1", LAST_QUEUE);

    awaitState(run, JobState.FAILED, Duration.ofSeconds(60));
    List<Line> lines = read(logs);
    // Step one ended once and was not run again; its compensation ran to its end once, in the
    // execution rescue gave; step two, cut by the kill, never ended and was not compensated; step
    // three never started.
    assertThat(ends(lines, run, "one")).isEqualTo(1);
    assertThat(starts(lines, run, "one")).isEqualTo(1);
    assertThat(starts(lines, run, "two")).isEqualTo(1);
    assertThat(ends(lines, run, "two")).isZero();
    assertThat(starts(lines, run, "three")).isZero();
    assertThat(ends(lines, run, "undo-one")).isEqualTo(1);
    assertThat(starts(lines, run, "undo-two")).isZero();
    assertThat(lines.stream()
            .filter(l -> l.run().equals(run) && l.what().equals("undo-one"))
            .map(Line::process)
            .distinct()
            .toList())
        .containsExactly("last-w1");
    Map<String, String> steps = new HashMap<>();
    for (WorkflowStep step : client.workflowSteps(run)) {
      steps.put(step.name(), step.state());
    }
    assertThat(steps).containsEntry("one", "compensated").doesNotContainKeys("two", "three");
    Job job = job(run);
    assertThat(job.attempts())
        .as("the killed attempt and the rescue's execution")
        .isEqualTo(2);
    assertThat(job.maxAttempts()).isEqualTo(2);
    assertThat(job.errors()).hasSize(2);
    assertThat(job.errors().get(0).kind()).isEqualTo("worker_lost");
    assertThat(job.errors().get(0).message()).contains("during the last attempt");
    assertThat(job.errors().get(1).message())
        .contains("lost its worker during its last attempt")
        .contains("before step 'two'");
  }

  private static final String LAST_QUEUE = "chaos_last_attempt";

  private WorkerProcess start(Path logs, String id) {
    return start(logs, id, WorkflowWorkerMain.FLOW.jobType().queue());
  }

  private WorkerProcess start(Path logs, String id, String queue) {
    return processes.startMain(
        id,
        WorkflowWorkerMain.class,
        List.of(
            "url=" + db.jdbcUrl(),
            "id=" + id,
            "log=" + logs.resolve(id + ".log"),
            "queue=" + queue));
  }

  /** The worker whose last log line starts {@code what} (its lane is in it), or -1. */
  private static int busyWith(WorkerProcess[] workers, Path logs, String what) throws IOException {
    for (int i = 0; i < workers.length; i++) {
      Line last = lastLine(logs, workers[i].id());
      if (last != null && last.start() && last.what().equals(what)) {
        return i;
      }
    }
    return -1;
  }

  private static Line lastLine(Path logs, String process) throws IOException {
    List<Line> lines = read(logs.resolve(process + ".log"), process);
    return lines.isEmpty() ? null : lines.get(lines.size() - 1);
  }

  private static List<Line> read(Path logs) throws IOException {
    List<Line> all = new ArrayList<>();
    try (var files = Files.list(logs)) {
      for (Path file : files.toList()) {
        all.addAll(read(file, file.getFileName().toString().replace(".log", "")));
      }
    }
    return all;
  }

  private static List<Line> read(Path file, String process) throws IOException {
    List<Line> lines = new ArrayList<>();
    if (!Files.exists(file)) {
      return lines;
    }
    for (String line : Files.readAllLines(file)) {
      String[] f = line.split(" ");
      if (f.length != 4 || f[3].isEmpty()) {
        continue; // the last line of a killed process may be cut
      }
      lines.add(
          new Line(f[0].equals("S"), UUID.fromString(f[1]), f[2], Long.parseLong(f[3]), process));
    }
    return lines;
  }

  private static long starts(List<Line> lines, UUID run, String what) {
    return lines.stream()
        .filter(l -> l.start() && l.run().equals(run) && l.what().equals(what))
        .count();
  }

  private static long ends(List<Line> lines, UUID run, String what) {
    return lines.stream()
        .filter(l -> !l.start() && l.run().equals(run) && l.what().equals(what))
        .count();
  }

  private static long finished() {
    return count("pgjobs.finished_jobs");
  }
}
