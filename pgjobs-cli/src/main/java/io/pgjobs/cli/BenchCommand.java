package io.pgjobs.cli;

import io.pgjobs.bench.BenchResult;
import io.pgjobs.bench.BenchRunner;
import io.pgjobs.bench.Report;
import io.pgjobs.bench.W5Chart;
import io.pgjobs.bench.W5Options;
import io.pgjobs.bench.W5Report;
import io.pgjobs.bench.W5Run;
import io.pgjobs.bench.Workload;
import io.pgjobs.cli.config.Settings;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code pgjobs bench}: the benchmark workloads W1–W4 (and the W3S scale test and the W5 sustained-load test, when named), against pgjobs and a raw-SQL reference in the same
 * run, in schemas it creates and drops. Prints progress while it runs, then a table of medians, ranges
 * and ratios; with {@code --out} also one JSON object per run.
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Run the benchmark workloads against pgjobs and a raw-SQL reference; print medians and ratios.",
      "W1 bulk enqueue 100,000; W2 5,000 single enqueues; W3 drain 50,000 (worker in its own process, 1 and 2 processes);",
      "W4 enqueue-to-start latency; W3S: W3 with 5,000,000 scheduled and 1,000,000 finished jobs in the tables (only when named).",
      "W5 (only when named, ~20 min with the defaults): sustained load from a producer process at a fixed rate, a worker process,",
      "phases warm-up, clean, idle transaction, recovery, idle transaction again; pickup p50/p95/p99, completion rate, depth and",
      "dead tuples per window; then a peak probe (depth kept at a target) per --peak-lanes."
    })
final class BenchCommand extends Subcommand {
  @Option(
      names = "--workload",
      paramLabel = "<W1|W2|W3|W4|W3S|W5|all>",
      defaultValue = "all",
      description = "Which workload. Default: ${DEFAULT-VALUE}.")
  String workload;

  @Option(
      names = "--runs",
      paramLabel = "<n>",
      description = "Runs of each workload, 1 to 100; the table shows medians. Default: 3 (W5: 1).")
  Integer runs;

  @Option(
      names = "--out",
      paramLabel = "<file>",
      description =
          "Append one JSON object per run to this file (JSON lines); W5: one per window, phase and run.")
  Path out;

  @Option(
      names = "--scale",
      paramLabel = "<s>",
      defaultValue = "1",
      description =
          "Scale every workload to this share of its size, (0, 10]: below 1 for quick runs, above 1 for steady-state figures. Default: ${DEFAULT-VALUE}.")
  double scale;

  @Option(
      names = "--sweep",
      description =
          "Instead of the workloads: W3 at N = 1, 10, 50, 100, 500, 1000 (claim batch and concurrency)"
              + " for pgjobs and the raw reference, as a table and, with --chart, a PNG.")
  boolean sweep;

  @Option(
      names = "--chart",
      paramLabel = "<file.png>",
      description =
          "With --sweep: write the chart to this PNG file. With W5: one chart per run, <file>-<run>.png"
              + " (depth and pickup p99/p50 over time, phases shaded).")
  Path chart;

  @Option(
      names = "--w5-chart",
      paramLabel = "<out.jsonl[,out2.jsonl...]>",
      split = ",",
      description =
          "Instead of a run: W5 charts from earlier --out files, overlaid (e.g. before and after a change),"
              + " one per run of the first file, to --chart <file>-<run>.png; each line is named after its file.")
  List<Path> w5ChartFrom;

  @Option(
      names = "--w4-warmup-jobs",
      paramLabel = "<n>",
      description =
          "W4: run this many untimed jobs first (each alone, 2 ms apart), so the timed ones meet a worker"
              + " whose code the JIT has compiled, as one that has been running; the raw reference gets the same."
              + " 0 to " + io.pgjobs.bench.BenchRunner.MAX_W4_WARMUP_JOBS
              + ". Default: 0 (a worker fresh from its start).")
  String w4WarmupJobs;

  @Option(
      names = "--rate",
      paramLabel = "<r[,r...]>",
      description = "W5: offered jobs/s, one sustained run each, or 'none'. Default: 800,5000.")
  String rate;

  @Option(
      names = "--lanes",
      paramLabel = "<n>",
      description = "W5: worker lanes (concurrency) of the sustained runs. Default: 32.")
  String lanes;

  @Option(
      names = "--work-ms",
      paramLabel = "<ms>",
      description = "W5: synthetic work per job (the handler parks). Default: 1.")
  String workMs;

  @Option(
      names = "--warmup",
      paramLabel = "<s>",
      description = "W5: warm-up phase, seconds. Default: 20.")
  String warmup;

  @Option(
      names = "--clean",
      paramLabel = "<s>",
      description = "W5: clean phase, seconds. Default: 150.")
  String clean;

  @Option(
      names = "--idle-tx",
      paramLabel = "<s>",
      description =
          "W5: phase with another connection idle in a transaction (BEGIN; SELECT txid_current()), seconds. Default: 150.")
  String idleTx;

  @Option(
      names = "--recovery",
      paramLabel = "<s>",
      description = "W5: recovery phase, seconds. Default: 120.")
  String recovery;

  @Option(
      names = "--idle-tx2",
      paramLabel = "<s>",
      description =
          "W5: second idle-transaction phase, seconds (any phase: 0 leaves it out). Default: 120.")
  String idleTx2;

  @Option(
      names = "--window",
      paramLabel = "<s>",
      description = "W5: window of the per-window table, seconds. Default: 5.")
  String window;

  @Option(
      names = "--peak-lanes",
      paramLabel = "<n[,n...]>",
      description = "W5: peak probes, lanes of each, or 'none'. Default: 16,64.")
  String peakLanes;

  @Option(
      names = "--peak-depth",
      paramLabel = "<n>",
      description = "W5: depth the peak probe keeps. Default: 2000.")
  String peakDepth;

  @Option(
      names = "--peak",
      paramLabel = "<s>",
      description = "W5: measured phase of each peak probe, seconds. Default: 60.")
  String peak;

  @Option(
      names = "--partitions",
      paramLabel = "<n>",
      description =
          "W5: run with flow-control limits on its queue, partitioned by the key given at enqueue, the"
              + " producer's job i in partition \"p\" + (i %% n); 0 to 100,000. Default: 0 (no limits).")
  String partitions;

  @Option(
      names = "--partition-concurrency",
      paramLabel = "<n>",
      description =
          "W5 with --partitions: jobs of one partition running at once, 1 to 100,000. Default: 2.")
  String partitionConcurrency;

  @Override
  public Integer call() throws Exception {
    if (w5ChartFrom != null) {
      if (chart == null) {
        throw usage("--w5-chart needs --chart <file.png> (where the charts go)");
      }
      try {
        for (Path file : W5Chart.fromJsonLines(w5ChartFrom, chart)) {
          out().println("chart written to " + file);
        }
      } catch (IllegalArgumentException e) {
        throw usage(e.getMessage());
      }
      out().flush();
      return PgJobsCommand.OK;
    }
    Settings settings = settings(Map.of());
    Workload[] workloads;
    W5Options w5 = W5Options.DEFAULTS;
    boolean isW5;
    int w4Warmup = 0;
    try {
      workloads = Workload.parse(workload);
      isW5 = workloads.length == 1 && workloads[0] == Workload.W5;
      String[][] w5Flags = {
        {"--rate", rate},
        {"--lanes", lanes},
        {"--work-ms", workMs},
        {"--warmup", warmup},
        {"--clean", clean},
        {"--idle-tx", idleTx},
        {"--recovery", recovery},
        {"--idle-tx2", idleTx2},
        {"--window", window},
        {"--peak-lanes", peakLanes},
        {"--peak-depth", peakDepth},
        {"--peak", peak},
        {"--partitions", partitions},
        {"--partition-concurrency", partitionConcurrency}
      };
      for (String[] flag : w5Flags) {
        if (flag[1] != null) {
          if (!isW5) {
            throw new IllegalArgumentException(flag[0] + " goes with --workload W5");
          }
          w5 = w5.with(flag[0], flag[1]);
        }
      }
      if (w4WarmupJobs != null) {
        w4Warmup = io.pgjobs.bench.W4Warmup.parse(w4WarmupJobs, workloads, sweep);
      }
      if (runs == null) {
        runs = isW5 ? 1 : 3;
      }
      if (runs < 1 || runs > 100) {
        throw new IllegalArgumentException("--runs must be between 1 and 100, was " + runs);
      }
      if (!(scale > 0 && scale <= 10)) {
        throw new IllegalArgumentException(
            "--scale must be greater than 0 and at most 10, was " + scale);
      }
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }
    PrintStream progress = new PrintStream(System.err, true, StandardCharsets.UTF_8);
    if (chart != null && !sweep && !isW5) {
      throw usage("--chart goes with --sweep or --workload W5");
    }
    List<BenchResult> results;
    try {
      BenchRunner runner =
          new BenchRunner(settings.databaseUrl(), scale, progress).w4Warmup(w4Warmup);
      if (isW5 && !sweep) {
        List<W5Run> w5Runs = runner.w5(w5, runs, line -> {
          if (out != null) {
            try {
              Files.writeString(
                  out, line + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException e) {
              throw new CommandFailedException("cannot write " + out + ": " + e.getMessage(), e);
            }
          }
        });
        out().println();
        out().print(W5Report.windowTable(w5Runs));
        out().println();
        out().print(W5Report.phaseTable(w5Runs));
        if (chart != null) {
          boolean several = w5Runs.stream().anyMatch(r -> r.repeat() > 1);
          for (W5Run r : w5Runs) {
            Path file = W5Chart.fileFor(chart, r, several);
            W5Chart.write(r, file);
            out().println("chart written to " + file);
          }
        }
        out().flush();
        return PgJobsCommand.OK;
      }
      java.util.function.Consumer<BenchResult> sink = r -> {
        if (out != null) {
          try {
            Files.writeString(
                out, r.toJsonLine() + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
          } catch (IOException e) {
            throw new CommandFailedException("cannot write " + out + ": " + e.getMessage(), e);
          }
        }
      };
      results = sweep ? runner.sweep(runs, sink) : runner.run(workloads, runs, sink);
    } catch (java.sql.SQLException e) {
      throw new CommandFailedException(
          Failures.describe(e, settings.databaseUrl().toString()), e);
    }
    out().println();
    out().print(sweep ? Report.sweepTable(results) : Report.table(results));
    if (chart != null) {
      io.pgjobs.bench.SweepChart.write(results, chart);
      out().println("chart written to " + chart);
    }
    out().flush();
    return PgJobsCommand.OK;
  }
}
