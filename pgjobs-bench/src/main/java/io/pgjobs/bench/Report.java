package io.pgjobs.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The summary table: median and range per series, and the ratio of pgjobs to the raw reference. */
public final class Report {
  private Report() {}

  /** The headline figure of one run. */
  static String figure(BenchResult r) {
    if (r.workload().equals("W4")) {
      String line = String.format(
          Locale.ROOT,
          "p50 %.2f ms, p95 %.2f ms, p99 %.2f ms from the call's return",
          r.p50Ms(),
          r.p95Ms(),
          r.p99Ms());
      if (r.p50FromCallMs() != null) {
        line += String.format(
            Locale.ROOT,
            " (from its start: p50 %.2f, p95 %.2f, p99 %.2f)",
            r.p50FromCallMs(),
            r.p95FromCallMs(),
            r.p99FromCallMs());
      }
      if (r.stages() != null) {
        StringBuilder stages = new StringBuilder();
        r.stages().forEach((k, v) -> stages.append(String.format(Locale.ROOT, " %s=%.3f", k, v)));
        line += "; stages:" + stages;
      }
      return line;
    }
    String rss =
        r.peakRssMib() > 0 ? String.format(Locale.ROOT, ", peak RSS %.0f MiB", r.peakRssMib()) : "";
    return String.format(Locale.ROOT, "%,.0f jobs/s%s", r.jobsPerS(), rss);
  }

  /** A Markdown table of medians, ranges and ratios. */
  public static String table(List<BenchResult> results) {
    Map<String, List<BenchResult>> series = new LinkedHashMap<>();
    results.stream()
        .sorted(Comparator.comparing(BenchResult::workload))
        .forEach(r -> series.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r));
    Map<String, Double> reference = new LinkedHashMap<>();
    series.forEach((key, runs) -> {
      BenchResult first = runs.get(0);
      if (isReference(first)) {
        reference.put(first.workload(), median(runs, first.workload()));
      }
    });
    StringBuilder out = new StringBuilder();
    out.append("| workload | system | variant | median | min – max | runs | vs raw reference |\n");
    out.append("|---|---|---|---|---|---|---|\n");
    series.forEach((key, runs) -> {
      BenchResult first = runs.get(0);
      String w = first.workload();
      double median = median(runs, w);
      double min = runs.stream().mapToDouble(r -> value(r, w)).min().orElse(0);
      double max = runs.stream().mapToDouble(r -> value(r, w)).max().orElse(0);
      Double ref = reference.get(w);
      String ratio = ref == null || ref == 0
          ? ""
          : String.format(
              Locale.ROOT, "%.0f %%", 100 * (w.equals("W4") ? ref / median : median / ref));
      String unit = w.equals("W4") ? " ms p50" : " jobs/s";
      String extra = "";
      if (w.equals("W4")) {
        extra = String.format(
            Locale.ROOT,
            " (p95 %.2f, p99 %.2f)",
            medianOf(runs, BenchResult::p95Ms),
            medianOf(runs, BenchResult::p99Ms));
      } else if (first.peakRssMib() > 0) {
        extra = String.format(
            Locale.ROOT, " (peak RSS %.0f MiB)", medianOf(runs, BenchResult::peakRssMib));
      }
      out.append(String.format(
          Locale.ROOT,
          "| %s | %s | %s | %s%s%s | %s – %s | %d | %s |%n",
          w,
          first.system(),
          first.variant(),
          format(median, w),
          unit,
          extra,
          format(min, w),
          format(max, w),
          runs.size(),
          ratio));
    });
    if (series.values().stream().anyMatch(runs -> runs.get(0).workload().equals("W3S"))) {
      out.append(
          "\nW3S: the ratio is to pgjobs' drain on empty tables in the same invocation, not to the raw reference;"
              + " peak RSS is the worker process's.\n");
    }
    return out.toString();
  }

  /** The sweep as a Markdown table: one row per N, one column per series (medians, jobs/s). */
  public static String sweepTable(List<BenchResult> results) {
    Map<String, Map<Integer, List<BenchResult>>> series = new LinkedHashMap<>();
    java.util.TreeSet<Integer> points = new java.util.TreeSet<>();
    for (BenchResult r : results) {
      series
          .computeIfAbsent(r.variant(), k -> new LinkedHashMap<>())
          .computeIfAbsent(r.jobs(), k -> new ArrayList<>())
          .add(r);
      points.add(r.jobs());
    }
    StringBuilder out = new StringBuilder("| N |");
    series
        .keySet()
        .forEach(name -> out.append(' ').append(name.replace("sweep: ", "")).append(" |"));
    out.append('\n').append("|---|").append("---|".repeat(series.size())).append('\n');
    for (int n : points) {
      out.append("| ").append(n).append(" |");
      for (Map<Integer, List<BenchResult>> byN : series.values()) {
        List<BenchResult> runs = byN.get(n);
        out.append(' ')
            .append(runs == null ? "" : format(medianOf(runs, BenchResult::jobsPerS), "W3"))
            .append(" |");
      }
      out.append('\n');
    }
    return out.toString();
  }

  /**
   * The series the ratios of a workload are taken against: the raw-SQL reference, except for W3S, where it
   * is pgjobs on empty tables (the question there is what full tables cost pgjobs).
   */
  private static boolean isReference(BenchResult r) {
    if (r.workload().equals("W3S")) {
      return r.system().equals("pgjobs") && r.variant().equals(BenchRunner.W3S_EMPTY);
    }
    return r.system().equals("raw")
        && switch (r.workload()) {
          case "W1" -> r.variant().equals("COPY");
          case "W2" -> r.variant().startsWith("single-row");
          case "W3" -> r.variant().equals("claim 1000 + DELETE");
          default -> true;
        };
  }

  private static double value(BenchResult r, String workload) {
    return workload.equals("W4") ? r.p50Ms() : r.jobsPerS();
  }

  private static double median(List<BenchResult> runs, String workload) {
    return medianOf(runs, r -> value(r, workload));
  }

  private static double medianOf(
      List<BenchResult> runs, java.util.function.ToDoubleFunction<BenchResult> f) {
    double[] values = runs.stream().mapToDouble(f).sorted().toArray();
    int n = values.length;
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  }

  private static String format(double value, String workload) {
    return workload.equals("W4")
        ? String.format(Locale.ROOT, "%.2f", value)
        : String.format(Locale.ROOT, "%,.0f", value);
  }
}
