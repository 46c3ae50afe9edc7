package io.pgjobs.bench;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.Map;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.json.JsonMapper;

/**
 * One measured run of one variant.
 *
 * @param system {@code pgjobs} or {@code raw}
 * @param variant what exactly ran (e.g. {@code copy}, {@code claim1000+delete}, {@code default settings})
 * @param workload W1..W4, W3S
 * @param run 1-based run number
 * @param jobs jobs in the run (for a sweep point: the setting N)
 * @param jobsPerS throughput (W1–W3, W3S), or 0
 * @param p50Ms latency percentiles (W4), or 0: from the enqueue call's return to the handler's start, as
 *     the peers measure
 * @param p95Ms 95th percentile (W4)
 * @param p99Ms 99th percentile (W4)
 * @param peakRssMib peak resident memory (VmHWM) of the worker during the run, or 0: for the W3 and W3S
 *     pgjobs rows that of the worker process (the largest, with several), for the sweep that of the bench
 *     JVM, which runs the worker there
 * @param plan for the W3S row on the filled tables: {@code EXPLAIN (ANALYZE, BUFFERS)} of the claim
 *     statement taken on them, as text; absent (not even null) in the JSON of every other row
 * @param p50FromCallMs W4: the same latency from just before the enqueue call (so it includes the
 *     insert's round trip and commit); absent in the JSON of every other row
 * @param p95FromCallMs W4: 95th percentile from the call's start
 * @param p99FromCallMs W4: 99th percentile from the call's start
 * @param stages W4 pgjobs: p50 and p99 in ms of each stage of the pickup (enqueue returned → notification
 *     received → claim returned → lane took the job → handler started), keyed {@code <stage>_p50_ms} and
 *     {@code <stage>_p99_ms}; absent in the JSON of every other row
 */
public record BenchResult(
    String system,
    String variant,
    String workload,
    int run,
    int jobs,
    double jobsPerS,
    double p50Ms,
    double p95Ms,
    double p99Ms,
    double peakRssMib,
    @JsonInclude(JsonInclude.Include.NON_NULL) String plan,
    @JsonInclude(JsonInclude.Include.NON_NULL) Double p50FromCallMs,
    @JsonInclude(JsonInclude.Include.NON_NULL) Double p95FromCallMs,
    @JsonInclude(JsonInclude.Include.NON_NULL) Double p99FromCallMs,
    @JsonInclude(JsonInclude.Include.NON_NULL) Map<String, Double> stages) {

  /** A run without a plan. */
  public BenchResult(
      String system,
      String variant,
      String workload,
      int run,
      int jobs,
      double jobsPerS,
      double p50Ms,
      double p95Ms,
      double p99Ms,
      double peakRssMib) {
    this(
        system,
        variant,
        workload,
        run,
        jobs,
        jobsPerS,
        p50Ms,
        p95Ms,
        p99Ms,
        peakRssMib,
        null,
        null,
        null,
        null,
        null);
  }

  static BenchResult throughput(
      String system, String variant, Workload w, int run, int jobs, long nanos) {
    return new BenchResult(system, variant, w.name(), run, jobs, jobs / (nanos / 1e9), 0, 0, 0, 0);
  }

  /** The same figures, labelled as point {@code n} of a sweep series. */
  BenchResult as(String series, int n) {
    return new BenchResult(
        system,
        series,
        workload,
        run,
        n,
        jobsPerS,
        p50Ms,
        p95Ms,
        p99Ms,
        peakRssMib,
        plan,
        p50FromCallMs,
        p95FromCallMs,
        p99FromCallMs,
        stages);
  }

  BenchResult withPeakRss(double mib) {
    return new BenchResult(
        system,
        variant,
        workload,
        run,
        jobs,
        jobsPerS,
        p50Ms,
        p95Ms,
        p99Ms,
        mib,
        plan,
        p50FromCallMs,
        p95FromCallMs,
        p99FromCallMs,
        stages);
  }

  BenchResult withPlan(String text) {
    return new BenchResult(
        system,
        variant,
        workload,
        run,
        jobs,
        jobsPerS,
        p50Ms,
        p95Ms,
        p99Ms,
        peakRssMib,
        text,
        p50FromCallMs,
        p95FromCallMs,
        p99FromCallMs,
        stages);
  }

  /**
   * The JSON of a line of {@code --out}: snake_case names ({@code jobs_per_s}, {@code p50_ms},
   * {@code peak_rss_mib}, ...), as docs/BENCHMARKS.md documents them.
   */
  public String toJsonLine() {
    return JSON.writeValueAsString(this);
  }

  private static final JsonMapper JSON = JsonMapper.builder()
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .build();

  /** The series this run belongs to. */
  String key() {
    return workload + " " + system + " " + variant;
  }
}
