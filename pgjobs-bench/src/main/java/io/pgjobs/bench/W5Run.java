package io.pgjobs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.json.JsonMapper;

/**
 * One W5 run: a sustained run at a rate or a peak probe, its windows and its phases.
 *
 * @param run the run's label: {@code 800/s} or {@code peak 16 lanes}
 * @param repeat 1-based repeat number (--runs)
 * @param rate offered rate (jobs/s) of a sustained run, 0 for a peak probe
 * @param peakDepth the depth a peak probe keeps, 0 for a sustained run
 * @param lanes the worker's lanes
 * @param workMs synthetic work per job
 * @param partitions the partitions of the queue's limits ({@link W5Options#partitions()}); 0: no limits
 * @param partitionConcurrency the limits' jobs of one partition at a time; 0 when there were no limits
 * @param globalConcurrency the limits' jobs of the queue at a time ({@link W5Options#globalConcurrency()}); 0:
 *     none
 * @param windows every window, in order
 * @param phases one summary per phase, in order
 * @param offeredTotal jobs offered over the whole run
 * @param completedTotal jobs completed by the end of the drain after the producer stopped: less than
 *     {@code offeredTotal} only when the drain ran out of {@link W5Runner#DRAIN_TIMEOUT}
 * @param drainS how long that drain took (the backlog left at the end of the last phase)
 */
public record W5Run(
    String run,
    int repeat,
    int rate,
    int peakDepth,
    int lanes,
    double workMs,
    int partitions,
    int partitionConcurrency,
    int globalConcurrency,
    List<Window> windows,
    List<PhaseSummary> phases,
    long offeredTotal,
    long completedTotal,
    double drainS) {

  /**
   * One window. Rates are per second over the window; depth is offered minus started at its end (jobs
   * handed to the enqueue call whose handler has not started: waiting in the table or claimed ahead in
   * the worker), depthMax the largest depth of the samples taken every 50 ms in it; dead/live tuples and the table size of the hot table {@code jobs} as
   * {@code pg_stat_user_tables} and {@code pg_relation_size} show them at its end; pickup percentiles
   * (ms) over the jobs whose handler started in it, null when none did; {@code enqueueP99Ms} the
   * producer's enqueue calls in it.
   */
  public record Window(
      String workload,
      String row,
      String run,
      int repeat,
      String phase,
      boolean idleTransaction,
      double endS,
      double seconds,
      long offered,
      long started,
      long completed,
      double offeredPerS,
      double completedPerS,
      long depth,
      long depthMax,
      long deadTuples,
      long liveTuples,
      double tableMib,
      Double p50Ms,
      Double p95Ms,
      Double p99Ms,
      Double maxMs,
      Double enqueueP99Ms) {

    public String toJsonLine() {
      return JSON.writeValueAsString(this);
    }
  }

  /**
   * One phase: rates over the whole phase; the pickup p50/p99 as the median of its windows' (the issue's
   * figure) and over all its pickups together; the worst window's p99; the largest depth and dead-tuple
   * count of its windows and the depth at its end.
   */
  public record PhaseSummary(
      String workload,
      String row,
      String run,
      int repeat,
      String phase,
      boolean idleTransaction,
      double seconds,
      long offered,
      long completed,
      double offeredPerS,
      double completedPerS,
      Double p50MedianOfWindowsMs,
      Double p99MedianOfWindowsMs,
      Double p99WorstWindowMs,
      Double p50Ms,
      Double p95Ms,
      Double p99Ms,
      Double maxMs,
      long depthMax,
      long depthEnd,
      long deadTuplesMax) {

    public String toJsonLine() {
      return JSON.writeValueAsString(this);
    }
  }

  /** The run's totals as a JSON line ({@code "row":"run"}). */
  public String toJsonLine() {
    return JSON.writeValueAsString(new Totals(
        "W5",
        "run",
        run,
        repeat,
        rate,
        peakDepth,
        lanes,
        workMs,
        partitions,
        partitionConcurrency,
        globalConcurrency,
        offeredTotal,
        completedTotal,
        drainS));
  }

  private record Totals(
      String workload,
      String row,
      String run,
      int repeat,
      int rate,
      int peakDepth,
      int lanes,
      double workMs,
      int partitions,
      int partitionConcurrency,
      int globalConcurrency,
      long offeredTotal,
      long completedTotal,
      double drainS) {}

  /**
   * The runs of a {@code --out} file (other workloads' lines and phase rows are skipped): windows grouped
   * by run and repeat, in file order, with the settings of the run's {@code "row":"run"} line when it is
   * there (a run cut short has none: its rate is then read from its label, and its totals are 0).
   */
  public static List<W5Run> readJsonLines(Path file) throws IOException {
    Map<String, List<Window>> windows = new LinkedHashMap<>();
    Map<String, Totals> totals = new LinkedHashMap<>();
    for (String line : Files.readAllLines(file)) {
      if (!line.contains("\"workload\":\"W5\"")) {
        continue;
      }
      if (line.contains("\"row\":\"window\"")) {
        Window w = JSON.readValue(line, Window.class);
        windows
            .computeIfAbsent(w.run() + "#" + w.repeat(), k -> new ArrayList<>())
            .add(w);
      } else if (line.contains("\"row\":\"run\"")) {
        Totals t = JSON.readValue(line, Totals.class);
        totals.put(t.run() + "#" + t.repeat(), t);
      }
    }
    List<W5Run> runs = new ArrayList<>();
    windows.forEach((key, ws) -> {
      Totals t = totals.get(key);
      Window first = ws.getFirst();
      if (t == null) {
        int rate = first.run().endsWith("/s") ? Integer.parseInt(first.run().replace("/s", "")) : 0;
        t = new Totals("W5", "run", first.run(), first.repeat(), rate, 0, 0, 0, 0, 0, 0, 0, 0, 0);
      }
      runs.add(new W5Run(
          t.run(),
          t.repeat(),
          t.rate(),
          t.peakDepth(),
          t.lanes(),
          t.workMs(),
          t.partitions(),
          t.partitionConcurrency(),
          t.globalConcurrency(),
          ws,
          List.of(),
          t.offeredTotal(),
          t.completedTotal(),
          t.drainS()));
    });
    return runs;
  }

  private static final JsonMapper JSON = JsonMapper.builder()
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .build();
}
