package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.QueueCounts;
import io.pgjobs.QueueInfo;
import io.pgjobs.testkit.Tags;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Issue 32.3: the hot table keeps the pages its busiest moment needed (vacuum_truncate = false), so a count of
 * its waiting jobs that reads the table sequentially costs what that moment cost, however few jobs are
 * left — 10,482 pages for about 250 jobs, 15–29 ms a call, in the 64-lane harness that asks for the
 * queue depth before every batch. The counts read the ready indexes instead.
 *
 * <p>What a call read is taken from PostgreSQL's own block counters of the table and its indexes
 * ({@code pg_statio_user_tables}), written when the calling session ends: each call runs on a connection
 * of its own, closed after it.
 */
@Tag(Tags.SOAK)
class CountsOnABloatedHotTableTest extends PgJobsTestBase {
  private static final String PROBE = "pgjobs-counts-probe";
  /** The sessions that fill the table: each ends after its work, so its counters are written before the probe. */
  private static final String SETUP = "pgjobs-counts-setup";

  private static final String BLOCKS_TOUCHED =
      "SELECT coalesce(heap_blks_read, 0) + coalesce(heap_blks_hit, 0) + coalesce(idx_blks_read, 0)"
          + " + coalesce(idx_blks_hit, 0) FROM pg_statio_user_tables WHERE relid = 'pgjobs.jobs'::regclass";

  @BeforeEach
  void noAutovacuumReadsTheTableMeanwhile() {
    // An autovacuum or autoanalyze of the table would add its own reads to the counters.
    db.execute("ALTER TABLE pgjobs.jobs SET (autovacuum_enabled = false)");
  }

  @AfterEach
  void autovacuumAsBefore() {
    db.execute("ALTER TABLE pgjobs.jobs RESET (autovacuum_enabled)");
  }

  /**
   * Sessions of their own, one per connection, ended when it is closed: a session writes its block
   * counters to the shared statistics when it ends (a pooled one only now and then, which could land
   * them in the middle of a measurement).
   */
  private static PGSimpleDataSource sessions(String applicationName) {
    PGSimpleDataSource own = new PGSimpleDataSource();
    own.setURL(db.jdbcUrl());
    own.setApplicationName(applicationName);
    return own;
  }

  /** A client whose every call runs in a session of its own ({@link #SETUP}). */
  private static JobClient setupClient() {
    return JobClient.builder(sessions(SETUP)).knownTypes(NUMBERED).build();
  }

  /** Runs {@code statements} in a session of its own ({@link #SETUP}). */
  private static void inOwnSession(String... statements) {
    try (java.sql.Connection c = sessions(SETUP).getConnection();
        java.sql.Statement s = c.createStatement()) {
      for (String statement : statements) {
        s.execute(statement);
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void awaitSessionsEnded(String applicationName) {
    await("the " + applicationName + " sessions have ended")
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
                + applicationName + "'")
            == 0);
  }

  /**
   * Grows the hot table to about 80 MB with a batch that then leaves it (as a drained peak does) and
   * vacuums it: the pages stay, empty. Returns the table's size in pages.
   */
  static long bloat() {
    inOwnSession(
        "INSERT INTO pgjobs.jobs (id, type, queue, payload, priority, state, max_attempts, run_at, created_at)"
            + " SELECT gen_random_uuid(), 'numbered', 'peak', jsonb_build_object('n', g, 'pad', repeat('x', 60)),"
            + " 0, 'queued', 3, now(), now() FROM generate_series(1, 330000) AS g",
        "DELETE FROM pgjobs.jobs",
        "VACUUM pgjobs.jobs");
    long pages = db.queryLong("SELECT pg_relation_size('pgjobs.jobs') / 8192");
    assertThat(pages).as("the drained table's pages").isGreaterThan(9_000);
    return pages;
  }

  /** Runs {@code call} with a client in a session of its own and returns the blocks it touched. */
  private static long blocksTouchedBy(java.util.function.Consumer<JobClient> call) {
    awaitSessionsEnded(SETUP);
    JobClient probe = JobClient.builder(sessions(PROBE)).knownTypes(NUMBERED).build();
    long before = db.queryLong(BLOCKS_TOUCHED);
    call.accept(probe);
    awaitSessionsEnded(PROBE);
    return db.queryLong(BLOCKS_TOUCHED) - before;
  }

  @Test
  void queueDepthReadsTheIndexNotTheEmptyPagesOfTheTable() {
    long pages = bloat();
    setupClient()
        .enqueueAll(NUMBERED, Collections.nCopies(250, new Numbered(1)), EnqueueOptions.DEFAULTS);
    inOwnSession("ANALYZE pgjobs.jobs");

    Map<String, Long>[] depth = new Map[1];
    long touched = blocksTouchedBy(probe -> depth[0] = probe.queueDepth());

    assertThat(depth[0]).isEqualTo(Map.of("default", 250L));
    assertThat(touched)
        .as("blocks of the table and its indexes read for one queueDepth() on %d pages", pages)
        .isLessThan(pages / 20);
  }

  /**
   * The plan itself, not only what one call read: on a table that emptied after a peak the count reads
   * the two ready indexes and never the table sequentially — with the statistics a vacuum leaves (no rows)
   * and with those of an analyze of the few rows left. Plain costs chose the sequential scan here: the
   * planner prices the bloated index's pages as random reads (see {@link AdminSql#READY_DEPTH}).
   */
  @Test
  void queueDepthIsPlannedAsIndexReadsNotASequentialScanOnABloatedNearlyEmptyTable() {
    long pages = bloat();
    JobClient setup = setupClient();
    setup.enqueueAll(NUMBERED, Collections.nCopies(250, new Numbered(1)), EnqueueOptions.DEFAULTS);
    setup.enqueueAll(
        NUMBERED,
        Collections.nCopies(10, new Numbered(2)),
        EnqueueOptions.builder().capability("gpu").build());

    String afterVacuum = explain(JobSql.forSchema(AdminSql.READY_DEPTH, "pgjobs"));
    inOwnSession("ANALYZE pgjobs.jobs");
    String afterAnalyze = explain(JobSql.forSchema(AdminSql.READY_DEPTH, "pgjobs"));

    for (String plan : List.of(afterVacuum, afterAnalyze)) {
      assertThat(plan)
          .as("the plan of queueDepth() on %d pages", pages)
          .doesNotContain("Seq Scan")
          .contains("Index Only Scan using jobs_ready_idx on jobs")
          .contains("Index Only Scan using jobs_ready_capability_idx on jobs");
    }
  }

  /**
   * {@code EXPLAIN} of {@code sql}, its lines joined, in a session of its own ({@link #SETUP}): planning reads
   * index pages (the extremes of {@code run_at}), and a pooled session would write those reads to the
   * counters up to a second later, into another test's measurement.
   */
  private static String explain(String sql) {
    try (java.sql.Connection c = sessions(SETUP).getConnection();
        java.sql.Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery("EXPLAIN " + sql)) {
      StringBuilder plan = new StringBuilder();
      while (rs.next()) {
        plan.append(rs.getString(1)).append('\n');
      }
      return plan.toString();
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The queue overview (behind {@code GET /queues} and the dashboard) and {@code countByQueue()} count the
   * hot table's jobs through its partial indexes too — waiting with and without a capability, scheduled,
   * running — and still tell each state apart.
   */
  @Test
  void queueOverviewAndCountsReadTheIndexesNotTheEmptyPages() {
    long pages = bloat();
    JobClient setup = setupClient();
    setup.enqueueAll(NUMBERED, Collections.nCopies(200, new Numbered(1)), EnqueueOptions.DEFAULTS);
    setup.enqueueAll(
        NUMBERED,
        Collections.nCopies(40, new Numbered(2)),
        EnqueueOptions.builder().delay(Duration.ofHours(1)).build());
    setup.enqueueAll(
        NUMBERED,
        Collections.nCopies(10, new Numbered(3)),
        EnqueueOptions.builder().capability("gpu").build());
    // One running job, as a claim leaves it.
    inOwnSession(
        "UPDATE pgjobs.jobs SET state = 'running', locked_by = 'w', claim_token = 1, heartbeat_at = now(),"
            + " attempts = 1 WHERE id = (SELECT id FROM pgjobs.jobs WHERE capability IS NULL AND run_at <= now() LIMIT 1)");
    setup.pauseQueue("quiet");
    // The statistics as the leader's next vacuum or analyze leaves them: a few hundred rows in many
    // pages.
    inOwnSession("ANALYZE pgjobs.jobs");

    List<QueueInfo>[] queues = new List[1];
    long touchedByOverview = blocksTouchedBy(probe -> queues[0] = probe.queues());
    List<QueueCounts>[] counts = new List[1];
    long touchedByCounts = blocksTouchedBy(probe -> counts[0] = probe.countByQueue());

    assertThat(queues[0]).extracting(QueueInfo::name).containsExactly("default", "quiet");
    QueueInfo main = queues[0].get(0);
    assertThat(main.counts())
        .containsEntry(JobState.QUEUED, 249L)
        .containsEntry(JobState.RUNNING, 1L)
        .containsEntry(JobState.RETRYING, 0L);
    assertThat(main.scheduled()).isEqualTo(40);
    assertThat(main.oldestDueAge()).isNotNull();
    assertThat(queues[0].get(1).paused()).isTrue();
    assertThat(counts[0]).singleElement().satisfies(q -> {
      assertThat(q.count(JobState.QUEUED)).isEqualTo(249);
      assertThat(q.count(JobState.RUNNING)).isEqualTo(1);
      assertThat(q.scheduled()).isEqualTo(40);
    });
    // A read of the table would touch every one of its pages; the overview's index scans touch a
    // few hundred blocks, up to ~1,100 in one CI run of 11,368 pages and 2,646 in another, on a
    // slower machine (the bloated indexes' empty pages are stepped over, but how many depends on
    // where the analyze's sample left the estimates): a third tells them apart.
    assertThat(touchedByOverview)
        .as("blocks of the table and its indexes read for the overview on %d pages", pages)
        .isLessThan(pages / 3);
    assertThat(touchedByCounts)
        .as("blocks of the table and its indexes read for countByQueue() on %d pages", pages)
        .isLessThan(pages / 3);
  }
}
