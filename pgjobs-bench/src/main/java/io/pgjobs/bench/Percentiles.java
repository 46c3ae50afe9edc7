package io.pgjobs.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

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

  static BenchResult of(String system, String variant, Workload w, int run, int jobs, List<Double> latenciesMs) {
    List<Double> sorted = new ArrayList<>(latenciesMs);
    Collections.sort(sorted);
    if (sorted.size() < jobs) {
      throw new IllegalStateException(w + " " + system + ": only " + sorted.size() + " of " + jobs + " jobs started");
    }
    return new BenchResult(system, variant, w.name(), run, jobs, 0,
        percentile(sorted, 50), percentile(sorted, 95), percentile(sorted, 99), 0);
  }
}
