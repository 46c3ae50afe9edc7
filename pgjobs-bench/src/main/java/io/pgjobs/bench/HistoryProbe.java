package io.pgjobs.bench;

import io.pgjobs.JobClient;
import io.pgjobs.JobFilter;
import io.pgjobs.JobState;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * What a large history (W3H, {@link HistoryFill}) costs the readers and the pruner: the job list's
 * filters (the dashboard's "List filters" set, through {@link JobClient#list}, which the API's {@code GET
 * /jobs} calls), a lookup by id, and the retention's drop of a day of partitions against the row-by-row
 * DELETE it replaced. Prints a Markdown block to the progress stream; nothing here is asserted.
 */
final class HistoryProbe {
  private static final int RUNS = 21;
  private static final java.time.Duration API_TIMEOUT = java.time.Duration.ofSeconds(30);

  private final DataSource dataSource;
  private final String schema;
  private final JobClient client;
  private final PrintStream out;

  HistoryProbe(DataSource dataSource, String schema, PrintStream out) {
    this.dataSource = dataSource;
    this.schema = schema;
    this.client = JobClient.builder(dataSource).schema(schema).build();
    this.out = out;
  }

  private record Case(String label, JobFilter filter) {}

  /** p50 and p95 (ms) of each list filter, {@value #RUNS} runs after a warm-up each. */
  void listFilters() {
    Instant now = Instant.now();
    List<Case> cases = List.of(
        new Case("first page (no filter)", JobFilter.builder().limit(50).build()),
        new Case(
            "`state=failed` (5 %)",
            JobFilter.builder().state(JobState.FAILED).limit(50).build()),
        new Case(
            "`state=cancelled` (1 %)",
            JobFilter.builder().state(JobState.CANCELLED).limit(50).build()),
        new Case(
            "`type=send_email` (25 %)",
            JobFilter.builder().type("send_email").limit(50).build()),
        new Case(
            "`type=report_export` (rare: 1 in 1,000,000)",
            JobFilter.builder().type("report_export").limit(50).build()),
        new Case(
            "`queue=reports` (rare: 1 in 1,000,000)",
            JobFilter.builder().queue("reports").limit(50).build()),
        new Case(
            "`created_before=` 23 h ago (the oldest 8 %)",
            JobFilter.builder()
                .createdBefore(now.minusSeconds(23 * 3600))
                .limit(50)
                .build()),
        new Case(
            "`created_after=` + `created_before=`: 5 minutes 12 h ago",
            JobFilter.builder()
                .createdAfter(now.minusSeconds(12 * 3600 + 300))
                .createdBefore(now.minusSeconds(12 * 3600))
                .limit(50)
                .build()),
        new Case(
            "`text=user4242@` (a rare text, no trigram index)",
            JobFilter.builder().text("user4242@").limit(50).build()),
        new Case(
            "`text=example.com` (every job)",
            JobFilter.builder().text("example.com").limit(50).build()));
    out.println();
    out.println("| `JobClient.list` filter (limit 50) | p50 ms | p95 ms | max ms | jobs |");
    out.println("|---|---:|---:|---:|---:|");
    for (Case c : cases) {
      // Under the API's request timeout (30 s by default), as GET /jobs runs it: a filter that
      // reads too much is cancelled there (504), and here said so, once.
      int found;
      try {
        found = io.pgjobs.SqlDeadline.call(API_TIMEOUT, () -> client.list(c.filter()))
            .jobs()
            .size();
      } catch (Exception e) {
        out.printf(
            Locale.ROOT,
            "| %s | — | — | > %,d (cancelled at the API's request timeout) | — |%n",
            c.label(),
            API_TIMEOUT.toMillis());
        continue;
      }
      long[] ms = new long[RUNS];
      for (int i = 0; i < RUNS; i++) {
        long t = System.nanoTime();
        client.list(c.filter());
        ms[i] = (System.nanoTime() - t) / 1_000_000;
      }
      Arrays.sort(ms);
      out.printf(
          Locale.ROOT,
          "| %s | %d | %d | %d | %d |%n",
          c.label(),
          ms[RUNS / 2],
          ms[(int) Math.ceil(RUNS * 0.95) - 1],
          ms[RUNS - 1],
          found);
    }
    // A lookup by id reads every partition's id index (no primary key on a partitioned table).
    java.util.UUID some = client
        .list(JobFilter.builder().type("report_export").limit(1).build())
        .jobs()
        .getFirst()
        .id();
    // 200 lookups: each pooled connection plans its first ones, then runs a cached generic plan.
    int lookups = 200;
    long[] ms = new long[lookups];
    for (int i = 0; i < lookups; i++) {
      long t = System.nanoTime();
      client.get(some);
      ms[i] = (System.nanoTime() - t) / 1000;
    }
    Arrays.sort(ms);
    out.printf(
        Locale.ROOT,
        "| `JobClient.get(id)` of a finished job, 200 calls (µs) | %d | %d | %d | 1 |%n",
        ms[lookups / 2],
        ms[(int) Math.ceil(lookups * 0.95) - 1],
        ms[lookups - 1]);
    // The queue overview: the counts the maintenance leader keeps for closed partitions, plus a
    // count of the others. First, as a leader's prune pass would, the closed partitions are counted
    // once.
    long countMs;
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      long t = System.nanoTime();
      st.execute("SELECT " + schema + ".count_history_partitions(interval '10 minutes')");
      countMs = (System.nanoTime() - t) / 1_000_000;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    long[] overview = new long[3];
    for (int i = 0; i < overview.length; i++) {
      long t = System.nanoTime();
      client.queues();
      overview[i] = (System.nanoTime() - t) / 1_000_000;
    }
    Arrays.sort(overview);
    out.printf(
        Locale.ROOT,
        "| `JobClient.queues()` (the queue overview), after the closed partitions were counted once in"
            + " %,d ms | %d | — | %d | — |%n",
        countMs,
        overview[1],
        overview[2]);
    out.println();
  }

  /**
   * Drops the partitions past the default 24 h retention, as the maintenance leader's pass does, so that
   * the drain after it runs over the history the leader keeps (counted by {@link #listFilters}, nothing
   * past retention): a drop happens once a partition's width (an hour) in a steady state, while the fill's
   * oldest partition, already past the retention, would be dropped during the drain.
   */
  void dropPastRetention() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      long t = System.nanoTime();
      int dropped = dropUntil(st, "now() - interval '24 hours'").dropped();
      out.printf(
          Locale.ROOT,
          "- Before the drain over the history: %d partition(s) past the 24 h retention dropped as the"
              + " leader's pass would (%,d ms); %s finished jobs left%n",
          dropped,
          (System.nanoTime() - t) / 1_000_000,
          one(st, "SELECT count(*) FROM " + schema + ".finished_jobs"));
    }
  }

  /**
   * The retention's work for one day: first the pre-V7 way on the oldest partition (the rows of its
   * hour deleted 10,000 at a time, oldest first, as {@code PRUNE_FINISHED} did), then the oldest
   * partitions dropped whole until a day of them is gone. Prints times, sizes and dead tuples.
   */
  void prune() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      List<String[]> parts = rows(
          st,
          "SELECT partition_name, hi::text FROM " + schema
              + ".history_partitions() WHERE lo IS NOT NULL AND hi <= now() ORDER BY hi");
      out.printf(
          Locale.ROOT,
          "History: %d past partitions, %s in all (heap and indexes)%n",
          parts.size(),
          one(
              st,
              "SELECT pg_size_pretty(sum(pg_total_relation_size(format('%I.%I', '" + schema
                  + "', partition_name)::regclass))) FROM " + schema + ".history_partitions()"));
      // The old way, on the oldest hour: batched DELETEs of 10,000 rows.
      String oldest = parts.getFirst()[0];
      String rowsBefore = one(st, "SELECT count(*) FROM " + schema + "." + oldest);
      long t = System.nanoTime();
      int batches = 0;
      while (st.executeUpdate(
              "DELETE FROM " + schema + "." + oldest + " WHERE id IN (SELECT id FROM " + schema
                  + "." + oldest + " ORDER BY finished_at LIMIT 10000)")
          > 0) {
        batches++;
      }
      long deleteMs = (System.nanoTime() - t) / 1_000_000;
      st.execute("SELECT pg_stat_force_next_flush()");
      String dead = one(
          st,
          "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = '" + schema + "." + oldest
              + "'::regclass");
      out.printf(
          Locale.ROOT,
          "- Before V7, row by row: the %s rows of one hour (%s) deleted in %d batches of 10,000 in %,d ms,"
              + " leaving %s dead tuples in the heap (and as many in each of its 7 indexes) for vacuum%n",
          rowsBefore,
          oldest,
          batches,
          deleteMs,
          dead);
      // V7: a day of partitions dropped whole (the emptied one first, then 24 more).
      String cutoff = parts.get(Math.min(parts.size(), 25) - 1)[1];
      Drops drops = dropUntil(st, "'" + cutoff + "'::timestamptz");
      out.printf(
          Locale.ROOT,
          "- V7: %d partitions (about %,d finished jobs) detached in %,d ms in all (the lock on the"
              + " history), the slowest %,d ms; the detached tables dropped in %,d ms; dead tuples left"
              + " in the history: %s%n",
          drops.dropped(),
          drops.rows(),
          drops.detachNanos() / 1_000_000,
          drops.worstDetachNanos() / 1_000_000,
          drops.dropNanos() / 1_000_000,
          one(
              st,
              "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relid IN"
                  + " (SELECT format('%I.%I', '" + schema + "', partition_name)::regclass FROM "
                  + schema
                  + ".history_partitions())"));
    }
  }

  /** What {@link #dropUntil} did: partitions, their rows as estimated, and the times it took. */
  private record Drops(
      int dropped, long rows, long detachNanos, long worstDetachNanos, long dropNanos) {}

  /**
   * Detaches and drops the oldest partitions while one ends at or before {@code cutoffSql} (an SQL
   * expression), as the maintenance leader's pass does: {@code drop_history_partition} detaches one (the
   * lock on the history), then its table is dropped in a statement of its own, with no lock on the history
   * while its files are unlinked.
   */
  private Drops dropUntil(Statement st, String cutoffSql) throws SQLException {
    int dropped = 0;
    long rows = 0;
    long detach = 0;
    long worst = 0;
    long drop = 0;
    while (true) {
      long t1 = System.nanoTime();
      List<String[]> d = rows(
          st,
          "SELECT partition_name, approximate_rows::text FROM " + schema
              + ".drop_history_partition(" + cutoffSql + ")");
      long took = System.nanoTime() - t1;
      if (d.isEmpty()) {
        return new Drops(dropped, rows, detach, worst, drop);
      }
      long t2 = System.nanoTime();
      st.execute("DROP TABLE " + schema + "." + d.getFirst()[0]);
      drop += System.nanoTime() - t2;
      dropped++;
      rows += Long.parseLong(d.getFirst()[1]);
      detach += took;
      worst = Math.max(worst, took);
    }
  }

  private static List<String[]> rows(Statement st, String sql) throws SQLException {
    List<String[]> out = new ArrayList<>();
    try (ResultSet rs = st.executeQuery(sql)) {
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        String[] row = new String[n];
        for (int i = 0; i < n; i++) {
          row[i] = rs.getString(i + 1);
        }
        out.add(row);
      }
    }
    return out;
  }

  private static String one(Statement st, String sql) throws SQLException {
    return rows(st, sql).getFirst()[0];
  }
}
