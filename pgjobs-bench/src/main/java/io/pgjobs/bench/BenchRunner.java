package io.pgjobs.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.config.DatabaseUrl;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * Runs workloads {@code runs} times, each run in fresh schemas that are dropped afterwards, pgjobs and
 * the raw reference back to back so both see the same machine state.
 */
public final class BenchRunner {
  private final DatabaseUrl database;
  private final double scale;
  private final PrintStream progress;
  private int w4WarmupJobs;

  /** The most warm-up jobs W4 accepts ({@link #w4Warmup}). */
  public static final int MAX_W4_WARMUP_JOBS = 100_000;

  /**
   * @param scale 1 for the DESIGN.md sizes; smaller for smoke runs, larger (up to 10) for steady-state figures
   * @param progress where progress lines go
   */
  public BenchRunner(DatabaseUrl database, double scale, PrintStream progress) {
    if (!(scale > 0 && scale <= 10)) {
      throw new IllegalArgumentException("scale must be in (0, 10], was " + scale);
    }
    this.database = database;
    this.scale = scale;
    this.progress = progress;
  }

  /**
   * Makes W4 run {@code jobs} untimed jobs first, each alone through its notification as the timed ones
   * (2 ms apart), so the timed jobs meet a worker whose code the JIT has compiled, as in a worker that has
   * been running for a while; 0 (the default) times a worker fresh from its start. The raw reference gets
   * the same warm-up. Returns this runner.
   *
   * @throws IllegalArgumentException unless 0 ≤ {@code jobs} ≤ {@value #MAX_W4_WARMUP_JOBS}
   */
  public BenchRunner w4Warmup(int jobs) {
    if (jobs < 0 || jobs > MAX_W4_WARMUP_JOBS) {
      throw new IllegalArgumentException(
          "--w4-warmup-jobs must be between 0 and " + MAX_W4_WARMUP_JOBS + ", was " + jobs);
    }
    this.w4WarmupJobs = jobs;
    return this;
  }

  /** Runs every workload {@code runs} times; each result goes to {@code sink} as soon as it exists. */
  public List<BenchResult> run(Workload[] workloads, int runs, Consumer<BenchResult> sink)
      throws Exception {
    if (runs < 1 || runs > 100) {
      throw new IllegalArgumentException("runs must be between 1 and 100, was " + runs);
    }
    if (java.util.Arrays.asList(workloads).contains(Workload.W5)) {
      throw new IllegalArgumentException(
          "W5 has its own settings and output: run it with w5(options, runs, sink)");
    }
    database.createDatabaseIfMissing();
    List<BenchResult> results = new ArrayList<>();
    Consumer<BenchResult> collect = r -> {
      results.add(r);
      sink.accept(r);
      progress.printf(
          "  %-3s %-6s %-32s run %d: %s%n",
          r.workload(), r.system(), r.variant(), r.run(), Report.figure(r));
    };
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(database.jdbcUrl());
    config.setDataSourceProperties(database.properties());
    config.setMaximumPoolSize(30);
    try (HikariDataSource ds = new HikariDataSource(config)) {
      for (Workload w : workloads) {
        int jobs = w.jobs(scale);
        for (int run = 1; run <= runs; run++) {
          progress.printf("%s %s: %d jobs, run %d of %d%n", w, w.title(), jobs, run, runs);
          runOnce(ds, w, run, jobs, collect);
        }
      }
    }
    return results;
  }

  /** The settings a sweep tries: 1 to 1000, on a log scale. */
  public static final List<Integer> SWEEP_POINTS = List.of(1, 10, 50, 100, 500, 1000);
  /** Jobs drained per sweep point (times the scale): fewer than W3, so that N = 1 stays short. */
  public static final int SWEEP_JOBS = 10_000;

  /**
   * W3 across settings, for the chart: pgjobs with claim batch = concurrency = N, pgjobs with
   * concurrency N and the default batch (10), and the raw claim-N + move reference; {@code runs} each.
   */
  public List<BenchResult> sweep(int runs, Consumer<BenchResult> sink) throws Exception {
    database.createDatabaseIfMissing();
    List<BenchResult> results = new ArrayList<>();
    int jobs = Math.max(100, (int) Math.round(SWEEP_JOBS * scale));
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(database.jdbcUrl());
    config.setDataSourceProperties(database.properties());
    config.setMaximumPoolSize(30);
    try (HikariDataSource ds = new HikariDataSource(config)) {
      for (int n : SWEEP_POINTS) {
        for (int run = 1; run <= runs; run++) {
          progress.printf("W3 sweep: N = %d, %d jobs, run %d of %d%n", n, jobs, run, runs);
          String suffix = UUID.randomUUID().toString().substring(0, 8);
          String pgSchema = "bench_pgjobs_" + suffix;
          String rawSchema = "bench_raw_" + suffix;
          try {
            PgJobsWorkloads pgjobs = new PgJobsWorkloads(database, ds, pgSchema);
            RawSqlWorkloads raw = new RawSqlWorkloads(ds, rawSchema);
            List<BenchResult> point = List.of(
                raw.w3(run, jobs, n, RawSqlWorkloads.Finish.MOVE)
                    .as("sweep: raw claim N + move", n),
                pgjobs
                    .w3InProcess(run, jobs, "", n, n)
                    .as("sweep: pgjobs batch = concurrency = N", n),
                pgjobs
                    .w3InProcess(run, jobs, "", n, JobWorkerDefaults.CLAIM_BATCH)
                    .as("sweep: pgjobs concurrency N, default claim batch", n));
            for (BenchResult r : point) {
              results.add(r);
              sink.accept(r);
              progress.printf("  %-40s N=%-5d run %d: %s%n", r.variant(), n, run, Report.figure(r));
            }
          } finally {
            drop(ds, pgSchema, rawSchema);
          }
        }
      }
    }
    return results;
  }

  /**
   * W5, sustained load: for each of {@code options.rates()} a run over the sustained phases, then for each
   * of {@code options.peakLanes()} a peak probe; {@code runs} times each, every run in a fresh schema
   * (dropped afterwards) with a worker process and a producer process of its own. Each window, phase and
   * run goes to {@code jsonLines} as a JSON line as soon as it exists, each window to the progress stream
   * as a table row. With {@code options.partitions()} > 0 each run and probe has flow-control limits on its
   * queue ({@link W5Runner}).
   */
  public List<W5Run> w5(W5Options options, int runs, Consumer<String> jsonLines) throws Exception {
    if (runs < 1 || runs > 100) {
      throw new IllegalArgumentException("runs must be between 1 and 100, was " + runs);
    }
    database.createDatabaseIfMissing();
    List<W5Run> results = new ArrayList<>();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(database.jdbcUrl());
    config.setDataSourceProperties(database.properties());
    config.setMaximumPoolSize(4);
    try (HikariDataSource ds = new HikariDataSource(config)) {
      progress.println("W5 sustained load: " + options.describe());
      for (int run = 1; run <= runs; run++) {
        for (int rate : options.rates()) {
          results.add(w5Once(
              ds,
              String.format(Locale.ROOT, "%d/s", rate),
              run,
              rate,
              0,
              options.lanes(),
              options,
              options.sustainedPhases(),
              jsonLines));
        }
        for (int lanes : options.peakLanes()) {
          results.add(w5Once(
              ds,
              String.format(Locale.ROOT, "peak %d lanes", lanes),
              run,
              0,
              options.peakDepth(),
              lanes,
              options,
              options.peakPhases(),
              jsonLines));
        }
      }
    }
    return results;
  }

  private W5Run w5Once(
      HikariDataSource ds,
      String label,
      int run,
      int rate,
      int depth,
      int lanes,
      W5Options options,
      List<W5Options.Phase> phases,
      Consumer<String> jsonLines)
      throws Exception {
    String schema = "bench_w5_" + UUID.randomUUID().toString().substring(0, 8);
    progress.printf(
        Locale.ROOT,
        "W5 %s, run %d: %s%n",
        label,
        run,
        (rate > 0
                ? String.format(Locale.ROOT, "%,d jobs/s offered, %d lanes", rate, lanes)
                : String.format(Locale.ROOT, "depth kept at %,d, %d lanes", depth, lanes))
            + ", limits: "
            + W5Options.limitsText(
                options.partitions(), options.partitionConcurrency(), options.globalConcurrency()));
    progress.print(W5Report.WINDOW_HEADER);
    try {
      io.pgjobs.JobClient.builder(ds).schema(schema).build().migrate();
      W5Runner runner = new W5Runner(database, ds, schema, progress);
      W5Run result = runner.run(
          label,
          run,
          rate,
          depth,
          lanes,
          options.workMs(),
          phases,
          options.windowS(),
          options.partitions(),
          options.partitionConcurrency(),
          options.globalConcurrency(),
          w -> {
            progress.print(W5Report.windowRow(w));
            jsonLines.accept(w.toJsonLine());
          },
          p -> jsonLines.accept(p.toJsonLine()));
      jsonLines.accept(result.toJsonLine());
      return result;
    } finally {
      drop(ds, schema);
    }
  }

  private void drop(HikariDataSource ds, String... schemas) {
    if (Boolean.getBoolean("pgjobs.bench.keepSchemas")) {
      progress.println(
          "kept the bench schemas (-Dpgjobs.bench.keepSchemas): " + String.join(", ", schemas));
      return;
    }
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement()) {
      for (String schema : schemas) {
        st.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      }
    } catch (SQLException e) {
      progress.println("could not drop bench schemas: " + e.getMessage());
    }
  }

  /** Variant of the W3 row: one worker process ({@link BenchWorkerMain}) with default settings. */
  static final String W3_ONE_PROCESS = "default settings";
  /** Variant of the W3 row with two such processes. */
  static final String W3_TWO_PROCESSES = "default settings, 2 worker processes";
  /** Variant of the W3S reference row: the W3 drain of one process on empty tables, same run. */
  static final String W3S_EMPTY = "empty tables, default settings (reference)";

  /** Variant of the W3S row on the filled tables at {@code scale}. */
  static String w3sFilledVariant(double scale) {
    return String.format(
        Locale.ROOT,
        "%,d scheduled + %,d finished in tables, default settings (%% = vs empty tables)",
        ScaleFill.scaled(ScaleFill.SCHEDULED, scale),
        ScaleFill.scaled(ScaleFill.FINISHED, scale));
  }

  /**
   * W3S: the one-process W3 drain on empty tables (the reference), then in the same schema: fill, enqueue
   * the due jobs, EXPLAIN the claim on the filled tables, drain with one worker process; after the drain a
   * second EXPLAIN shows the claim of a worker that finds nothing due. The plans go to the progress stream
   * and into the filled row's {@code plan}.
   */
  private void w3s(
      HikariDataSource ds,
      PgJobsWorkloads pgjobs,
      String schema,
      int run,
      int jobs,
      Consumer<BenchResult> out)
      throws Exception {
    out.accept(pgjobs.w3Processes(Workload.W3S, run, jobs, W3S_EMPTY, 1));
    ScaleFill fill = new ScaleFill(ds, schema, progress);
    int scheduled = ScaleFill.scaled(ScaleFill.SCHEDULED, scale);
    int finished = ScaleFill.scaled(ScaleFill.FINISHED, scale);
    long t0 = System.nanoTime();
    UUID lastFiller = fill.fill(scheduled, finished);
    pgjobs.enqueueDue(jobs);
    long due = fill.countAbove(lastFiller);
    if (due != jobs) {
      throw new IllegalStateException(
          "W3S: " + due + " jobs sort above the filler, expected the " + jobs + " just enqueued");
    }
    String busy = "-- claim with " + jobs + " due jobs among " + scheduled + " scheduled:\n"
        + fill.explainClaim();
    progress.printf(
        Locale.ROOT,
        "  W3S ready to drain after %.0f s; the claim on the filled tables:%n%s",
        (System.nanoTime() - t0) / 1e9,
        busy);
    pgjobs.pause();
    BenchResult filled =
        pgjobs.drainWithProcesses(Workload.W3S, run, jobs, w3sFilledVariant(scale), 1, lastFiller);
    String idle = "-- claim with nothing due (the worker's poll while idle), after the drain:\n"
        + fill.explainClaim();
    progress.print(idle);
    out.accept(filled.withPlan(busy + idle));
  }

  /**
   * W3H: the one-process W3 drain on an empty history (the reference), then in the same schema: a history
   * of {@link HistoryFill#FULL} finished jobs at {@code scale}, the list's filters timed over it, the
   * partitions past the retention dropped (as the leader keeps the history), the same drain again, and the
   * retention's pruning of a day.
   */
  private void w3h(
      HikariDataSource ds,
      PgJobsWorkloads pgjobs,
      String schema,
      int run,
      int jobs,
      Consumer<BenchResult> out)
      throws Exception {
    long rows;
    if (System.getProperty("pgjobs.bench.history") != null) {
      // The history of an earlier run's fill: no reference drain here (run W3 beside it: its
      // one-process drain is the same drain on an empty history).
      try (var c = ds.getConnection();
          var st = c.createStatement();
          var rs = st.executeQuery("SELECT count(*) FROM " + schema + ".finished_jobs")) {
        rs.next();
        rows = rs.getLong(1);
      }
      progress.printf(
          Locale.ROOT, "  W3H: the history of schema %s, %,d finished jobs%n", schema, rows);
    } else {
      out.accept(pgjobs.w3Processes(Workload.W3H, run, jobs, "empty history (reference)", 1));
      rows = Math.max(HistoryFill.HOURS, Math.round(HistoryFill.FULL * scale));
      long ms = new HistoryFill(ds, schema, progress).fill(rows);
      progress.printf(Locale.ROOT, "  W3H: %,d finished jobs written in %,d ms%n", rows, ms);
    }
    HistoryProbe probe = new HistoryProbe(ds, schema, progress);
    probe.listFilters();
    probe.dropPastRetention();
    out.accept(pgjobs.w3Processes(
        Workload.W3H,
        run,
        jobs,
        String.format(Locale.ROOT, "history of %,d finished jobs", rows),
        1));
    probe.prune();
  }

  private void runOnce(
      HikariDataSource ds, Workload w, int run, int jobs, Consumer<BenchResult> out)
      throws Exception {
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    // -Dpgjobs.bench.history=SCHEMA: W3H over the history already in SCHEMA (a W3H run stopped
    // after its
    // fill), which is kept afterwards; see w3h.
    String history = w == Workload.W3H ? System.getProperty("pgjobs.bench.history") : null;
    String pgSchema = history != null ? history : "bench_pgjobs_" + suffix;
    String rawSchema = "bench_raw_" + suffix;
    try {
      PgJobsWorkloads pgjobs = new PgJobsWorkloads(database, ds, pgSchema);
      switch (w) {
        case W1 -> {
          RawSqlWorkloads raw = new RawSqlWorkloads(ds, rawSchema);
          out.accept(raw.w1Copy(run, jobs));
          raw.truncate();
          out.accept(raw.w1MultiRow(run, jobs));
          out.accept(pgjobs.w1(run, jobs));
        }
        case W2 -> {
          RawSqlWorkloads raw = new RawSqlWorkloads(ds, rawSchema);
          out.accept(raw.w2(run, jobs));
          out.accept(pgjobs.w2(run, jobs));
        }
        case W3 -> {
          RawSqlWorkloads raw = new RawSqlWorkloads(ds, rawSchema);
          out.accept(raw.w3(run, jobs, 1000, RawSqlWorkloads.Finish.DELETE));
          raw.truncate();
          out.accept(raw.w3(run, jobs, 1000, RawSqlWorkloads.Finish.MOVE));
          raw.truncate();
          out.accept(raw.w3(run, jobs, 100, RawSqlWorkloads.Finish.UPDATE_DONE));
          raw.truncate();
          // The same design and batch size as pgjobs' defaults, single-threaded: the honest peer of
          // the default-settings row.
          out.accept(raw.w3(run, jobs, 10, RawSqlWorkloads.Finish.MOVE));
          raw.truncate();
          out.accept(pgjobs.w3Processes(w, run, jobs, W3_ONE_PROCESS, 1));
          out.accept(pgjobs.w3Processes(w, run, jobs, W3_TWO_PROCESSES, 2));
        }
        case W3S -> w3s(ds, pgjobs, pgSchema, run, jobs, out);
        case W3H -> w3h(ds, pgjobs, pgSchema, run, jobs, out);
        case W3L -> {
          // -Dpgjobs.bench.limitVariants=NONE,PARTITIONED runs only those variants (GLOBAL: the
          // global
          // limit), for profiling one of them.
          String only = System.getProperty("pgjobs.bench.limitVariants");
          java.util.function.Predicate<String> wanted =
              v -> only == null || java.util.Arrays.asList(only.split(",")).contains(v);
          if (wanted.test("NONE")) {
            out.accept(pgjobs.w3Processes(w, run, jobs, W3_ONE_PROCESS, 1));
          }
          if (wanted.test("GLOBAL")) {
            out.accept(pgjobs.w3Limited(
                run,
                jobs,
                "global concurrency 10,000 (above the lanes)",
                io.pgjobs.QueueLimits.builder().globalConcurrency(10_000).build(),
                0));
          }
          if (wanted.test("PARTITIONED")) {
            out.accept(pgjobs.w3Limited(
                run,
                jobs,
                "1,000 partitions, 2 at a time each",
                io.pgjobs.QueueLimits.builder()
                    .partitionBy("partition")
                    .partitionConcurrency(2)
                    .build(),
                1_000));
          }
        }
        case W3G -> {
          out.accept(pgjobs.w3Processes(w, run, jobs, W3_ONE_PROCESS, 1));
          // -Dpgjobs.bench.graphShapes=CHAINS,FAN_OUT runs only those shapes (FLOOR: the floor;
          // ENQUEUE: the large graph's enqueue), for profiling one of them.
          String only = System.getProperty("pgjobs.bench.graphShapes");
          for (GraphShape shape : GraphShape.values()) {
            if (only == null || java.util.Arrays.asList(only.split(",")).contains(shape.name())) {
              out.accept(pgjobs.w3Graph(run, jobs, shape));
            }
          }
          if (only == null || only.contains("FLOOR")) {
            out.accept(pgjobs.w3UnblockFloor(run, jobs));
          }
          if (only == null || only.contains("ENQUEUE")) {
            out.accept(pgjobs.enqueueGraph(run, jobs * 20));
          }
        }
        case W5 -> throw new IllegalArgumentException("W5 runs through w5(options, runs, sink)");
        case W4 -> {
          RawSqlWorkloads raw = new RawSqlWorkloads(ds, rawSchema);
          out.accept(raw.w4(run, jobs, w4WarmupJobs));
          out.accept(pgjobs.w4(run, jobs, w4WarmupJobs));
        }
      }
    } finally {
      if (history != null) {
        drop(ds, rawSchema);
      } else {
        drop(ds, pgSchema, rawSchema);
      }
    }
  }
}
