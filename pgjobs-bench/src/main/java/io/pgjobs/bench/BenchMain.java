package io.pgjobs.bench;

import io.pgjobs.config.DatabaseUrl;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * {@code run-bench --workload W1|W2|W3|W4|W3S|W3L|W3G|W3H|W5|all --runs N [--out FILE] [--scale S]}: runs the workloads
 * against the database of {@code DATABASE_URL} (default {@value DatabaseUrl#DEFAULT}), prints a table of
 * medians and ratios, and appends one JSON object per run to FILE. {@code all} is W1–W4; W3S (about a
 * minute at full size, most of it filling 6M rows) runs only when named. Its claim plans go to stderr with
 * the progress, and into the {@code plan} field of the W3S row on the filled tables in FILE. W5 (only when
 * named, flags in {@link W5Options#HELP}) prints a table per window and per phase, appends its windows,
 * phases and runs to FILE, and with {@code --chart} draws each run.
 */
public final class BenchMain {
  private BenchMain() {}

  public static void main(String[] args) throws Exception {
    String workload = "all";
    Integer runs = null;
    W5Options w5 = W5Options.DEFAULTS;
    List<Path> w5ChartFrom = null;
    Path out = null;
    double scale = 1.0;
    boolean sweep = false;
    Path chart = null;
    String w4Warmup = null;
    try {
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--workload" -> workload = value(args, ++i);
          case "--runs" -> runs = Integer.parseInt(value(args, ++i));
          case "--out" -> out = Path.of(value(args, ++i));
          case "--scale" -> scale = Double.parseDouble(value(args, ++i));
          case "--sweep" -> sweep = true;
          case "--chart" -> chart = Path.of(value(args, ++i));
          case "--w4-warmup-jobs" -> w4Warmup = value(args, ++i);
          case "--w5-chart" ->
            w5ChartFrom = java.util.Arrays.stream(value(args, ++i).split(","))
                .map(String::trim)
                .map(Path::of)
                .toList();
          case "--help", "-h" -> {
            System.out.println(
                "usage: run-bench [--workload W1|W2|W3|W4|W3S|W3L|W3G|W3H|W5|all] [--runs N] [--out FILE] [--scale S]"
                    + " [--w4-warmup-jobs N]"
                    + " | --sweep [--runs N] [--chart FILE.png] [--out FILE] [--scale S]"
                    + " | --workload W5 [W5 flags] [--runs N] [--out FILE] [--chart FILE.png]"
                    + " | --w5-chart OUT.jsonl[,OUT2.jsonl...] --chart FILE.png");
            System.out.println(W5Options.HELP);
            return;
          }
          default -> {
            if (!W5Options.FLAGS.contains(args[i])) {
              throw new IllegalArgumentException("unknown option '" + args[i] + "'; see --help");
            }
            w5 = w5.with(args[i], value(args, ++i));
          }
        }
      }
      if (!(scale > 0 && scale <= 10)) {
        throw new IllegalArgumentException(
            "--scale must be greater than 0 and at most 10, was " + scale);
      }
      if (w5ChartFrom != null) {
        if (chart == null) {
          throw new IllegalArgumentException(
              "--w5-chart needs --chart FILE.png (where the charts go)");
        }
        for (Path file : W5Chart.fromJsonLines(w5ChartFrom, chart)) {
          System.out.println("chart written to " + file);
        }
        return;
      }
      Workload[] workloads = Workload.parse(workload);
      boolean isW5 = workloads.length == 1 && workloads[0] == Workload.W5;
      if (w5 != W5Options.DEFAULTS && !isW5) {
        throw new IllegalArgumentException("the W5 flags go with --workload W5");
      }
      if (chart != null && !sweep && !isW5) {
        throw new IllegalArgumentException("--chart goes with --sweep or --workload W5");
      }
      DatabaseUrl database =
          DatabaseUrl.parse(System.getenv().getOrDefault("DATABASE_URL", DatabaseUrl.DEFAULT));
      Path outFile = out;
      BenchRunner runner = new BenchRunner(database, scale, System.err);
      if (w4Warmup != null) {
        runner.w4Warmup(W4Warmup.parse(w4Warmup, workloads, sweep));
      }
      java.util.function.Consumer<BenchResult> sink = r -> {
        if (outFile != null) {
          try {
            Files.writeString(
                outFile,
                r.toJsonLine() + "\n",
                StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
          } catch (IOException e) {
            throw new IllegalStateException("cannot write " + outFile + ": " + e.getMessage(), e);
          }
        }
      };
      PrintWriter stdout = new PrintWriter(System.out, true);
      if (isW5 && !sweep) {
        List<W5Run> w5Runs = runner.w5(w5, runs == null ? 1 : runs, line -> {
          if (outFile != null) {
            try {
              Files.writeString(
                  outFile, line + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException e) {
              throw new IllegalStateException("cannot write " + outFile + ": " + e.getMessage(), e);
            }
          }
        });
        stdout.println();
        stdout.print(W5Report.windowTable(w5Runs));
        stdout.println();
        stdout.print(W5Report.phaseTable(w5Runs));
        if (chart != null) {
          boolean several = w5Runs.stream().anyMatch(r -> r.repeat() > 1);
          for (W5Run r : w5Runs) {
            Path file = W5Chart.fileFor(chart, r, several);
            W5Chart.write(r, file);
            stdout.println("chart written to " + file);
          }
        }
      } else if (sweep) {
        List<BenchResult> results = runner.sweep(runs == null ? 3 : runs, sink);
        stdout.println();
        stdout.print(Report.sweepTable(results));
        if (chart != null) {
          SweepChart.write(results, chart);
          stdout.println("chart written to " + chart);
        }
      } else {
        List<BenchResult> results = runner.run(workloads, runs == null ? 3 : runs, sink);
        stdout.println();
        stdout.print(Report.table(results));
      }
      stdout.flush();
    } catch (IllegalArgumentException e) {
      System.err.println("run-bench: " + e.getMessage());
      System.exit(2);
    }
  }

  private static String value(String[] args, int i) {
    if (i >= args.length) {
      throw new IllegalArgumentException("option " + args[i - 1] + " needs a value");
    }
    return args[i];
  }
}
