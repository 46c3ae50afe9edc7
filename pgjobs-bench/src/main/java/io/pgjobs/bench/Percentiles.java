package io.pgjobs.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Latency percentiles (nearest rank). */
final class Percentiles {
  private Percentiles() {}

  static double percentile(List<Double> sorted, double p) {
    if (sorted.isEmpty()) {
      return Double.NaN;
    }
    int rank = (int) Math.ceil(p / 100.0 * sorted.size());
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
  }

  static BenchResult of(
      String system, String variant, Workload w, int run, int jobs, List<Double> latenciesMs) {
    List<Double> sorted = new ArrayList<>(latenciesMs);
    Collections.sort(sorted);
    if (sorted.size() < jobs) {
      throw new IllegalStateException(
          w + " " + system + ": only " + sorted.size() + " of " + jobs + " jobs started");
    }
    return new BenchResult(
        system,
        variant,
        w.name(),
        run,
        jobs,
        0,
        percentile(sorted, 50),
        percentile(sorted, 95),
        percentile(sorted, 99),
        0);
  }

  /** A W4 variant's name: {@code base}, and the warm-up if there was one. */
  static String w4Variant(String base, int warmup) {
    return warmup == 0 ? base : base + ", after " + warmup + " warm-up jobs";
  }

  /**
   * A W4 row: percentiles from the enqueue call's return (the headline, as the peers measure), from the
   * call's start, and per stage (null when not traced).
   */
  static BenchResult w4(
      String system,
      String variant,
      int run,
      int jobs,
      List<Double> fromReturnMs,
      List<Double> fromCallMs,
      Map<String, List<Double>> stagesMs) {
    BenchResult r = of(system, variant, Workload.W4, run, jobs, fromReturnMs);
    List<Double> call = new ArrayList<>(fromCallMs);
    Collections.sort(call);
    Map<String, Double> stages = null;
    if (stagesMs != null) {
      stages = new LinkedHashMap<>();
      for (Map.Entry<String, List<Double>> e : stagesMs.entrySet()) {
        List<Double> s = new ArrayList<>(e.getValue());
        Collections.sort(s);
        stages.put(e.getKey() + "_p50_ms", percentile(s, 50));
        stages.put(e.getKey() + "_p99_ms", percentile(s, 99));
      }
    }
    return new BenchResult(
        r.system(),
        r.variant(),
        r.workload(),
        run,
        jobs,
        0,
        r.p50Ms(),
        r.p95Ms(),
        r.p99Ms(),
        0,
        null,
        percentile(call, 50),
        percentile(call, 95),
        percentile(call, 99),
        stages);
  }
}
