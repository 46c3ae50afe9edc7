package io.pgjobs.bench;

import io.pgjobs.config.DatabaseUrl;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * {@code run-bench --workload W1|W2|W3|W4|W3S|all --runs N [--out FILE] [--scale S]}: runs the workloads
 * against the database of {@code DATABASE_URL} (default {@value DatabaseUrl#DEFAULT}), prints a table of
 * medians and ratios, and appends one JSON object per run to FILE. {@code all} is W1–W4; W3S (about a
 * minute at full size, most of it filling 6M rows) runs only when named. Its claim plans go to stderr with
 * the progress, and into the {@code plan} field of the W3S row on the filled tables in FILE.
 */
public final class BenchMain {
  private BenchMain() {}

  public static void main(String[] args) throws Exception {
    String workload = "all";
    int runs = 3;
    Path out = null;
    double scale = 1.0;
    boolean sweep = false;
    Path chart = null;
    try {
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--workload" -> workload = value(args, ++i);
          case "--runs" -> runs = Integer.parseInt(value(args, ++i));
          case "--out" -> out = Path.of(value(args, ++i));
          case "--scale" -> scale = Double.parseDouble(value(args, ++i));
          case "--sweep" -> sweep = true;
          case "--chart" -> chart = Path.of(value(args, ++i));
          case "--help", "-h" -> {
            System.out.println("usage: run-bench [--workload W1|W2|W3|W4|W3S|all] [--runs N] [--out FILE] [--scale S]"
                + " | --sweep [--runs N] [--chart FILE.png] [--out FILE] [--scale S]");
            return;
          }
          default -> throw new IllegalArgumentException("unknown option '" + args[i] + "'; see --help");
        }
      }
      if (!(scale > 0 && scale <= 10)) {
        throw new IllegalArgumentException("--scale must be greater than 0 and at most 10, was " + scale);
      }
      Workload[] workloads = Workload.parse(workload);
      DatabaseUrl database = DatabaseUrl.parse(System.getenv().getOrDefault("DATABASE_URL", DatabaseUrl.DEFAULT));
      Path outFile = out;
      BenchRunner runner = new BenchRunner(database, scale, System.err);
      java.util.function.Consumer<BenchResult> sink = r -> {
        if (outFile != null) {
          try {
            Files.writeString(outFile, r.toJsonLine() + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
          } catch (IOException e) {
            throw new IllegalStateException("cannot write " + outFile + ": " + e.getMessage(), e);
          }
        }
      };
      PrintWriter stdout = new PrintWriter(System.out, true);
      if (sweep) {
        List<BenchResult> results = runner.sweep(runs, sink);
        stdout.println();
        stdout.print(Report.sweepTable(results));
        if (chart != null) {
          SweepChart.write(results, chart);
          stdout.println("chart written to " + chart);
        }
      } else {
        List<BenchResult> results = runner.run(workloads, runs, sink);
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
