package io.pgjobs.cli;

import io.pgjobs.bench.BenchResult;
import io.pgjobs.bench.BenchRunner;
import io.pgjobs.bench.Report;
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
 * {@code pgjobs bench}: the benchmark workloads W1–W4 (and the W3S scale test, when named), against pgjobs and a raw-SQL reference in the same
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
      "W4 enqueue-to-start latency; W3S: W3 with 5,000,000 scheduled and 1,000,000 finished jobs in the tables (only when named)."
    })
final class BenchCommand extends Subcommand {
  @Option(names = "--workload", paramLabel = "<W1|W2|W3|W4|W3S|all>", defaultValue = "all",
      description = "Which workload. Default: ${DEFAULT-VALUE}.")
  String workload;

  @Option(names = "--runs", paramLabel = "<n>", defaultValue = "3",
      description = "Runs of each workload, 1 to 100; the table shows medians. Default: ${DEFAULT-VALUE}.")
  int runs;

  @Option(names = "--out", paramLabel = "<file>",
      description = "Append one JSON object per run to this file (JSON lines).")
  Path out;

  @Option(names = "--scale", paramLabel = "<s>", defaultValue = "1",
      description = "Scale every workload to this share of its size, (0, 10]: below 1 for quick runs, above 1 for steady-state figures. Default: ${DEFAULT-VALUE}.")
  double scale;

  @Option(names = "--sweep",
      description = "Instead of the workloads: W3 at N = 1, 10, 50, 100, 500, 1000 (claim batch and concurrency)"
          + " for pgjobs and the raw reference, as a table and, with --chart, a PNG.")
  boolean sweep;

  @Option(names = "--chart", paramLabel = "<file.png>", description = "With --sweep: write the chart to this PNG file.")
  Path chart;

  @Override
  public Integer call() throws Exception {
    Settings settings = settings(Map.of());
    Workload[] workloads;
    try {
      workloads = Workload.parse(workload);
      if (runs < 1 || runs > 100) {
        throw new IllegalArgumentException("--runs must be between 1 and 100, was " + runs);
      }
      if (!(scale > 0 && scale <= 10)) {
        throw new IllegalArgumentException("--scale must be greater than 0 and at most 10, was " + scale);
      }
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }
    PrintStream progress = new PrintStream(System.err, true, StandardCharsets.UTF_8);
    if (chart != null && !sweep) {
      throw usage("--chart goes with --sweep");
    }
    List<BenchResult> results;
    try {
      BenchRunner runner = new BenchRunner(settings.databaseUrl(), scale, progress);
      java.util.function.Consumer<BenchResult> sink = r -> {
        if (out != null) {
          try {
            Files.writeString(out, r.toJsonLine() + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
          } catch (IOException e) {
            throw new CommandFailedException("cannot write " + out + ": " + e.getMessage(), e);
          }
        }
      };
      results = sweep ? runner.sweep(runs, sink) : runner.run(workloads, runs, sink);
    } catch (java.sql.SQLException e) {
      throw new CommandFailedException(Failures.describe(e, settings.databaseUrl().toString()), e);
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
