package io.pgjobs.maintenance;

import io.pgjobs.store.WorkerStore;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Vacuums the hot table ({@code jobs}) whenever it holds {@link #MIN_DEAD_ROWS} dead row versions or more,
 * or {@link #SMALL_TABLE_MIN_DEAD_ROWS} or more and twice its live rows ({@link #worthVacuuming}), looked
 * at every {@link #interval()}, instead of waiting for autovacuum.
 *
 * <p>Why: every job leaves about two dead row versions in the hot table (its claim and its finish). At
 * thousands of jobs a second they outrun autovacuum, which looks at each database at most once per
 * {@code autovacuum_naptime} (1 min by default) and is throttled: measured in W5 at 5,000 jobs/s with
 * autovacuum off (and, less often, with it on, before its first pass), claims and completions grew
 * CPU-bound as the dead versions passed ~300,000, completions fell to a tenth of the offered rate and the
 * backlog grew without bound; a {@code VACUUM} of the table every 5 s (50–200 ms each) kept it at
 * ~7 MiB and pickup p99 at 10–20 ms (docs/bench-journal/w5-sustained-load.md). The hot table holds only
 * unfinished jobs, so such a vacuum is short.
 *
 * <p>The vacuum runs on a virtual thread of its own, so a long one does not hold up rescue or recurring
 * schedules; a round finds the previous one still running and waits. While a transaction elsewhere
 * keeps the dead versions from being removed (a vacuum that left more than half of them), vacuuming a
 * table it cannot shrink would only read it again and again: the next vacuum waits until what held the
 * xmin horizon back then (the oldest transaction or snapshot of a session, a replication slot's, a
 * prepared transaction's) no longer does — the moment the long transaction ends — and at most twice as
 * long as the last wait, up to {@link #MAX_BACKOFF}, in case that cannot be seen (another user's sessions
 * without {@code pg_read_all_stats}). A vacuum PostgreSQL refuses (the database user does not own
 * the table) is logged once and not tried again: then autovacuum, or the owner's own schedule, is all the
 * table gets.
 *
 * <p><b>Plans made on a small table.</b> The worker's statements that find jobs by id ({@code id =
 * ANY(...)}: the claim's update, the completer's batches) are prepared, and after five executions
 * PostgreSQL keeps one generic plan per connection, costed with the table's size when it was made. Made
 * on a nearly empty table (a new deployment, a quiet hour, just after a vacuum shrank it), that plan is a
 * sequential scan, and it stays one as the table grows, until a vacuum or an analyze of the table makes
 * every session plan again: each claim then reads the whole table (seen in W5 with
 * {@code auto_explain}: a claim of 44 jobs that scanned 42,765 rows, 10,920 buffers, in the collapse
 * described above). A vacuum of this task re-plans at the size of the day; while vacuums wait (a long
 * transaction) the table may grow a lot, so a table {@link #ANALYZE_GROWTH} times the size the planner
 * last saw, and at least {@link #ANALYZE_MIN_PAGES} pages, is analyzed at once, backoff or not.
 *
 * <p><b>Pages given back after a peak.</b> No vacuum cuts the hot table's empty end pages on its own
 * (the table's {@code vacuum_truncate = false}): the cut takes an exclusive lock, and a table cut small
 * is what sessions re-plan on. So the table keeps the size its busiest moment needed — and everything that
 * reads it whole pays for that size (issue 32.3: 10,482 pages for 250 jobs). Once the table has emptied after a peak (at
 * least {@link #SHRINK_MIN_PAGES} pages, fewer live rows than one per {@link #SHRINK_PAGES_PER_LIVE_ROW}
 * pages: far more than any steady rate keeps in use), this task's vacuum cuts them
 * ({@code TRUNCATE true}), at most once per {@link #SHRINK_INTERVAL}. Why this is safe where autovacuum's
 * cut was not: PostgreSQL takes the lock for the cut only when it is free at once and gives it up as
 * soon as a claim waits for it (see {@code WorkerSql.VACUUM_HOT_TABLE_GIVING_PAGES_BACK}); under
 * steady claims it gets no gap and keeps the pages. And a table that grows again after the cut is
 * re-planned by the analyze on growth above.
 */
final class HotTableVacuum implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(HotTableVacuum.class);
  /** Fewer dead row versions than this are left to autovacuum: a vacuum would cost more than it saves. */
  static final long MIN_DEAD_ROWS = 10_000;
  /**
   * ... unless there are at least this many and twice as many as live rows: a small table mostly dead, as
   * a quiet queue's is after a burst. Each job that comes next is claimed alone, and its claim steps over
   * those versions and inserts into index pages full of them: after 3,000 jobs (about 6,000 dead versions,
   * under {@link #MIN_DEAD_ROWS}, and under autovacuum's threshold of 5,000 plus 1 % until its next look),
   * an idle worker's claim executed in 0.46 ms against 0.19 on a vacuumed table
   * (docs/bench-journal/per-job-cost.md). Vacuuming a table that small takes milliseconds.
   */
  static final long SMALL_TABLE_MIN_DEAD_ROWS = 1_000;
  /** The longest wait after vacuums that could not remove what they found. */
  static final Duration MAX_BACKOFF = Duration.ofMinutes(1);
  /** A table this many times the size the planner last saw is analyzed (see the class comment). */
  static final int ANALYZE_GROWTH = 4;
  /** ... once it has at least this many pages (1 MiB): below, a sequential scan costs next to nothing. */
  static final long ANALYZE_MIN_PAGES = 128;
  /**
   * A table smaller than this (32 MiB) keeps its pages: W5's table at 5,000 jobs/s stayed at 7–17 MB, so
   * a steady rate never has its pages cut and grown again.
   */
  static final long SHRINK_MIN_PAGES = 4_096;
  /** A table with fewer live rows than one per this many pages has emptied (a page holds 20–40 jobs). */
  static final long SHRINK_PAGES_PER_LIVE_ROW = 8;
  /** The shortest time between two vacuums that give pages back (a cut may find live rows at the end). */
  static final Duration SHRINK_INTERVAL = Duration.ofMinutes(1);

  private final WorkerStore store;
  private final Duration interval;
  private volatile Thread inFlight;
  private volatile boolean refused;
  /** Set by the vacuum thread; read by the maintenance thread. */
  private volatile long waitUntil;

  private volatile long backoffNanos;
  /** What held the horizon back when a vacuum removed little (null: not known, or no such vacuum). */
  private volatile String blockedBy;
  /** When the next vacuum that gives pages back may start (nanoTime; read and set by the maintenance thread). */
  private long shrinkAllowedFrom;

  /** The shortest time between two vacuums that give pages back: {@link #SHRINK_INTERVAL}. */
  private final Duration shrinkInterval;

  HotTableVacuum(WorkerStore store, Duration interval) {
    this(store, interval, SHRINK_INTERVAL);
  }

  /**
   * With another time between two cuts: a test that watches a table shrink under a steady trickle of
   * claims needs several cuts (each stops at the last page still in use) within its deadline.
   */
  HotTableVacuum(WorkerStore store, Duration interval, Duration shrinkInterval) {
    this.store = store;
    this.interval = interval;
    this.shrinkInterval = shrinkInterval;
    this.waitUntil =
        System.nanoTime(); // not 0: nanoTime may be negative, and is compared by difference
    this.shrinkAllowedFrom = waitUntil;
  }

  @Override
  public String name() {
    return "vacuum";
  }

  @Override
  public Duration interval() {
    return interval;
  }

  @Override
  public void run() throws SQLException {
    Thread running = inFlight;
    if (refused || (running != null && running.isAlive())) {
      return;
    }
    WorkerStore.HotTable table = store.hotTable();
    if (table.pages() >= ANALYZE_MIN_PAGES
        && table.pages() >= ANALYZE_GROWTH * Math.max(1, table.plannedPages())) {
      // Checked before the backoff: a table that grows while a long transaction holds its dead
      // versions is the case this is for.
      inFlight = Thread.ofVirtual().name("pgjobs-analyze").start(this::analyze);
      return;
    }
    if (System.nanoTime() - waitUntil < 0) {
      String holder = blockedBy;
      if (holder == null || holder.equals(store.horizonHolder())) {
        return; // still held back (or cannot tell): wait out the backoff
      }
    }
    long dead = table.deadRows();
    boolean givePagesBack = emptied(table) && System.nanoTime() - shrinkAllowedFrom >= 0;
    if (!worthVacuuming(table) && !givePagesBack) {
      return;
    }
    if (givePagesBack) {
      shrinkAllowedFrom = System.nanoTime() + shrinkInterval.toNanos();
    }
    inFlight = Thread.ofVirtual()
        .name("pgjobs-vacuum")
        .start(() -> vacuum(dead, givePagesBack ? table.pages() : -1));
  }

  /**
   * Whether the table's dead row versions are worth a vacuum: {@link #MIN_DEAD_ROWS} or more, or
   * {@link #SMALL_TABLE_MIN_DEAD_ROWS} or more and at least twice its live rows.
   */
  static boolean worthVacuuming(WorkerStore.HotTable table) {
    long dead = table.deadRows();
    return dead >= MIN_DEAD_ROWS
        || (dead >= SMALL_TABLE_MIN_DEAD_ROWS && dead >= 2 * table.liveRows());
  }

  /** Whether the table has emptied after a peak: its pages are worth giving back (see the class comment). */
  static boolean emptied(WorkerStore.HotTable table) {
    return table.pages() >= SHRINK_MIN_PAGES
        && table.liveRows() * SHRINK_PAGES_PER_LIVE_ROW < table.pages();
  }

  private void analyze() {
    try {
      WorkerStore.Vacuum analyze = store.analyzeHotTable();
      if (analyze.outcome() == WorkerStore.VacuumOutcome.REFUSED) {
        refused = true;
        log.info(
            "not analyzing the hot table: PostgreSQL refused ({}); autovacuum keeps it",
            analyze.warning());
      }
    } catch (SQLException | RuntimeException e) {
      log.warn("hot table analyze failed: {}", e.getMessage());
    }
  }

  /** True while a vacuum or analyze started by this task runs (tests). */
  boolean vacuuming() {
    Thread running = inFlight;
    return running != null && running.isAlive();
  }

  /** True once PostgreSQL refused a vacuum of the table: none is tried again (tests). */
  boolean refused() {
    return refused;
  }

  /** Vacuums the table; {@code pagesBefore} is -1, or its size when this vacuum is to give pages back. */
  private void vacuum(long deadBefore, long pagesBefore) {
    long start = System.nanoTime();
    try {
      WorkerStore.Vacuum vacuum =
          pagesBefore < 0 ? store.vacuumHotTable() : store.vacuumHotTableGivingPagesBack();
      switch (vacuum.outcome()) {
        case REFUSED -> {
          refused = true;
          log.info(
              "not vacuuming the hot table: PostgreSQL refused ({}); autovacuum keeps it",
              vacuum.warning());
          return;
        }
        case LOCKED -> {
          log.debug(
              "hot table vacuum skipped: another session holds the table ({})", vacuum.warning());
          return;
        }
        case VACUUMED -> {
          // Nothing to do here: what it removed is judged below.
        }
      }
      WorkerStore.HotTable after = store.hotTable();
      long deadAfter = after.deadRows();
      long took = System.nanoTime() - start;
      if (pagesBefore >= 0) {
        // None given back: live rows at the table's end, or claims that left the lock no gap for 5
        // s.
        log.info(
            "hot table vacuum in {} ms gave back {} of its {} pages ({} left)",
            took / 1_000_000,
            Math.max(0, pagesBefore - after.pages()),
            pagesBefore,
            after.pages());
      }
      // A vacuum for the pages alone (few dead rows before) is not judged by what it removed.
      if (deadBefore >= SMALL_TABLE_MIN_DEAD_ROWS && deadAfter * 2 > deadBefore) {
        // A transaction elsewhere holds the dead versions: wait longer before reading the table
        // again.
        backoffNanos =
            Math.min(MAX_BACKOFF.toNanos(), Math.max(interval.toNanos(), backoffNanos * 2));
        blockedBy = store.horizonHolder();
        waitUntil = System.nanoTime() + backoffNanos;
        log.debug(
            "hot table vacuum in {} ms removed little ({} of {} dead row versions left); next in {} s at the"
                + " earliest",
            took / 1_000_000,
            deadAfter,
            deadBefore,
            backoffNanos / 1_000_000_000);
      } else {
        backoffNanos = 0;
        blockedBy = null;
        log.debug(
            "hot table vacuum in {} ms: {} dead row versions before, {} left",
            took / 1_000_000,
            deadBefore,
            deadAfter);
      }
    } catch (SQLException | RuntimeException e) {
      log.warn("hot table vacuum failed: {}", e.getMessage());
    }
  }
}
