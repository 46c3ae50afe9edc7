package io.pgjobs.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.WorkerStore;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The history ({@code finished_jobs}) is partitioned by the time a job finished and pruned by dropping
 * whole partitions past the retention (V7__partitioned_history.sql, {@link FinishedJobPruner}). Each test
 * class has a database of its own, so these tests may drop the partitions every other test writes to.
 */
class HistoryPartitionsTest extends PgJobsTestBase {
  private static final String ROW = """
      INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                                        run_at, created_at, errors, finished_at)
      VALUES (gen_random_uuid(), 'numbered', 'default', '{}', 0, 'succeeded', 1, 1, %1$s, %1$s, '[]', %1$s)""";

  /** Each test starts from the partitions a fresh migration makes now: this hour's and two ahead. */
  @BeforeEach
  void freshPartitions() {
    dropEveryPartition();
    db.execute("SELECT pgjobs.ensure_history_partitions(interval '1 hour', interval '2 hours')");
  }

  private static void dropEveryPartition() {
    db.execute("""
        DO $$
        DECLARE p text;
        BEGIN
          FOR p IN SELECT partition_name FROM pgjobs.history_partitions()
                   UNION ALL SELECT pgjobs.detached_history_tables() LOOP
            EXECUTE format('DROP TABLE pgjobs.%I', p);
          END LOOP;
        END
        $$""");
  }

  private static WorkerStore store() {
    return new WorkerStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
  }

  /** Enqueues a job with an idempotency key (a side row its partition's drop must delete). */
  private static UUID keyed(int n, String key) {
    return client
        .enqueue(
            NUMBERED,
            new Numbered(n),
            EnqueueOptions.builder().idempotencyKey(key).build())
        .job()
        .id();
  }

  /**
   * Moves a finished job 36 hours back, into a partition of two days ago to one day ago made for it (as a
   * day-old history would have it): past the 24 h retention as a whole.
   */
  private static void agedIntoAPartitionOfTwoDaysAgo(UUID finished) {
    db.execute(
        "CREATE TABLE pgjobs.finished_jobs_aged PARTITION OF pgjobs.finished_jobs FOR VALUES"
            + " FROM (now() - interval '2 days') TO (now() - interval '1 day')",
        "UPDATE pgjobs.finished_jobs SET finished_at = now() - interval '36 hours' WHERE id = '"
            + finished + "'");
  }

  /** A history row finished at the timestamptz expression {@code at}. */
  private static void finishedAt(String at) {
    db.execute(ROW.formatted(at));
  }

  private static long rowsAt(String at) {
    return db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs WHERE finished_at = " + at);
  }

  /**
   * The partitions' bounds as text in UTC, oldest first, read in a session of the given time zone and
   * DateStyle. The JDBC driver refuses a session DateStyle other than ISO, so the settings are those of a
   * temporary function, which the server does not report to the driver.
   */
  private static List<String> bounds(String timeZone, String dateStyle) throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = DriverManager.getConnection(db.jdbcUrl());
        Statement st = c.createStatement()) {
      st.execute("""
          CREATE FUNCTION pg_temp.bounds() RETURNS SETOF text LANGUAGE sql
              SET timezone = '%s' SET datestyle = '%s'
          AS $$
              SELECT partition_name || ' ' || to_char(lo AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')
                     || ' ' || to_char(hi AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')
                FROM pgjobs.history_partitions() ORDER BY hi
          $$""".formatted(timeZone, dateStyle));
      try (ResultSet rs = st.executeQuery("SELECT * FROM pg_temp.bounds()")) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
    }
    return out;
  }

  @Test
  void aPartitionIsDroppedOnlyWhenItsUpperBoundIsPastTheCutoffAndTheRowAtTheBoundStays() {
    db.execute("SELECT pgjobs.ensure_history_partitions(interval '1 hour', interval '3 hours')");
    // This hour's partition [h, h + 1 h): a row at its lower bound, one a microsecond before its
    // upper bound; and one at the upper bound itself, which is the next partition's.
    String h = "date_bin('1 hour', now(), timestamptz '2000-01-01 00:00:00+00')";
    String justBefore = "(" + h + " + interval '1 hour' - interval '1 microsecond')";
    String bound = "(" + h + " + interval '1 hour')";
    finishedAt(h);
    finishedAt(justBefore);
    finishedAt(bound);

    assertThat(
            db.queryLong("SELECT count(*) FROM pgjobs.drop_history_partition(" + justBefore + ")"))
        .as(
            "a cutoff a microsecond before the upper bound: the row there is still kept, nothing dropped")
        .isZero();
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs")).isEqualTo(3);

    // Partitions before this hour's (none after the migration's first ones, which start this hour
    // or earlier) go first, one per call, oldest first.
    long dropped = 0;
    while (db.queryLong("SELECT count(*) FROM pgjobs.drop_history_partition(" + bound + ")") == 1) {
      dropped++;
    }
    assertThat(dropped).isGreaterThanOrEqualTo(1);
    assertThat(rowsAt(h)).as("past the cutoff: dropped").isZero();
    assertThat(rowsAt(justBefore)).as("past the cutoff: dropped").isZero();
    assertThat(rowsAt(bound)).as("at the cutoff: kept, in the next partition").isEqualTo(1);
    assertThat(
            db.queryLong("SELECT count(*) FROM pgjobs.history_partitions() WHERE hi <= " + bound))
        .isZero();
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.history_partitions() WHERE lo = " + bound))
        .isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs_default"))
        .as("every row was in a partition of its own hour")
        .isZero();
  }

  @Test
  void partitionsAreAlignedOnUtcAndReadTheSameFromEverySessionTimeZoneAndDateStyle()
      throws Exception {
    // Made from a session far from UTC with a day-first DateStyle, on a history with no partition
    // yet:
    // a day's partition starts at 00:00 UTC.
    dropEveryPartition();
    // A job finished at midnight in Kathmandu (+05:45) is 18:15 UTC the day before: that UTC day's.
    try (Connection c = DriverManager.getConnection(db.jdbcUrl());
        Statement st = c.createStatement()) {
      st.execute("""
          CREATE FUNCTION pg_temp.make() RETURNS void LANGUAGE plpgsql
              SET timezone = 'Asia/Kathmandu' SET datestyle = 'SQL, DMY'
          AS $$
          BEGIN
              PERFORM pgjobs.ensure_history_partitions(interval '1 day', interval '3 days');
              EXECUTE format('%s',
                  (date_trunc('day', now() AT TIME ZONE 'Asia/Kathmandu') + interval '1 day')
                      AT TIME ZONE 'Asia/Kathmandu');
          END
          $$""".formatted(ROW.formatted("%1$L::timestamptz").replace("'", "''")));
      st.execute("SELECT pg_temp.make()");
    }
    List<String> utc = bounds("UTC", "ISO, YMD");
    assertThat(bounds("America/St_Johns", "SQL, DMY")).isEqualTo(utc); // -03:30
    assertThat(bounds("Pacific/Chatham", "German")).isEqualTo(utc); // +13:45
    assertThat(bounds("Asia/Kathmandu", "Postgres, MDY")).isEqualTo(utc);
    // Whole UTC days.
    List<String> days =
        utc.stream().filter(b -> b.endsWith("00:00") && b.contains(" 00:00 ")).toList();
    assertThat(days).as("day partitions from 00:00 UTC to 00:00 UTC: %s", utc).isNotEmpty();
    for (String b : days) {
      String[] parts = b.split(" ");
      assertThat(Instant.parse(parts[3] + "T" + parts[4] + ":00Z"))
          .isEqualTo(Instant.parse(parts[1] + "T" + parts[2] + ":00Z").plus(Duration.ofDays(1)));
    }
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs_default"))
        .as("the Kathmandu midnight row found its UTC day's partition")
        .isZero();
    assertThat(db.queryLong(
            "SELECT count(*) FROM pgjobs.finished_jobs f JOIN pg_class c ON c.oid = f.tableoid"
                + " JOIN pgjobs.history_partitions() p ON p.partition_name = c.relname"
                + " WHERE extract(hour FROM p.lo AT TIME ZONE 'UTC') = 0"
                + " AND p.hi - p.lo = interval '1 day'"
                + " AND f.finished_at >= p.lo AND f.finished_at < p.hi"))
        .isEqualTo(1);
  }

  @Test
  void thePrunerDropsThePartitionsPastRetentionWithTheirJobsSideRowsAndKeepsTheRest()
      throws Exception {
    WorkerStore store = store();
    // Two jobs finish now with an idempotency key each; one of them is then aged 36 h into a
    // partition of two days ago (made here as a day-old history would have it).
    UUID old = keyed(1, "old-key");
    UUID recent = keyed(2, "recent-key");
    // Without maintenance: this test's own pass is the only pruner (a leader's pass running beside
    // it could be between its detach and its drop when the assertions look).
    start(worker().maintenance(false).register(NUMBERED, (ctx, p) -> null));
    awaitState(old, JobState.SUCCEEDED);
    awaitState(recent, JobState.SUCCEEDED);
    agedIntoAPartitionOfTwoDaysAgo(old);
    // And one row no partition covers: it lands in the default partition, pruned row by row.
    finishedAt("timestamptz '2001-01-01 00:00:00+00'");
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs_default"))
        .isEqualTo(1);

    // A partition an earlier pass detached and did not drop (its process died in between).
    db.execute(
        "CREATE TABLE pgjobs.finished_jobs_leftover PARTITION OF pgjobs.finished_jobs FOR VALUES"
            + " FROM ('2000-01-01 00:00:00+00') TO ('2000-01-01 01:00:00+00')",
        "ALTER TABLE pgjobs.finished_jobs DETACH PARTITION pgjobs.finished_jobs_leftover");

    new FinishedJobPruner(store, Duration.ofHours(24), Duration.ofMinutes(1)).run();

    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_class WHERE oid IN"
                    + " (to_regclass('pgjobs.finished_jobs_aged'), to_regclass('pgjobs.finished_jobs_leftover'))"))
        .as("detached, then dropped in a statement of its own; the leftover dropped too")
        .isZero();

    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.history_partitions()"
            + " WHERE partition_name = 'finished_jobs_aged'"))
        .as("its every row is past the 24 h retention: dropped whole")
        .isZero();
    assertThat(client.get(old)).isEmpty();
    assertThat(
            db.queryLong("SELECT count(*) FROM pgjobs.job_keys WHERE idempotency_key = 'old-key'"))
        .as("its job's idempotency key went with it")
        .isZero();
    assertThat(client.get(recent).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
    assertThat(db.queryLong(
            "SELECT count(*) FROM pgjobs.job_keys WHERE idempotency_key = 'recent-key'"))
        .isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs_default"))
        .as("the default partition's row past retention, deleted")
        .isZero();
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.history_partitions() WHERE hi > now()"))
        .as("partitions made ahead for the width 24 h asks for (1 h)")
        .isGreaterThanOrEqualTo(3);
  }

  @Test
  void aPassThatCannotHaveTheHistorysLockWithin200MsChangesNothingAndTheNextPassDrops()
      throws Exception {
    WorkerStore store = store();
    UUID old = keyed(1, "locked-key");
    start(worker().maintenance(false).register(NUMBERED, (ctx, p) -> null));
    awaitState(old, JobState.SUCCEEDED);
    agedIntoAPartitionOfTwoDaysAgo(old);
    // Every partition the pass would make exists already, so the detach is the statement that
    // waits.
    db.execute("SELECT pgjobs.ensure_history_partitions(interval '1 hour', interval '4 hours')");
    FinishedJobPruner pruner =
        new FinishedJobPruner(store, Duration.ofHours(24), Duration.ofMinutes(1));

    // A reader in an open transaction (a report, a pg_dump) holds ACCESS SHARE on the history.
    try (Connection reader = DriverManager.getConnection(db.jdbcUrl())) {
      reader.setAutoCommit(false);
      try (Statement st = reader.createStatement()) {
        st.executeQuery("SELECT count(*) FROM pgjobs.finished_jobs").close();
      }
      long started = System.nanoTime();
      pruner.run(); // does not throw: the lock's timeout waits for the next pass
      assertThat(Duration.ofNanos(System.nanoTime() - started))
          .as("the pass gave up the lock after its 200 ms timeout, not at the reader's commit")
          .isLessThan(Duration.ofSeconds(20));
      assertThat(db.queryLong("SELECT count(*) FROM pgjobs.history_partitions()"
              + " WHERE partition_name = 'finished_jobs_aged'"))
          .as("still attached")
          .isEqualTo(1);
      assertThat(client.get(old)).as("its job still readable").isPresent();
      assertThat(db.queryLong(
              "SELECT count(*) FROM pgjobs.job_keys WHERE idempotency_key = 'locked-key'"))
          .as("the side rows deleted before the detach were rolled back with it")
          .isEqualTo(1);
      reader.commit();
    }

    pruner.run();
    assertThat(db.queryLong("SELECT count(*) FROM pg_class"
            + " WHERE oid = to_regclass('pgjobs.finished_jobs_aged')"))
        .as("the next pass detached and dropped it")
        .isZero();
    assertThat(client.get(old)).isEmpty();
    assertThat(db.queryLong(
            "SELECT count(*) FROM pgjobs.job_keys WHERE idempotency_key = 'locked-key'"))
        .isZero();
  }

  /** The overview's counts equal a count of the whole history, queue by queue and state by state. */
  private static void assertOverviewIsExact() {
    assertThat(db.queryLong("""
            SELECT count(*) FROM (
                (SELECT queue, state, jobs FROM pgjobs.history_overview()
                 EXCEPT SELECT queue, state, count(*) FROM pgjobs.finished_jobs GROUP BY 1, 2)
                UNION ALL
                (SELECT queue, state, count(*) FROM pgjobs.finished_jobs GROUP BY 1, 2
                 EXCEPT SELECT queue, state, jobs FROM pgjobs.history_overview())) AS d""")).as("history_overview() against count(*)").isZero();
  }

  @Test
  void theOverviewCountsAClosedPartitionOnceAndTakesRetriesDeletesAndDropsOffItsCounts()
      throws Exception {
    WorkerStore store = store();
    // A partition three hours old with four jobs of queue q1 (one failed), and two jobs finished
    // now.
    db.execute(
        "CREATE TABLE pgjobs.finished_jobs_closed PARTITION OF pgjobs.finished_jobs FOR VALUES"
            + " FROM (now() - interval '3 hours') TO (now() - interval '2 hours')");
    for (int i = 0; i < 3; i++) {
      db.execute(ROW.formatted("now() - interval '150 minutes'").replace("'default'", "'q1'"));
    }
    db.execute(ROW.formatted("now() - interval '150 minutes'")
        .replace("'default'", "'q1'")
        .replace("'succeeded'", "'failed'"));
    finishedAt("now()");
    finishedAt("now()");
    assertOverviewIsExact();

    assertThat(store.countHistoryPartitions(Duration.ofMinutes(10))).isEqualTo(1);
    assertThat(store.countHistoryPartitions(Duration.ofMinutes(10)))
        .as("counted once")
        .isZero();
    assertThat(db.queryLong("SELECT coalesce(sum(jobs), 0) FROM pgjobs.history_counts"
            + " WHERE partition_name = 'finished_jobs_closed'"))
        .isEqualTo(4);
    assertOverviewIsExact();
    assertThat(client.queues().stream()
            .filter(q -> q.name().equals("q1"))
            .findFirst()
            .orElseThrow()
            .counts())
        .containsEntry(JobState.SUCCEEDED, 3L)
        .containsEntry(JobState.FAILED, 1L);

    // A retry by hand moves the failed job back to jobs: off the kept count.
    UUID failed;
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery("SELECT id FROM pgjobs.finished_jobs WHERE state = 'failed'")) {
      rs.next();
      failed = rs.getObject(1, UUID.class);
    }
    client.retry(failed);
    assertOverviewIsExact();
    // An operator's delete, and a row finished now.
    db.execute(
        "DELETE FROM pgjobs.finished_jobs WHERE id IN (SELECT id FROM pgjobs.finished_jobs_closed LIMIT 1)");
    finishedAt("now()");
    assertOverviewIsExact();
    assertThat(db.queryLong("SELECT coalesce(sum(jobs), 0) FROM pgjobs.history_counts"))
        .isEqualTo(2);
    // The drop takes the partition's counts with it; a TRUNCATE all of them.
    assertThat(db.queryLong(
            "SELECT count(*) FROM pgjobs.drop_history_partition(now() - interval '2 hours')"))
        .isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.history_counted")).isZero();
    assertOverviewIsExact();
    db.execute(
        "INSERT INTO pgjobs.history_counted VALUES ('finished_jobs_x')",
        "INSERT INTO pgjobs.history_counts VALUES ('finished_jobs_x', 'q9', 'succeeded', 7)",
        "TRUNCATE pgjobs.finished_jobs");
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.history_counts")).isZero();
    assertOverviewIsExact();
  }

  @Test
  void newPartitionsStartAboveTheDefaultPartitionsNewestRowAndTheWidthIsChecked() {
    db.execute("SELECT pgjobs.ensure_history_partitions(interval '1 hour', interval '2 hours')");
    // A row written when no partition covered its time, 10 hours ahead of the last partition.
    String stray = "(now() + interval '10 hours')";
    finishedAt(stray);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs_default"))
        .isEqualTo(1);
    db.execute("SELECT pgjobs.ensure_history_partitions(interval '1 hour', interval '14 hours')");
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs_default"))
        .as("the stray row stays where it is")
        .isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.history_partitions() WHERE lo > " + stray))
        .as("partitions made above it")
        .isGreaterThanOrEqualTo(2);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.history_partitions()" + " WHERE lo <= "
            + stray + " AND hi > " + stray))
        .isZero();
    assertThatThrownBy(() -> db.execute(
            "SELECT pgjobs.ensure_history_partitions(interval '30 seconds', interval '1 hour')"))
        .hasMessageContaining("1 minute to 7 days wide");
  }

  @Test
  void theWidthIsAboutATwelfthOfTheRetentionFromALadder() {
    assertThat(FinishedJobPruner.partitionWidth(Duration.ofSeconds(1)))
        .isEqualTo(Duration.ofMinutes(1));
    assertThat(FinishedJobPruner.partitionWidth(Duration.ofHours(1)))
        .isEqualTo(Duration.ofMinutes(5));
    assertThat(FinishedJobPruner.partitionWidth(Duration.ofHours(24)))
        .isEqualTo(Duration.ofHours(1));
    assertThat(FinishedJobPruner.partitionWidth(Duration.ofDays(7))).isEqualTo(Duration.ofHours(6));
    assertThat(FinishedJobPruner.partitionWidth(Duration.ofDays(30))).isEqualTo(Duration.ofDays(1));
    assertThat(FinishedJobPruner.partitionWidth(Duration.ofDays(3650)))
        .isEqualTo(Duration.ofDays(7));
    assertThat(FinishedJobPruner.ahead(Duration.ofHours(1), Duration.ofMinutes(1)))
        .isEqualTo(Duration.ofHours(3));
    assertThat(FinishedJobPruner.ahead(Duration.ofMinutes(1), Duration.ofDays(1)))
        .as("at most 48 partitions ahead")
        .isEqualTo(Duration.ofMinutes(48));
  }
}
