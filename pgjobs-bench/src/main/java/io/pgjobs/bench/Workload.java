package io.pgjobs.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The workloads. Sizes are the DESIGN.md ones; {@code scale} shrinks them for smoke tests. {@code all}
 * means W1–W4; W3S, which fills millions of rows first, runs only when named.
 */
public enum Workload {
  /** Bulk enqueue of 100,000 jobs in one call. */
  W1("bulk enqueue", 100_000),
  /** 5,000 single enqueues from one thread. */
  W2("single enqueue", 5_000),
  /** Drain of 50,000 queued no-op jobs by one worker process, then by two. */
  W3("drain", 50_000),
  /**
   * W3 at scale: the drain of 50,000 due jobs with 5,000,000 scheduled jobs in the hot table and
   * 1,000,000 finished ones, against the same drain on empty tables in the same run.
   */
  W3S("drain, 5M scheduled + 1M finished jobs in the tables", 50_000, false),
  /**
   * W3 under flow control (issue 29): the one-process drain of 50,000 no-op jobs without limits (the
   * reference, same run), with a global concurrency above the worker's lanes, and with 1,000 partitions
   * each limited to 2 at a time. Only when named.
   */
  W3L("drain under flow control", 50_000, false),
  /**
   * Job graphs (issue 30), only when named: the one-process drain of 50,000 no-op jobs without
   * dependencies (the reference, same run), then of the same number as one graph of each shape — 1,000
   * chains of 50, a fan-out (one root, every other job its child), a fan-in (every job but one its parent)
   * and 50 layers of 1,000 with two parents each in the layer before — then the unblock floor (the same
   * number stored blocked, made queued by one UPDATE on the clock, then drained) and the enqueue of a graph
   * 20 times that size (1,000,000 jobs at full size: 1,000 layers of 1,000).
   * {@code -Dpgjobs.bench.graphShapes=CHAINS,FLOOR} runs only the named shapes, without the large enqueue.
   */
  W3G("drain of job graphs", 50_000, false),
  /**
   * The history at scale (issue 31, section 3), only when named: the one-process drain of 50,000 no-op
   * jobs on an empty history (the reference, same run); then 100,000,000 finished jobs written into 25
   * past 1-hour partitions ({@link HistoryFill}); the job list's filters and a lookup by id timed over
   * them ({@link HistoryProbe}); the same drain again; and the retention's work for a day: one hour
   * deleted row by row as before V7, then a day of partitions dropped whole.
   */
  W3H("drain and reads over a history of 100M finished jobs, and its pruning", 50_000, false),
  /** Latency from enqueue to handler start, 200 jobs 50 ms apart, idle worker. */
  W4("latency", 200),
  /**
   * Sustained load (about 20 min with the defaults, only when named): a producer process offering a fixed
   * rate, a worker process, phases with and without an idle transaction; see {@link W5Options}.
   */
  W5("sustained load, idle transaction", 0, false);

  private final String title;
  private final int jobs;
  private final boolean inAll;

  Workload(String title, int jobs) {
    this(title, jobs, true);
  }

  Workload(String title, int jobs, boolean inAll) {
    this.title = title;
    this.jobs = jobs;
    this.inAll = inAll;
  }

  /** Whether {@code all} includes it. */
  public boolean inAll() {
    return inAll;
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

  /** Parses {@code W1}..{@code W5}, {@code W3S} or {@code all} (W1–W4). */
  public static Workload[] parse(String text) {
    if (text != null && text.equalsIgnoreCase("all")) {
      return Arrays.stream(values()).filter(Workload::inAll).toArray(Workload[]::new);
    }
    try {
      return new Workload[] {valueOf(text.trim().toUpperCase(Locale.ROOT))};
    } catch (RuntimeException e) {
      // The workloads of "all" first, so the message starts as it did before W3S existed.
      throw new IllegalArgumentException("unknown workload '" + text + "'; allowed: "
          + Arrays.stream(values())
              .filter(Workload::inAll)
              .map(Enum::name)
              .collect(Collectors.joining(", "))
          + ", all"
          + Arrays.stream(values())
              .filter(w -> !w.inAll())
              .map(w -> ", " + w.name() + " (not in all)")
              .collect(Collectors.joining()));
    }
  }
}
