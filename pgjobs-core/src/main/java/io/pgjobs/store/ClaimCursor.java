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
 * every level present), made at least every {@link #FULL_PASS_INTERVAL_NANOS} and whenever the cursor knows
 * no level: jobs that became due behind the cursor (given back by another worker, enqueued with a
 * {@code run_at} in the past, skipped because another worker had them locked and then gave them back) and
 * priority levels this cursor has not seen yet. Such jobs wait at most that long more under load; an
 * idle queue's polls are full passes anyway.
 *
 * <p>Not thread-safe: one cursor per queue poller, used under its claim lock.
 */
public final class ClaimCursor {
  /** The longest time between two full passes: 1 s. */
  public static final long FULL_PASS_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

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
  private boolean fullPassAsked = true;

  /** True if the next claim should be a full pass. */
  public boolean fullPassDue(long nanoTime) {
    return fullPassAsked || positions.isEmpty() || nanoTime - lastFullPass >= FULL_PASS_INTERVAL_NANOS;
  }

  /** The next claim is a full pass (jobs were given back behind the cursor). */
  public void forceFullPass() {
    fullPassAsked = true;
  }

  /** Records a full pass made at {@code nanoTime}. */
  void fullPassMade(long nanoTime) {
    lastFullPass = nanoTime;
    fullPassAsked = false;
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
