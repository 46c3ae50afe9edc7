package io.pgjobs.bench;

import java.util.Arrays;

/** The {@code --w4-warmup-jobs} flag of {@code run-bench} and {@code pgjobs bench} ({@link BenchRunner#w4Warmup}). */
public final class W4Warmup {
  private W4Warmup() {}

  /**
   * The number of warm-up jobs {@code text} gives, for a run of {@code workloads} (a sweep when
   * {@code sweep}).
   *
   * @throws IllegalArgumentException if {@code text} is not a whole number from 0 to
   *     {@value BenchRunner#MAX_W4_WARMUP_JOBS}, or the run has no W4
   */
  public static int parse(String text, Workload[] workloads, boolean sweep) {
    if (sweep || !Arrays.asList(workloads).contains(Workload.W4)) {
      throw new IllegalArgumentException("--w4-warmup-jobs goes with --workload W4 or all");
    }
    int jobs;
    try {
      jobs = Integer.parseInt(text.trim());
    } catch (NumberFormatException e) {
      jobs = -1;
    }
    if (jobs < 0 || jobs > BenchRunner.MAX_W4_WARMUP_JOBS) {
      throw new IllegalArgumentException("--w4-warmup-jobs must be a whole number from 0 to "
          + BenchRunner.MAX_W4_WARMUP_JOBS + ", was '" + text + "'");
    }
    return jobs;
  }
}
