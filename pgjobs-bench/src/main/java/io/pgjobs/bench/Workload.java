package io.pgjobs.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The four workloads. Sizes are the DESIGN.md ones; {@code scale} shrinks them for smoke tests. */
public enum Workload {
  /** Bulk enqueue of 100,000 jobs in one call. */
  W1("bulk enqueue", 100_000),
  /** 5,000 single enqueues from one thread. */
  W2("single enqueue", 5_000),
  /** Drain of 50,000 queued no-op jobs by one worker process. */
  W3("drain", 50_000),
  /** Latency from enqueue to handler start, 200 jobs 50 ms apart, idle worker. */
  W4("latency", 200);

  private final String title;
  private final int jobs;

  Workload(String title, int jobs) {
    this.title = title;
    this.jobs = jobs;
  }

  /** What it measures. */
  public String title() {
    return title;
  }

  /** Jobs at full size. */
  public int jobs() {
    return jobs;
  }

  /** Jobs at {@code scale} (0 &lt; scale ≤ 1), at least 10. */
  public int jobs(double scale) {
    return Math.max(10, (int) Math.round(jobs * scale));
  }

  /** Parses {@code W1}..{@code W4} or {@code all}. */
  public static Workload[] parse(String text) {
    if (text != null && text.equalsIgnoreCase("all")) {
      return values();
    }
    try {
      return new Workload[] {valueOf(text.trim().toUpperCase(Locale.ROOT))};
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("unknown workload '" + text + "'; allowed: "
          + Arrays.stream(values()).map(Enum::name).collect(Collectors.joining(", ")) + ", all");
    }
  }
}
