package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.Dependency;
import io.pgjobs.Dependency.OnFailure;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobGraph;
import io.pgjobs.JobState;
import io.pgjobs.lifecycle.GraphWorkerMain.Node;
import io.pgjobs.lifecycle.WorkerProcesses.WorkerProcess;
import io.pgjobs.testkit.Exclusive;
import io.pgjobs.testkit.Tags;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 30, acceptance 3, "no stranded node": random graphs of 1–50 jobs (up to three parents each, among
 * the jobs before it; edges {@code cancel}, {@code run} or, for some jobs, all {@code only}; one job in
 * seven fails) run by four worker JVMs of 8 lanes, while the one running the most jobs is killed with -9
 * every 1.5 seconds and a new one started. Then, against a model of the policies computed from the graphs:
 *
 * <ul>
 *   <li>every job ends, in the state its parents' outcomes and its edges say (none waits forever);
 *   <li>no job started before every one of its parents had ended (but one that runs only if a parent
 *       fails, which runs as soon as one does);
 *   <li>every run is counted in the job's attempts, and a job ran to its end at most once in processes
 *       that were not killed afterwards (a second run only after a kill: at-least-once);
 *   <li>every job with several parents (a batch callback) that should run ran, and one that should not
 *       did not.
 * </ul>
 *
 * <p>CI runs 200 graphs ({@code -Dpgjobs.graphs.count=10000} for the 10,000; that run's figures are
 * in the closing note).
 */
@Tag(Tags.PROCESS)
@Tag(Tags.SOAK)
@Exclusive
class GraphChaosTest extends LifecycleTestBase {
  private static final int GRAPHS = Integer.getInteger("pgjobs.graphs.count", 200);
  /** How often a worker is killed. */
  private static final Duration KILL_EVERY = Duration.ofMillis(1_500);

  private static final int WORKERS = 4;
  private static final int GRAPHS_PER_ENQUEUE = 20;

  /** One edge of the model: the parent's index in its graph and the policy. */
  record Edge(int parent, OnFailure policy) {}

  /** One job of the model. */
  record Spec(String name, boolean fail, List<Edge> parents) {}

  /** One run in a log: start and end (Long.MAX_VALUE: none) in epoch microseconds, and its process. */
  record Run(UUID job, long start, long end, String process) {}

  @Test
  void everyJobOfRandomGraphsEndsAsItsPoliciesSayWhileWorkersAreKilled(@TempDir Path logs)
      throws Exception {
    Random random = new Random(30);
    Map<UUID, JobState> expected = new HashMap<>();
    Map<UUID, List<UUID>> parentsOf = new HashMap<>();
    Set<UUID> onlyIfOneFails = new HashSet<>();
    int total = 0;
    JobGraph.Builder batch = JobGraph.builder();
    List<Spec> batchSpecs = new ArrayList<>();
    for (int g = 0; g < GRAPHS; g++) {
      List<Spec> specs = randomGraph(random, "g" + g);
      for (Spec s : specs) {
        Dependency[] after = s.parents().stream()
            .map(e -> dependency(specs.get(e.parent()).name(), e.policy()))
            .toArray(Dependency[]::new);
        batch.add(
            s.name(),
            GraphWorkerMain.NODE,
            new Node(s.name(), s.fail(), 5 + random.nextInt(21)),
            EnqueueOptions.DEFAULTS,
            after);
        batchSpecs.add(s);
      }
      total += specs.size();
      if ((g + 1) % GRAPHS_PER_ENQUEUE == 0 || g == GRAPHS - 1) {
        Map<String, UUID> ids = client.enqueueGraph(batch.build()).ids();
        model(batchSpecs, ids, expected, parentsOf, onlyIfOneFails);
        batch = JobGraph.builder();
        batchSpecs.clear();
      }
    }
    int jobs = total;

    Map<String, Long> killedAt = new HashMap<>();
    WorkerProcess[] workers = new WorkerProcess[WORKERS];
    int started = 0;
    for (int i = 0; i < WORKERS; i++) {
      workers[i] = start(logs, "graph-w" + started++);
    }
    int kills = 0;
    long cutRuns = 0;
    while (ended() < jobs) {
      // Every 1.5 s: CI's 200 graphs drain in a few seconds on a fast machine (at 3 s one run saw a
      // single kill).
      await().pollDelay(KILL_EVERY).atMost(KILL_EVERY.plusSeconds(1)).until(() -> true);
      int victim = ChaosWorkers.mostOpenRuns(workers, logs, 4);
      if (victim < 0 || ended() >= jobs) {
        continue;
      }
      workers[victim].kill();
      workers[victim].jvm().process().waitFor();
      killedAt.put(workers[victim].id(), micros());
      kills++;
      cutRuns += ChaosWorkers.openRuns(logs, workers[victim].id(), 4);
      System.out.printf(
          "kill %d: %s, %d of %d jobs ended%n", kills, workers[victim].id(), ended(), jobs);
      workers[victim] = start(logs, "graph-w" + started++);
    }
    await("all " + jobs + " jobs ended")
        .pollInterval(Duration.ofMillis(250))
        .atMost(Duration.ofSeconds(300))
        .until(() -> ended() == jobs);

    Map<UUID, String> states = new HashMap<>();
    Map<UUID, Integer> attempts = new HashMap<>();
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT id, state, attempts FROM pgjobs.finished_jobs WHERE queue = 'graphs'");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        UUID id = rs.getObject(1, UUID.class);
        states.put(id, rs.getString(2));
        attempts.put(id, rs.getInt(3));
      }
    }
    List<Run> runs = read(logs, killedAt);
    Map<UUID, List<Run>> runsOf = new HashMap<>();
    for (Run r : runs) {
      runsOf.computeIfAbsent(r.job(), k -> new ArrayList<>()).add(r);
    }

    List<String> wrongState = new ArrayList<>();
    List<String> early = new ArrayList<>();
    List<String> uncounted = new ArrayList<>();
    List<String> twice = new ArrayList<>();
    int callbacks = 0;
    int callbacksRun = 0;
    for (Map.Entry<UUID, JobState> e : expected.entrySet()) {
      UUID id = e.getKey();
      List<Run> mine = runsOf.getOrDefault(id, List.of());
      if (!e.getValue().value().equals(states.get(id))) {
        wrongState.add(id + ": " + states.get(id) + ", expected " + e.getValue().value());
      }
      if (mine.size() > attempts.getOrDefault(id, 0)) {
        uncounted.add(id + ": " + mine.size() + " runs, " + attempts.get(id) + " attempts");
      }
      long endedInSurvivors = mine.stream()
          .filter(r -> r.end() != Long.MAX_VALUE && !killedAt.containsKey(r.process()))
          .count();
      if (endedInSurvivors > 1) {
        twice.add(id + ": " + endedInSurvivors + " runs ended in processes never killed");
      }
      long firstStart = mine.stream().mapToLong(Run::start).min().orElse(Long.MAX_VALUE);
      // A job that runs only if a parent fails runs as soon as one does, whatever the others do.
      List<UUID> awaited =
          onlyIfOneFails.contains(id) ? List.of() : parentsOf.getOrDefault(id, List.of());
      for (UUID parent : awaited) {
        long parentEnd = runsOf.getOrDefault(parent, List.of()).stream()
            .filter(r -> r.end() != Long.MAX_VALUE)
            .mapToLong(Run::end)
            .max()
            .orElse(Long.MIN_VALUE);
        if (firstStart <= parentEnd) {
          early.add(id + " started before its parent " + parent + " ended");
        }
      }
      if (parentsOf.getOrDefault(id, List.of()).size() >= 2) {
        callbacks++;
        boolean shouldRun = e.getValue() == JobState.SUCCEEDED || e.getValue() == JobState.FAILED;
        if (shouldRun) {
          callbacksRun++;
        }
        if (shouldRun != !mine.isEmpty()) {
          wrongState.add(
              id + " (callback) ran " + mine.size() + " times, expected to run: " + shouldRun);
        }
      }
    }
    long sentBack = attempts.values().stream().filter(a -> a > 1).count();
    System.out.printf(
        "%d graphs, %d jobs (%s), %d runs, %d kills (%d handlers running at the kill, %d jobs"
            + " sent back); %d callbacks, %d of them ran%n",
        GRAPHS,
        jobs,
        counts(expected),
        runs.size(),
        kills,
        cutRuns,
        sentBack,
        callbacks,
        callbacksRun);
    assertThat(wrongState).as("jobs not in the state their policies say").isEmpty();
    assertThat(early).as("jobs started before a parent ended").isEmpty();
    assertThat(uncounted).as("runs not counted in attempts").isEmpty();
    assertThat(twice).as("jobs run to their end twice without a kill").isEmpty();
    assertThat(kills).as("kills during the run").isGreaterThanOrEqualTo(2);
    // A kill cuts a job short whether its handler was running or it was claimed and not yet
    // recorded
    // ended (its end line may already be in the log while the outcome waits in the completer's
    // batch):
    // either way the job is rescued and claimed again, with one more attempt. No job here is
    // retried
    // (a failing node is discarded), so a second attempt is the kills' mark.
    assertThat(sentBack)
        .as("jobs the kills sent back to the queue (attempts above 1)")
        .isPositive();
    assertThat(callbacksRun).as("callbacks that ran").isPositive();
  }

  /**
   * A random graph of 1–50 jobs: each takes up to three parents among the jobs before it; with parents,
   * one in seven waits only for failures ({@code only}), the others take {@code cancel} (60 %) or
   * {@code run}; one in seven fails.
   */
  private static List<Spec> randomGraph(Random random, String prefix) {
    int size = 1 + random.nextInt(50);
    List<Spec> specs = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      int k = Math.min(i, random.nextInt(4));
      Set<Integer> picked = new HashSet<>();
      while (picked.size() < k) {
        picked.add(random.nextInt(i));
      }
      boolean only = k > 0 && random.nextInt(7) == 0;
      List<Edge> edges = new ArrayList<>();
      for (int p : picked) {
        edges.add(new Edge(
            p, only ? OnFailure.ONLY : random.nextInt(10) < 6 ? OnFailure.CANCEL : OnFailure.RUN));
      }
      specs.add(new Spec(prefix + "-n" + i, random.nextInt(7) == 0, edges));
    }
    return specs;
  }

  private static Dependency dependency(String parent, OnFailure policy) {
    return switch (policy) {
      case CANCEL -> Dependency.on(parent);
      case RUN -> Dependency.on(parent).runAnyway();
      case ONLY -> Dependency.on(parent).onlyIfItFails();
    };
  }

  /**
   * The state each job must end in: a job with no parents runs; one waiting only for failures runs if a
   * parent did not succeed, else it is cancelled as not needed; any other is cancelled if a parent on a
   * {@code cancel} edge did not succeed, else it runs. A job that runs fails if it is made to.
   */
  private static void model(
      List<Spec> specs,
      Map<String, UUID> ids,
      Map<UUID, JobState> expected,
      Map<UUID, List<UUID>> parentsOf,
      Set<UUID> onlyIfOneFails) {
    // Names are unique across the batch ("g<graph>-n<i>"): a spec's parents are of its own graph.
    Map<String, JobState> byName = new HashMap<>();
    Map<String, String> graphOf = new HashMap<>();
    for (Spec s : specs) {
      String graph = s.name().substring(0, s.name().indexOf("-n"));
      graphOf.put(s.name(), graph);
      boolean runs;
      List<UUID> parents = new ArrayList<>();
      if (s.parents().isEmpty()) {
        runs = true;
      } else {
        boolean anyNotSucceeded = false;
        boolean cancelledByEdge = false;
        for (Edge e : s.parents()) {
          String parentName = graph + "-n" + e.parent();
          parents.add(ids.get(parentName));
          JobState p = byName.get(parentName);
          if (p != JobState.SUCCEEDED) {
            anyNotSucceeded = true;
            if (e.policy() == OnFailure.CANCEL) {
              cancelledByEdge = true;
            }
          }
        }
        boolean only = s.parents().get(0).policy() == OnFailure.ONLY;
        if (only) {
          onlyIfOneFails.add(ids.get(s.name()));
        }
        runs = only ? anyNotSucceeded : !cancelledByEdge;
      }
      JobState state = !runs ? JobState.CANCELLED : s.fail() ? JobState.FAILED : JobState.SUCCEEDED;
      byName.put(s.name(), state);
      expected.put(ids.get(s.name()), state);
      parentsOf.put(ids.get(s.name()), parents);
    }
  }

  private static String counts(Map<UUID, JobState> expected) {
    Map<JobState, Integer> n = new java.util.TreeMap<>();
    expected.values().forEach(s -> n.merge(s, 1, Integer::sum));
    return n.toString();
  }

  private WorkerProcess start(Path logs, String id) {
    return processes.startMain(
        id,
        GraphWorkerMain.class,
        List.of("url=" + db.jdbcUrl(), "id=" + id, "lanes=8", "log=" + logs.resolve(id + ".log")));
  }

  private static long ended() {
    return count("SELECT count(*) FROM pgjobs.finished_jobs WHERE queue = 'graphs'");
  }

  private static long micros() {
    return java.time.temporal.ChronoUnit.MICROS.between(
        java.time.Instant.EPOCH, java.time.Instant.now());
  }

  /** Every run of every process's log; a run without an end (its process was killed) ends at MAX_VALUE. */
  private static List<Run> read(Path logs, Map<String, Long> killedAt) throws IOException {
    List<Run> runs = new ArrayList<>();
    try (var files = Files.list(logs)) {
      for (Path file : files.toList()) {
        String process = file.getFileName().toString().replace(".log", "");
        Map<String, String[]> open = new HashMap<>();
        for (String line : Files.readAllLines(file)) {
          String[] f = line.split(" ");
          if (f.length != 4 || f[3].isEmpty()) {
            continue; // the last line of a killed process may be cut
          }
          String run = f[1] + "/" + f[2];
          if (f[0].equals("S")) {
            open.put(run, f);
          } else {
            String[] s = open.remove(run);
            if (s != null) {
              runs.add(new Run(
                  UUID.fromString(f[1]), Long.parseLong(s[3]), Long.parseLong(f[3]), process));
            }
          }
        }
        for (String[] s : open.values()) {
          runs.add(new Run(UUID.fromString(s[1]), Long.parseLong(s[3]), Long.MAX_VALUE, process));
        }
      }
    }
    return runs;
  }
}
