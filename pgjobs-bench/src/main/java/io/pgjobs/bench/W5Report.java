package io.pgjobs.bench;

import java.util.List;
import java.util.Locale;

/** W5's tables: one row per window, one row per phase (Markdown). */
public final class W5Report {
  private W5Report() {}

  /** The header of the per-window table. */
  public static final String WINDOW_HEADER =
      "| run | phase | window end s | offered/s | completed/s | depth (max) | dead tuples | table MiB | p50 ms | p95 ms | p99 ms | max ms |\n"
          + "|---|---|---|---|---|---|---|---|---|---|---|---|\n";

  /** One row of the per-window table (also printed live as the run goes). */
  public static String windowRow(W5Run.Window w) {
    return String.format(
        Locale.ROOT,
        "| %s | %s | %.1f | %,.0f | %,.0f | %,d (%,d) | %,d | %.1f | %s | %s | %s | %s |%n",
        w.run(),
        w.phase(),
        w.endS(),
        w.offeredPerS(),
        w.completedPerS(),
        w.depth(),
        w.depthMax(),
        w.deadTuples(),
        w.tableMib(),
        ms(w.p50Ms()),
        ms(w.p95Ms()),
        ms(w.p99Ms()),
        ms(w.maxMs()));
  }

  /** Every window of the runs. */
  public static String windowTable(List<W5Run> runs) {
    StringBuilder out = new StringBuilder(WINDOW_HEADER);
    runs.forEach(r -> r.windows().forEach(w -> out.append(windowRow(w))));
    return out.toString();
  }

  /** One row per phase, as the table: medians of the windows' p50 and p99, worst window, depth. */
  public static String phaseTable(List<W5Run> runs) {
    StringBuilder out = new StringBuilder(
        "| run | phase | s | offered/s | completed/s | pickup p50 / p99 (median of windows) | worst window p99 | p99 of the phase | depth max | depth at end | dead tuples max |\n"
            + "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (W5Run r : runs) {
      for (W5Run.PhaseSummary p : r.phases()) {
        out.append(String.format(
            Locale.ROOT,
            "| %s | %s | %.0f | %,.0f | %,.0f | %s / %s ms | %s ms | %s ms | %,d | %,d | %,d |%n",
            r.run(),
            p.phase(),
            p.seconds(),
            p.offeredPerS(),
            p.completedPerS(),
            ms(p.p50MedianOfWindowsMs()),
            ms(p.p99MedianOfWindowsMs()),
            ms(p.p99WorstWindowMs()),
            ms(p.p99Ms()),
            p.depthMax(),
            p.depthEnd(),
            p.deadTuplesMax()));
      }
    }
    out.append('\n');
    out.append(goalLines(runs));
    for (W5Run r : runs) {
      // The label stays "800/s" with limits on, so that --w5-chart overlays a run with limits
      // on the same run without; this line says which it was.
      String limits = r.partitions() == 0 && r.globalConcurrency() == 0
          ? ""
          : ", limits: "
              + W5Options.limitsText(
                  r.partitions(), r.partitionConcurrency(), r.globalConcurrency());
      out.append(
          r.completedTotal() == r.offeredTotal()
              ? String.format(
                  Locale.ROOT,
                  "%s (run %d%s): %,d jobs offered, %,d completed; the backlog at the end drained in %.1f s.%n",
                  r.run(),
                  r.repeat(),
                  limits,
                  r.offeredTotal(),
                  r.completedTotal(),
                  r.drainS())
              : String.format(
                  Locale.ROOT,
                  "%s (run %d%s): %,d jobs offered, only %,d completed %.0f s after the producer stopped (NOT DRAINED).%n",
                  r.run(),
                  r.repeat(),
                  limits,
                  r.offeredTotal(),
                  r.completedTotal(),
                  r.drainS()));
    }
    return out.toString();
  }

  /**
   * Issue 15's part-1 goal, as ratios and no verdict: for each phase after the clean one, its p99 against
   * the clean phase's (median of windows, and over the whole phase), its largest depth, and completed
   * against offered.
   */
  static String goalLines(List<W5Run> runs) {
    StringBuilder out = new StringBuilder();
    for (W5Run r : runs) {
      W5Run.PhaseSummary clean =
          r.phases().stream().filter(p -> p.phase().equals("clean")).findFirst().orElse(null);
      if (clean == null || clean.p99MedianOfWindowsMs() == null || clean.p99Ms() == null) {
        continue;
      }
      boolean after = false;
      for (W5Run.PhaseSummary p : r.phases()) {
        if (p == clean) {
          after = true;
          continue;
        }
        if (!after || p.p99MedianOfWindowsMs() == null || p.p99Ms() == null) {
          continue;
        }
        out.append(String.format(
            Locale.ROOT,
            "%s %s vs clean: p99 (median of windows) %.2f×, p99 of the phase %.2f×, worst window p99 %.2f× the clean phase's;"
                + " depth max %,d (clean %,d); completed %.1f %% of offered%n",
            r.run(),
            p.phase(),
            p.p99MedianOfWindowsMs() / clean.p99MedianOfWindowsMs(),
            p.p99Ms() / clean.p99Ms(),
            p.p99WorstWindowMs() / clean.p99MedianOfWindowsMs(),
            p.depthMax(),
            clean.depthMax(),
            p.offered() == 0 ? 0 : 100.0 * p.completed() / p.offered()));
      }
    }
    return out.toString();
  }

  static String ms(Double value) {
    if (value == null) {
      return "–";
    }
    return value >= 100
        ? String.format(Locale.ROOT, "%,.0f", value)
        : String.format(Locale.ROOT, "%.2f", value);
  }
}
