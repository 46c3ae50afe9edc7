package io.pgjobs.store;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Where one queue's claims have got to, per priority level: a {@code (run_at, id)} position just past
 * which the next claim of that level starts (the last job claimed there, or just before a job found
 * behind it). A claim resumes each known level's index range there instead of at the range's low end.
 *
 * <p>Why: every claimed job leaves its entry in {@code jobs_ready_idx} behind as a dead entry, at the low
 * end of its level's range (jobs are claimed in {@code (run_at, id)} order). Vacuum removes such entries,
 * and index scans mark them dead so later scans skip them cheaply — but neither can while any session
 * holds a snapshot older than them (a long report, a forgotten {@code BEGIN}, a replication slot). A claim
 * that starts at the low end then steps over every job claimed since that snapshot: its cost grows
 * without bound, and with it every job's pickup latency. Resuming past the cursor skips them.
 *
 * <p>What resuming alone would miss — jobs that became due behind the cursor (given back by another
 * worker, enqueued with a {@code run_at} in the past or by a transaction that committed after later jobs
 * were claimed) and priority levels below the highest known one — is found by a <em>probe</em>
 * ({@link ExecutionStore#firstClaimable}): a read-only statement, run outside the claim lock, that
 * returns the first claimable job of every level present. The cursor then moves each level's position
 * back to just before that job if it lay behind the claims when the probe began, and learns new levels
 * ({@link #probed(ProbeStart, Collection, long)}). The probe
 * still steps over the dead entries, but it takes no lock and holds up no claim: claims go on while it
 * runs, so its cost no longer shows in pickup latency. It runs at least every {@link #MIN_PROBE_INTERVAL_NANOS},
 * spaced out to {@link #PROBE_SPACING} times its own duration (at most {@link #MAX_PROBE_INTERVAL_NANOS})
 * when the dead entries make it slow: it then reads most of the hot table and its ready index, which
 * evicts the pages the claims and the completer work on from PostgreSQL's buffers (measured at 5,000
 * jobs/s: probes every second, ten times their duration, let the table's dead rows outgrow the buffers and
 * stalled the completer for seconds; 25 times did not). Jobs this worker gives
 * back itself move its cursor back at once ({@link #rewind}).
 *
 * <p>While the probe is cheap (no long transaction keeps dead entries, {@link #CHEAP_PROBE_NANOS}), a claim
 * also starts from the low end of every level (the <em>full pass</em>) at most once per probe interval, and
 * a resumed claim that found nothing is followed at once by a full pass: a job enqueued by a transaction
 * that committed after later jobs were claimed then starts on its own notification, not at the next
 * probe. A cursor that knows no level (a new worker) always makes a full pass. When the probe is slow,
 * jobs behind the cursor wait for it: at most its interval more.
 *
 * <p>Not thread-safe: one cursor per queue poller, used under its claim lock.
 */
public final class ClaimCursor {
  /** The shortest time between two probes: 1 s. */
  public static final long MIN_PROBE_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
  /** The longest time between two probes, however slow they are: 10 s. */
  public static final long MAX_PROBE_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
  /** A probe's duration times this is the time until the next one (within the bounds above). */
  static final int PROBE_SPACING = 25;
  /**
   * A probe that took at most this long says the low ends of the levels are cheap to read (few dead
   * entries): claims may then start from them as well (a full pass), as often as the probe runs.
   */
  public static final long CHEAP_PROBE_NANOS = TimeUnit.MILLISECONDS.toNanos(3);

  /** A position in a level's range: the next claim of the level starts just past it. */
  record Position(Instant runAt, UUID id) {
    boolean isBefore(Instant otherRunAt, UUID otherId) {
      int byTime = runAt.compareTo(otherRunAt);
      return byTime != 0 ? byTime < 0 : compareUuids(id, otherId) < 0;
    }

    /** The position just before job {@code (runAt, id)}: a claim from it starts with that job. */
    static Position justBefore(Instant runAt, UUID id) {
      long low = id.getLeastSignificantBits();
      long high = id.getMostSignificantBits();
      if (low != 0) {
        return new Position(runAt, new UUID(high, low - 1));
      }
      if (high != 0) {
        return new Position(runAt, new UUID(high - 1, -1L));
      }
      // The smallest uuid: just before it is the largest uuid a microsecond earlier (PostgreSQL's
      // timestamps are exact to the microsecond).
      return new Position(runAt.minus(1, ChronoUnit.MICROS), new UUID(-1L, -1L));
    }
  }

  /** The first claimable job of a priority level, as a probe found it. */
  public record LevelStart(int priority, Instant runAt, UUID id) {}

  /** Priority level (highest first) to position. */
  private final TreeMap<Integer, Position> positions =
      new TreeMap<>(java.util.Comparator.reverseOrder());

  private long lastProbe;
  private long lastProbeDuration;
  private long probeInterval = MIN_PROBE_INTERVAL_NANOS;
  private boolean probedOnce;
  private long lastFullPass;
  private boolean fullPassMadeOnce;

  /**
   * True if the next claim, at {@code nanoTime}, should start from the low end of every level: the cursor
   * knows no level yet, or the last probe was cheap ({@link #CHEAP_PROBE_NANOS}) and no full pass was made
   * within the shortest probe interval. While a long transaction elsewhere makes the low ends expensive,
   * claims only resume and the probe alone looks behind them.
   */
  public boolean fullPassDue(long nanoTime) {
    return positions.isEmpty()
        || (fullPassCheap()
            && (!fullPassMadeOnce || nanoTime - lastFullPass >= MIN_PROBE_INTERVAL_NANOS));
  }

  /** True while the last probe said the low ends of the levels are cheap to read (and before any probe). */
  public boolean fullPassCheap() {
    return lastProbeDuration <= CHEAP_PROBE_NANOS;
  }

  /** Records a full pass made at {@code nanoTime}. */
  void fullPassMade(long nanoTime) {
    lastFullPass = nanoTime;
    fullPassMadeOnce = true;
  }

  /** True if a probe for jobs behind the cursor and for new levels is due at {@code nanoTime}. */
  public boolean probeDue(long nanoTime) {
    return !positions.isEmpty() && (!probedOnce || nanoTime - lastProbe >= probeInterval);
  }

  /** The time between probes now (it follows their cost). */
  public long probeIntervalNanos() {
    return probeInterval;
  }

  /**
   * Where the claims stand when a probe begins, for {@link #probed(ProbeStart, Collection, long)}: take it
   * just before the probe's statement runs.
   */
  public ProbeStart probeStart(long nanoTime) {
    return new ProbeStart(nanoTime, Map.copyOf(positions));
  }

  /** The positions of every level when a probe began, and when. */
  public static final class ProbeStart {
    private final long nanos;
    private final Map<Integer, Position> positions;

    private ProbeStart(long nanos, Map<Integer, Position> positions) {
      this.nanos = nanos;
      this.positions = positions;
    }
  }

  /**
   * Applies a probe that started at {@code startNanos} and took {@code durationNanos}, with no claim made
   * meanwhile (as in a test): {@link #probed(ProbeStart, Collection, long)} from the positions now.
   */
  public void probed(Collection<LevelStart> firsts, long startNanos, long durationNanos) {
    probed(probeStart(startNanos), firsts, durationNanos);
  }

  /**
   * Applies a probe that began at {@code start} and took {@code durationNanos}. A level's position moves
   * back to just before the level's first claimable job only if that job lay at or behind where the claims
   * of the level stood when the probe began: a job ahead of them then was claimable for every claim that
   * has passed its place since (the probe read it in a snapshot taken after it committed), so those claims
   * took it, or skipped it under a row lock held elsewhere, which the next probe finds behind them. Going
   * back for it would only have the next claim step again over what the claims took while the probe ran
   * (measured at 5,000 jobs/s with a transaction open elsewhere: probes of 100–360 ms moved the cursor back
   * as far as their own duration, once before a stall). Levels not known yet are added, starting with
   * their first claimable job; levels the probe did not find are kept (they cost a claim one index probe
   * each; a level that ran dry is likely to return).
   */
  public void probed(ProbeStart start, Collection<LevelStart> firsts, long durationNanos) {
    for (LevelStart first : firsts) {
      Position now = positions.get(first.priority());
      Position then = start.positions.get(first.priority());
      if (now == null) {
        positions.put(first.priority(), Position.justBefore(first.runAt(), first.id()));
      } else if (then != null
          && !then.isBefore(first.runAt(), first.id())
          && !now.isBefore(first.runAt(), first.id())) {
        positions.put(first.priority(), Position.justBefore(first.runAt(), first.id()));
      }
    }
    lastProbe = start.nanos;
    lastProbeDuration = durationNanos;
    probedOnce = true;
    probeInterval = Math.max(
        MIN_PROBE_INTERVAL_NANOS,
        Math.min(MAX_PROBE_INTERVAL_NANOS, durationNanos * PROBE_SPACING));
  }

  /** Jobs this worker gives back: each level's position moves back to just before the earliest of them. */
  public void rewind(List<ClaimedJob> givenBack) {
    for (ClaimedJob job : givenBack) {
      Position p = positions.get(job.priority());
      if (p != null && !p.isBefore(job.runAt(), job.id())) {
        positions.put(job.priority(), Position.justBefore(job.runAt(), job.id()));
      }
    }
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
   * The positions as the resumed claim's parameters ({@code ExecutionSql.CLAIM_RESUME}): the highest known
   * level, and PostgreSQL array literals of the levels, their positions' {@code run_at} (written by
   * {@link #appendInstant}, exact to the microsecond) and ids, highest level first. Built as text, not with
   * {@code Connection.createArrayOf} and {@link Instant#toString}: on an idle worker, whose code is still
   * cold, those were a third of the Java time between a notification and its claim being sent
   * (docs/bench-journal/issue-15-part-3.md, "What is left of an idle worker's pickup").
   */
  ResumeParameters resumeParameters() {
    StringBuilder levels = new StringBuilder("{");
    StringBuilder runAts = new StringBuilder("{");
    StringBuilder ids = new StringBuilder("{");
    for (Map.Entry<Integer, Position> e : positions.entrySet()) {
      if (levels.length() > 1) {
        levels.append(',');
        runAts.append(',');
        ids.append(',');
      }
      levels.append(e.getKey().intValue());
      appendInstant(runAts, e.getValue().runAt());
      ids.append(e.getValue().id());
    }
    return new ResumeParameters(
        positions.firstKey(),
        levels.append('}').toString(),
        runAts.append('}').toString(),
        ids.append('}').toString());
  }

  /** See {@link #resumeParameters()}. */
  record ResumeParameters(int highestLevel, String levels, String runAts, String ids) {}

  /**
   * Appends {@code t} as a timestamp PostgreSQL reads back as exactly the same {@code timestamptz}, in an
   * array literal: {@code yyyy-MM-ddTHH:mm:ss.ffffffZ} (UTC, microseconds), the year padded to four digits
   * and as long as it needs past 9999; a year BC quoted with PostgreSQL's era, {@code "0044-03-15T…Z BC"}
   * (ISO year 0 is 1 BC); and pgJDBC's readings of {@code -infinity} and {@code infinity} (instants far
   * outside the 4714 BC – 294276 AD that PostgreSQL holds) as those words. A {@code run_at} at any of these
   * edges can be written into the table by hand or by another program; a position PostgreSQL could not
   * parse would fail every later claim of the queue. Not {@link Instant#toString()}: PostgreSQL reads
   * neither its sign before a year nor its negative years.
   */
  static void appendInstant(StringBuilder b, Instant t) {
    long second = t.getEpochSecond();
    if (second < FIRST_POSTGRESQL_SECOND) {
      b.append("-infinity");
      return;
    }
    if (second > LAST_POSTGRESQL_SECOND) {
      b.append("infinity");
      return;
    }
    LocalDateTime d = LocalDateTime.ofEpochSecond(second, t.getNano(), ZoneOffset.UTC);
    int year = d.getYear();
    boolean bc = year <= 0;
    int shown = bc ? 1 - year : year;
    if (bc) {
      b.append('"');
    }
    for (int digits = 1000; digits > 1 && shown < digits; digits /= 10) {
      b.append('0');
    }
    b.append(shown).append('-');
    twoDigits(b, d.getMonthValue()).append('-');
    twoDigits(b, d.getDayOfMonth()).append('T');
    twoDigits(b, d.getHour()).append(':');
    twoDigits(b, d.getMinute()).append(':');
    twoDigits(b, d.getSecond()).append('.');
    String micros = Integer.toString(1_000_000 + t.getNano() / 1_000); // "1" and six digits
    b.append(micros, 1, 7).append('Z');
    if (bc) {
      b.append(" BC\"");
    }
  }

  /** PostgreSQL's first {@code timestamptz}, 4714-11-24 00:00:00 UTC BC (ISO year -4713). */
  private static final long FIRST_POSTGRESQL_SECOND =
      LocalDateTime.of(-4713, 11, 24, 0, 0).toEpochSecond(ZoneOffset.UTC);
  /** PostgreSQL's last {@code timestamptz} second, 294276-12-31 23:59:59 UTC. */
  private static final long LAST_POSTGRESQL_SECOND =
      LocalDateTime.of(294276, 12, 31, 23, 59, 59).toEpochSecond(ZoneOffset.UTC);

  private static StringBuilder twoDigits(StringBuilder b, int value) {
    return (value < 10 ? b.append('0') : b).append(value);
  }

  /**
   * PostgreSQL's order of uuids: their 16 bytes compared unsigned, most significant first (Java's
   * {@link UUID#compareTo} compares signed halves, which differs when a half's top bit is set).
   */
  static int compareUuids(UUID a, UUID b) {
    int high = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
    return high != 0
        ? high
        : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
  }
}
