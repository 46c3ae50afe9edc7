package io.pgjobs.store;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Where one queue's claims have got to, per priority level: the {@code (run_at, id)} of the last job
 * claimed at that level. A claim resumes each known level's index range just past it instead of at the
 * range's low end.
 *
 * <p>Why: every claimed job leaves its entry in {@code jobs_ready_idx} behind as a dead entry, at the low
 * end of its level's range (jobs are claimed in {@code (run_at, id)} order). Vacuum removes such entries,
 * and index scans mark them dead so later scans skip them cheaply — but neither can while any session
 * holds a snapshot older than them (a long report, a forgotten {@code BEGIN}, a replication slot). A claim
 * that starts at the low end then steps over every job claimed since that snapshot: its cost grows
 * without bound, and with it every job's pickup latency. Resuming past the cursor skips them.
 *
 * <p>What resuming alone would miss is found by a <em>full pass</em> (the claim from the low end of
 * every level present), made at least every {@link #fullPassInterval() full-pass interval} and whenever
 * the cursor knows no level: jobs that became due behind the cursor (given back by another worker,
 * enqueued with a {@code run_at} in the past, skipped because another worker had them locked and then gave
 * them back) and priority levels this cursor has not seen yet. Such jobs wait at most that long more under
 * load; an idle queue's polls are full passes anyway.
 *
 * <p>The interval adapts to what a full pass costs. A full pass is exactly the claim that still steps over
 * the dead entries, and the queue's claims wait for it: at 200,000 dead entries one takes tens of
 * milliseconds, and made every second it would delay a few percent of all jobs by that much — the pickup
 * p99 would creep up with the dead entries after all. So the interval is {@value #FULL_PASS_COST_FACTOR}
 * times the last full pass's duration (full passes take at most ~1 % of the poller's time), never less
 * than {@link #MIN_FULL_PASS_INTERVAL_NANOS} (1 s) and never more than {@link #MAX_FULL_PASS_INTERVAL_NANOS}
 * (10 s), the longest a job behind the cursor can wait under load.
 *
 * <p>Not thread-safe: one cursor per queue poller, used under its claim lock.
 */
public final class ClaimCursor {
  /** The shortest time between two full passes under load: 1 s (a cheap full pass is made this often). */
  public static final long MIN_FULL_PASS_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** The longest time between two full passes under load: 10 s, however slow a full pass has become. */
  public static final long MAX_FULL_PASS_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);

  /** The interval is this many times the last full pass's duration (within the bounds above). */
  static final int FULL_PASS_COST_FACTOR = 100;

  /** A position in a level's range: the last job claimed there. */
  record Position(Instant runAt, UUID id) {
    boolean isBefore(Instant otherRunAt, UUID otherId) {
      int byTime = runAt.compareTo(otherRunAt);
      return byTime != 0 ? byTime < 0 : compareUuids(id, otherId) < 0;
    }
  }

  /** Priority level (highest first) to position. */
  private final TreeMap<Integer, Position> positions = new TreeMap<>(java.util.Comparator.reverseOrder());
  private long lastFullPass;
  private long interval = MIN_FULL_PASS_INTERVAL_NANOS;
  private boolean fullPassAsked = true;

  /** True if the next claim should be a full pass. */
  public boolean fullPassDue(long nanoTime) {
    return fullPassAsked || positions.isEmpty() || nanoTime - lastFullPass >= interval;
  }

  /** The time from one full pass to the next under load, in nanoseconds, as the last full pass set it. */
  public long fullPassInterval() {
    return interval;
  }

  /** The next claim is a full pass (jobs were given back behind the cursor). */
  public void forceFullPass() {
    fullPassAsked = true;
  }

  /**
   * Records a full pass started at {@code startNanos} that returned at {@code endNanos}, and sets the
   * interval to the next one from its duration.
   */
  void fullPassMade(long startNanos, long endNanos) {
    lastFullPass = startNanos;
    fullPassAsked = false;
    long took = Math.max(0, endNanos - startNanos);
    interval = took >= MAX_FULL_PASS_INTERVAL_NANOS / FULL_PASS_COST_FACTOR
        ? MAX_FULL_PASS_INTERVAL_NANOS
        : Math.max(MIN_FULL_PASS_INTERVAL_NANOS, took * FULL_PASS_COST_FACTOR);
  }

  /** Moves each level's position past the jobs just claimed. */
  void advance(List<ClaimedJob> claimed) {
    for (ClaimedJob job : claimed) {
      Position p = positions.get(job.priority());
      if (p == null || p.isBefore(job.runAt(), job.id())) {
        positions.put(job.priority(), new Position(job.runAt(), job.id()));
      }
    }
  }

  /** The known levels and their positions, highest priority first. */
  Map<Integer, Position> positions() {
    return positions;
  }

  /**
   * PostgreSQL's order of uuids: their 16 bytes compared unsigned, most significant first (Java's
   * {@link UUID#compareTo} compares signed halves, which differs when a half's top bit is set).
   */
  static int compareUuids(UUID a, UUID b) {
    int high = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
    return high != 0 ? high : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
  }
}
