package io.pgjobs.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The settings of W5, the sustained-load workload; every field is a flag of {@code run-bench} and
 * {@code pgjobs bench} (see {@link #HELP}). Durations are in seconds; a phase of 0 s is left out.
 *
 * @param rates offered rates (jobs/s), one sustained run each, in order; empty: none
 * @param lanes handler lanes (the worker's concurrency on queue {@code default}) of the sustained runs
 * @param workMs synthetic work per job (the handler parks, taking no CPU); 0 for no-op jobs
 * @param warmupS the warm-up phase (reported, not part of the goal)
 * @param cleanS the clean phase
 * @param idleTxS the first idle-transaction phase: another connection ran {@code BEGIN; SELECT
 *     txid_current();} and stays idle in it until the phase ends
 * @param recoveryS the recovery phase after it
 * @param idleTx2S the second idle-transaction phase
 * @param windowS the length of a window: percentiles, rates, depth and dead tuples per window
 * @param peakLanes lanes of the peak probes, one run each; empty: none
 * @param peakDepth the depth the peak probe's producer keeps
 * @param peakS the measured phase of each peak probe (after its warm-up)
 * @param partitions 0: W5's queue has no limits (the issue-15 test). N > 0: every run and peak probe puts
 *     flow-control limits on the queue ({@link io.pgjobs.QueueLimits}, partitioned by the key given at
 *     enqueue, {@code partitionConcurrency} at a time each) and the producer spreads its jobs over N
 *     partitions, {@code p0} to {@code p<N-1>} in turn; issue 29 asks for the idle-transaction figures
 *     with limits on
 * @param partitionConcurrency most jobs of one partition running at once; ignored when {@code partitions}
 *     is 0
 * @param globalConcurrency 0: none. N > 0: every run and peak probe puts a global concurrency of N on the
 *     queue ({@link io.pgjobs.QueueLimits#globalConcurrency()}), with or without partitions
 */
public record W5Options(
    List<Integer> rates,
    int lanes,
    double workMs,
    double warmupS,
    double cleanS,
    double idleTxS,
    double recoveryS,
    double idleTx2S,
    double windowS,
    List<Integer> peakLanes,
    int peakDepth,
    double peakS,
    int partitions,
    int partitionConcurrency,
    int globalConcurrency) {

  /**
   * The test: 800 and 5,000 jobs/s, 32 lanes of 1 ms jobs, 150/150/120/120 s; peak at 16 and 64
   * lanes; no limits.
   */
  public static final W5Options DEFAULTS = new W5Options(
      List.of(800, 5_000), 32, 1.0, 20, 150, 150, 120, 120, 5, List.of(16, 64), 2_000, 60, 0, 2, 0);

  /** The flags, for {@code --help}. */
  public static final String HELP = """
      W5 (sustained load; only when named: --workload W5) flags, defaults in brackets:
        --rate R[,R...]        offered jobs/s, one run each, or 'none' [800,5000]
        --lanes N              worker lanes (concurrency) of the sustained runs [32]
        --work-ms MS           synthetic work per job (the handler parks) [1]
        --warmup S             warm-up phase [20]
        --clean S              clean phase [150]
        --idle-tx S            phase with another connection idle in a transaction (BEGIN; SELECT txid_current()) [150]
        --recovery S           recovery phase after it [120]
        --idle-tx2 S           second idle-transaction phase [120]   (any phase: 0 leaves it out)
        --window S             window of the per-window table [5]
        --peak-lanes N[,N...]  peak probes: lanes, one run each, or 'none' [16,64]
        --peak-depth N         depth the peak probe keeps [2000]
        --peak S               measured phase of each peak probe, after the warm-up [60]
        --partitions N         limits on W5's queue for each run (QueueLimits partitionBy "partition"),
                               the producer's job i in partition "p" + (i % N); 0: no limits [0]
        --partition-concurrency C  jobs of one partition running at once, with --partitions [2]
        --global-concurrency N limits on W5's queue for each run: at most N of its jobs running at once
                               (QueueLimits globalConcurrency), alone or with --partitions; 0: none [0]
        --chart FILE.png       also draw depth and p99 over time, one PNG per run (FILE-<run>.png)
      Charts from earlier --out files instead of a run (e.g. before and after a change, overlaid):
        --w5-chart before.jsonl,after.jsonl --chart FILE.png
      Full length with the defaults: about 20 min; --runs defaults to 1 for W5.""";

  public W5Options {
    rates = List.copyOf(rates);
    peakLanes = List.copyOf(peakLanes);
    for (int r : rates) {
      check(r >= 1 && r <= 1_000_000, "--rate must be between 1 and 1,000,000 jobs/s, was " + r);
    }
    check(lanes >= 1 && lanes <= 1_000, "--lanes must be between 1 and 1,000, was " + lanes);
    for (int l : peakLanes) {
      check(l >= 1 && l <= 1_000, "--peak-lanes must be between 1 and 1,000, was " + l);
    }
    check(workMs >= 0 && workMs <= 60_000, "--work-ms must be between 0 and 60,000, was " + workMs);
    for (double s : new double[] {warmupS, cleanS, idleTxS, recoveryS, idleTx2S, peakS}) {
      check(s >= 0 && s <= 86_400, "a phase must last between 0 and 86,400 s, was " + s);
    }
    check(
        windowS >= 0.1 && windowS <= 3_600,
        "--window must be between 0.1 and 3,600 s, was " + windowS);
    check(
        peakDepth >= 1 && peakDepth <= 1_000_000,
        "--peak-depth must be between 1 and 1,000,000, was " + peakDepth);
    check(
        partitions >= 0 && partitions <= 100_000,
        "--partitions must be between 0 (no limits) and 100,000, was " + partitions);
    check(
        partitionConcurrency >= 1 && partitionConcurrency <= io.pgjobs.QueueLimits.MAX_CONCURRENCY,
        "--partition-concurrency must be between 1 and 100,000, was " + partitionConcurrency);
    check(
        globalConcurrency >= 0 && globalConcurrency <= io.pgjobs.QueueLimits.MAX_CONCURRENCY,
        "--global-concurrency must be between 0 (none) and 100,000, was " + globalConcurrency);
    check(
        !rates.isEmpty() || !peakLanes.isEmpty(),
        "W5 with --rate none and --peak-lanes none has nothing to run");
  }

  private static void check(boolean ok, String message) {
    if (!ok) {
      throw new IllegalArgumentException(message);
    }
  }

  /** A phase of a run: its name, length, and whether a transaction is held open during it. */
  public record Phase(String name, double seconds, boolean idleTransaction) {}

  /** The phases of a sustained run, in order, those of 0 s left out. */
  public List<Phase> sustainedPhases() {
    List<Phase> phases = new ArrayList<>();
    add(phases, "warm-up", warmupS, false);
    add(phases, "clean", cleanS, false);
    add(phases, "idle-tx", idleTxS, true);
    add(phases, "recovery", recoveryS, false);
    add(phases, "idle-tx-2", idleTx2S, true);
    return phases;
  }

  /** The phases of a peak probe: warm-up and the measured phase. */
  public List<Phase> peakPhases() {
    List<Phase> phases = new ArrayList<>();
    add(phases, "warm-up", warmupS, false);
    add(phases, "peak", peakS, false);
    return phases;
  }

  private static void add(List<Phase> phases, String name, double seconds, boolean idle) {
    if (seconds > 0) {
      phases.add(new Phase(name, seconds, idle));
    }
  }

  /**
   * Applies {@code flag} with {@code value} if it is a W5 flag and returns the new options; returns null
   * if it is not one (the caller's own flags).
   */
  public W5Options with(String flag, String value) {
    Draft d = new Draft(this);
    switch (flag) {
      case "--rate" -> d.rates = ints(flag, value);
      case "--lanes" -> d.lanes = integer(flag, value);
      case "--work-ms" -> d.workMs = number(flag, value);
      case "--warmup" -> d.warmupS = number(flag, value);
      case "--clean" -> d.cleanS = number(flag, value);
      case "--idle-tx" -> d.idleTxS = number(flag, value);
      case "--recovery" -> d.recoveryS = number(flag, value);
      case "--idle-tx2" -> d.idleTx2S = number(flag, value);
      case "--window" -> d.windowS = number(flag, value);
      case "--peak-lanes" -> d.peakLanes = ints(flag, value);
      case "--peak-depth" -> d.peakDepth = integer(flag, value);
      case "--peak" -> d.peakS = number(flag, value);
      case "--partitions" -> d.partitions = integer(flag, value);
      case "--partition-concurrency" -> d.partitionConcurrency = integer(flag, value);
      case "--global-concurrency" -> d.globalConcurrency = integer(flag, value);
      default -> {
        return null;
      }
    }
    return d.build();
  }

  /** The options as fields to change one at a time ({@link #with}); {@link #build} checks them again. */
  private static final class Draft {
    List<Integer> rates;
    int lanes;
    double workMs;
    double warmupS;
    double cleanS;
    double idleTxS;
    double recoveryS;
    double idleTx2S;
    double windowS;
    List<Integer> peakLanes;
    int peakDepth;
    double peakS;
    int partitions;
    int partitionConcurrency;
    int globalConcurrency;

    Draft(W5Options o) {
      rates = o.rates;
      lanes = o.lanes;
      workMs = o.workMs;
      warmupS = o.warmupS;
      cleanS = o.cleanS;
      idleTxS = o.idleTxS;
      recoveryS = o.recoveryS;
      idleTx2S = o.idleTx2S;
      windowS = o.windowS;
      peakLanes = o.peakLanes;
      peakDepth = o.peakDepth;
      peakS = o.peakS;
      partitions = o.partitions;
      partitionConcurrency = o.partitionConcurrency;
      globalConcurrency = o.globalConcurrency;
    }

    W5Options build() {
      return new W5Options(
          rates,
          lanes,
          workMs,
          warmupS,
          cleanS,
          idleTxS,
          recoveryS,
          idleTx2S,
          windowS,
          peakLanes,
          peakDepth,
          peakS,
          partitions,
          partitionConcurrency,
          globalConcurrency);
    }
  }

  /** The W5 flags {@link #with} takes. */
  public static final List<String> FLAGS = List.of(
      "--rate",
      "--lanes",
      "--work-ms",
      "--warmup",
      "--clean",
      "--idle-tx",
      "--recovery",
      "--idle-tx2",
      "--window",
      "--peak-lanes",
      "--peak-depth",
      "--peak",
      "--partitions",
      "--partition-concurrency",
      "--global-concurrency");

  private static List<Integer> ints(String flag, String value) {
    if (value.trim().equalsIgnoreCase("none")) {
      return List.of();
    }
    try {
      return Arrays.stream(value.split(","))
          .map(String::trim)
          .map(v -> v.replace("_", ""))
          .map(Integer::parseInt)
          .toList();
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          flag + " takes whole numbers separated by commas, or 'none'; was '" + value + "'");
    }
  }

  private static int integer(String flag, String value) {
    try {
      return Integer.parseInt(value.trim().replace("_", ""));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(flag + " takes a whole number, was '" + value + "'");
    }
  }

  private static double number(String flag, String value) {
    try {
      return Double.parseDouble(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(flag + " takes a number, was '" + value + "'");
    }
  }

  /** One line for the progress stream. */
  String describe() {
    return String.format(
        Locale.ROOT,
        "rates %s, %d lanes, %.3g ms work, phases %s s, window %.3g s, peak probes %s lanes at depth %d for %.3g s, limits: %s",
        rates,
        lanes,
        workMs,
        sustainedPhases().stream().map(p -> p.name() + " " + p.seconds()).toList(),
        windowS,
        peakLanes,
        peakDepth,
        peakS,
        limitsText(partitions, partitionConcurrency, globalConcurrency));
  }

  /** A run's limits, for the progress and the reports: {@code none} when off. */
  static String limitsText(int partitions, int partitionConcurrency, int globalConcurrency) {
    String partitioned = partitions == 0
        ? null
        : String.format(
            Locale.ROOT, "%,d partitions, %d at a time each", partitions, partitionConcurrency);
    String global = globalConcurrency == 0
        ? null
        : String.format(Locale.ROOT, "global concurrency %,d", globalConcurrency);
    if (partitioned == null && global == null) {
      return "none";
    }
    return partitioned == null
        ? global
        : global == null ? partitioned : global + "; " + partitioned;
  }

  /** True if the runs put limits on W5's queue. */
  boolean limited() {
    return partitions > 0 || globalConcurrency > 0;
  }
}
