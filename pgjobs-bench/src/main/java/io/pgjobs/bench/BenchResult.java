package io.pgjobs.bench;

/**
 * One measured run of one variant.
 *
 * @param system {@code pgjobs} or {@code raw}
 * @param variant what exactly ran (e.g. {@code copy}, {@code claim1000+delete}, {@code default settings})
 * @param workload W1..W4
 * @param run 1-based run number
 * @param jobs jobs in the run (for a sweep point: the setting N)
 * @param jobsPerS throughput (W1–W3), or 0
 * @param p50Ms latency percentiles (W4), or 0
 * @param p95Ms 95th percentile (W4)
 * @param p99Ms 99th percentile (W4)
 * @param peakRssMib peak resident memory of this process during the run (W3), or 0
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
    double peakRssMib) {

  static BenchResult throughput(String system, String variant, Workload w, int run, int jobs, long nanos) {
    return new BenchResult(system, variant, w.name(), run, jobs, jobs / (nanos / 1e9), 0, 0, 0, 0);
  }

  /** The same figures, labelled as point {@code n} of a sweep series. */
  BenchResult as(String series, int n) {
    return new BenchResult(system, series, workload, run, n, jobsPerS, p50Ms, p95Ms, p99Ms, peakRssMib);
  }

  BenchResult withPeakRss(double mib) {
    return new BenchResult(system, variant, workload, run, jobs, jobsPerS, p50Ms, p95Ms, p99Ms, mib);
  }

  /** The series this run belongs to. */
  String key() {
    return workload + " " + system + " " + variant;
  }
}
