package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.QueueLimits;
import io.pgjobs.lifecycle.FlowControlWorkerMain.Keyed;
import io.pgjobs.lifecycle.WorkerProcesses.WorkerProcess;
import io.pgjobs.testkit.Exclusive;
import io.pgjobs.testkit.Tags;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 29, acceptance 1, "never exceeded": four worker JVMs of 200 lanes each run jobs of a queue limited
 * to 10 running in the fleet and 2 per partition over 50 partitions, while one of them (the one running the most
 * jobs) is killed with -9 every 10 seconds and a new one started. The execution log the handlers write (start and end of every
 * run, wall clock, flushed at once) shows at no instant more than 10 runs, nor more than 2 of a partition,
 * and every job succeeds. A run the kill cut short ends, in the log, when its process was found dead.
 *
 * <p>CI runs it for 20 s ({@code -Dpgjobs.flow.seconds=120} for the two minutes; that run's figures
 * are in the closing note).
 */
@Tag(Tags.PROCESS)
@Tag(Tags.SOAK)
@Exclusive
class FlowControlChaosTest extends LifecycleTestBase {
  private static final int WORKERS = 4;
  private static final int GLOBAL = 10;
  private static final int PER_KEY = 2;
  private static final int KEYS = 50;
  private static final int SECONDS = Integer.getInteger("pgjobs.flow.seconds", 20);

  /** One run in the log: start and end in epoch microseconds. */
  record Run(String job, String key, long start, long end) {}

  @Test
  void limitsAreNeverExceededAndEveryJobSucceedsWhileWorkersAreKilled(@TempDir Path logs)
      throws Exception {
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .globalConcurrency(GLOBAL)
            .partitionBy("input.key")
            .partitionConcurrency(PER_KEY)
            .build());
    // 10 lanes of jobs of 20-100 ms drain ~70-90 a second with the kills (a killed worker's jobs
    // hold their slots until they are rescued): about the whole run.
    int jobs = SECONDS * 100;
    Random random = new Random(29);
    List<Keyed> work = new ArrayList<>();
    for (int i = 0; i < jobs; i++) {
      work.add(new Keyed("k" + random.nextInt(KEYS), i, 20 + random.nextInt(81)));
    }
    client.enqueueAll(FlowControlWorkerMain.KEYED, work, EnqueueOptions.DEFAULTS);

    Map<String, Instant> killedAt = new HashMap<>();
    WorkerProcess[] workers = new WorkerProcess[WORKERS];
    int started = 0;
    for (int i = 0; i < WORKERS; i++) {
      workers[i] = start(logs, "flow-w" + started++);
    }
    long until = System.nanoTime() + Duration.ofSeconds(SECONDS).toNanos();
    int kills = 0;
    long cutRuns = 0;
    // Until the time is up and a kill has cut a run short (what the test is for): a run of 20-100
    // ms can end between the look that found it open and the kill, so a kill may cut nothing (CI at
    // 9b76eb1, two kills, none cut); while jobs remain, the next kill tries again.
    while ((System.nanoTime() < until || cutRuns == 0) && finished() < jobs) {
      await().pollDelay(Duration.ofSeconds(10)).atMost(Duration.ofSeconds(11)).until(() -> true);
      if (finished() >= jobs) {
        break;
      }
      // A worker in the middle of a run (its handler started and has not ended): a kill then cuts
      // runs short, which the test is for. On a loaded machine a worker the database counts busy
      // may still be starting its handlers. The victim is the worker the check found (-2: every job
      // finished meanwhile).
      int victim = await("a worker in the middle of a run")
          .pollInterval(Duration.ofMillis(100))
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> finished() >= jobs ? -2 : ChaosWorkers.mostOpenRuns(workers, logs, 5),
              v -> v != -1);
      if (victim == -2) {
        break;
      }
      workers[victim].kill();
      workers[victim].jvm().process().waitFor();
      killedAt.put(workers[victim].id(), Instant.now());
      kills++;
      cutRuns += ChaosWorkers.openRuns(logs, workers[victim].id(), 5);
      System.out.printf(
          "kill %d: %s, %d of %d jobs finished%n", kills, workers[victim].id(), finished(), jobs);
      workers[victim] = start(logs, "flow-w" + started++);
    }
    await("all " + jobs + " jobs finished")
        .pollInterval(Duration.ofMillis(250))
        .atMost(Duration.ofSeconds(240))
        .until(() -> finished() == jobs);

    assertThat(kills).as("kills during the run").isGreaterThanOrEqualTo(SECONDS / 10 - 1);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'"))
        .as("every job succeeded")
        .isEqualTo(jobs);
    List<Run> runs = read(logs, killedAt);
    assertThat(runs.stream().map(Run::job).distinct().count()).isEqualTo(jobs);
    long cut = runs.stream().filter(r -> r.end() == Long.MAX_VALUE).count();
    assertThat(cut).as("runs without an end whose process was not killed").isZero();
    int[] max = maxAtOnce(runs);
    System.out.printf(
        "%d jobs, %d runs (%d cut by kills), %d kills: at most %d running at once, %d of one partition%n",
        jobs, runs.size(), runs.size() - jobs, kills, max[0], max[1]);
    assertThat(max[0])
        .as("most runs at one instant (global concurrency " + GLOBAL + ")")
        .isLessThanOrEqualTo(GLOBAL);
    assertThat(max[1]).as("most runs of one partition at one instant").isLessThanOrEqualTo(PER_KEY);
    assertThat(max[0]).as("the limit is used, not just kept").isEqualTo(GLOBAL);
    assertThat(runs.size()).as("runs cut short by the kills ran again").isGreaterThan(jobs);
  }

  private WorkerProcess start(Path logs, String id) {
    return processes.startMain(
        id,
        FlowControlWorkerMain.class,
        List.of(
            "url=" + db.jdbcUrl(), "id=" + id, "lanes=200", "log=" + logs.resolve(id + ".log")));
  }

  private static long finished() {
    return count("pgjobs.finished_jobs");
  }

  /** Every run of every process's log; a run without an end ends when its process was killed. */
  private static List<Run> read(Path logs, Map<String, Instant> killedAt) throws IOException {
    List<Run> runs = new ArrayList<>();
    try (var files = Files.list(logs)) {
      for (Path file : files.toList()) {
        String process = file.getFileName().toString().replace(".log", "");
        Instant killed = killedAt.get(process);
        Map<String, String[]> open = new HashMap<>();
        for (String line : Files.readAllLines(file)) {
          String[] f = line.split(" ");
          if (f.length != 5) {
            continue; // the last line of a killed process may be cut
          }
          String run = f[1] + "/" + f[2];
          if (f[0].equals("S")) {
            open.put(run, f);
          } else {
            String[] s = open.remove(run);
            runs.add(new Run(f[1], f[3], Long.parseLong(s[4]), Long.parseLong(f[4])));
          }
        }
        for (String[] s : open.values()) {
          long end =
              killed == null ? Long.MAX_VALUE : ChronoUnit.MICROS.between(Instant.EPOCH, killed);
          runs.add(new Run(s[1], s[3], Long.parseLong(s[4]), end));
        }
      }
    }
    return runs;
  }

  /** The most runs at one instant, in all and of one partition. */
  static int[] maxAtOnce(List<Run> runs) {
    List<long[]> edges = new ArrayList<>();
    List<String> keys = new ArrayList<>();
    for (Run r : runs) {
      keys.add(r.key());
      edges.add(new long[] {r.start(), 1, keys.size() - 1});
      edges.add(new long[] {r.end(), -1, keys.size() - 1});
    }
    // At one instant, ends before starts: a run that ends as another starts does not overlap it.
    edges.sort((x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
    Map<String, Integer> byKey = new HashMap<>();
    int now = 0;
    int max = 0;
    int maxKey = 0;
    for (long[] e : edges) {
      now += (int) e[1];
      max = Math.max(max, now);
      int k = byKey.merge(keys.get((int) e[2]), (int) e[1], Integer::sum);
      maxKey = Math.max(maxKey, k);
    }
    return new int[] {max, maxKey};
  }
}
