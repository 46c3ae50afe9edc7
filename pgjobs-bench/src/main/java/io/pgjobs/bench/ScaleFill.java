package io.pgjobs.bench;

import io.pgjobs.ClaimPlan;
import io.pgjobs.JobType;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The tables of W3S: a pgjobs schema that has been in use for a while. Millions of jobs scheduled for the
 * coming month wait in the hot table (they are in {@code jobs_ready_idx} too: state {@code queued}), and a
 * day of finished jobs sits in {@code finished_jobs}. Filled with set-based SQL, then vacuumed, analyzed
 * and checkpointed so the fill's own I/O does not land in the measurement.
 *
 * <p>Filler ids are UUIDv7 built from the rows' {@code created_at}, at least a minute in the past, as
 * pgjobs' own ids would be: they sort below every id enqueued afterwards, so the drain can wait for
 * "no job above the largest filler id" with a primary-key range scan instead of a scan of the filler.
 */
final class ScaleFill {
  /** Scheduled jobs at full size: queued, due in 1 to 30 days. */
  static final int SCHEDULED = 5_000_000;
  /** Finished jobs at full size: succeeded within the last 24 hours. */
  static final int FINISHED = 1_000_000;
  /** Rows per INSERT statement (progress is printed after each). */
  private static final int CHUNK = 1_000_000;

  private final DataSource dataSource;
  private final String schema;
  private final PrintStream progress;

  ScaleFill(DataSource dataSource, String schema, PrintStream progress) {
    this.dataSource = dataSource;
    this.schema = schema;
    this.progress = progress;
  }

  /** {@code full} times {@code scale}, at least 10. */
  static int scaled(int full, double scale) {
    return Math.max(10, (int) Math.round(full * scale));
  }

  /**
   * UUIDv7 text from timestamp expression {@code ts}: 48 bits of Unix milliseconds, version 7, the rest
   * from gen_random_uuid() (whose variant bits are already RFC 9562's).
   */
  static String uuidV7(String ts) {
    return "overlay(overlay(replace(gen_random_uuid()::text, '-', '') placing lpad(to_hex(floor(extract(epoch FROM "
        + ts + ") * 1000)::bigint), 12, '0') from 1 for 12) placing '7' from 13 for 1)::uuid";
  }

  /**
   * Fills both tables; returns the largest job id in {@code jobs} afterwards (every job enqueued later has
   * a greater one).
   */
  UUID fill(int scheduled, int finished) throws SQLException {
    long t0 = System.nanoTime();
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      // created_at spread over the 30 days before a minute ago, ascending with i (so are the ids);
      // run_at random in now() + 1 day .. now() + 30 days.
      String jobs = "INSERT INTO " + schema
          + ".jobs (id, type, queue, payload, priority, state, max_attempts, run_at,"
          + " created_at)"
          + " SELECT " + uuidV7("c") + ", 'noop', 'default', jsonb_build_object('n', i), "
          + JobType.DEFAULT_PRIORITY
          + ", 'queued', " + JobType.DEFAULT_MAX_ATTEMPTS + ","
          + " now() + interval '1 day' + random() * interval '29 days', c"
          + " FROM (SELECT i, now() - interval '1 minute' - ((%d - i)::float8 / %d) * interval '30 days' AS c"
          + " FROM generate_series(%d, %d) AS i) g";
      for (int lo = 1; lo <= scheduled; lo += CHUNK) {
        int hi = Math.min(scheduled, lo + CHUNK - 1);
        st.executeUpdate(String.format(Locale.ROOT, jobs, scheduled, scheduled, lo, hi));
        progress.printf(
            Locale.ROOT,
            "  W3S fill: %,d of %,d scheduled jobs (%.0f s)%n",
            hi,
            scheduled,
            seconds(t0));
      }
      // finished_at spread over the 24 hours before a minute ago, ascending with i; the job ran a
      // second before it finished and was created (and due) a second before that.
      String done = "INSERT INTO " + schema
          + ".finished_jobs (id, type, queue, payload, priority, state, attempts,"
          + " max_attempts, run_at, created_at, attempted_at, locked_by, errors, finished_at)"
          + " SELECT " + uuidV7("f - interval '2 seconds'")
          + ", 'noop', 'default', jsonb_build_object('n', i), "
          + JobType.DEFAULT_PRIORITY + ", 'succeeded', 1, " + JobType.DEFAULT_MAX_ATTEMPTS + ","
          + " f - interval '2 seconds', f - interval '2 seconds', f - interval '1 second', 'bench-filler', '[]', f"
          + " FROM (SELECT i, now() - interval '1 minute' - ((%d - i)::float8 / %d) * interval '24 hours' AS f"
          + " FROM generate_series(%d, %d) AS i) g";
      // The history's partitions for those hours, as a running maintenance leader would have made
      // them.
      HistoryFill.pastHourPartitions(st, schema, 25);
      for (int lo = 1; lo <= finished; lo += CHUNK) {
        int hi = Math.min(finished, lo + CHUNK - 1);
        st.executeUpdate(String.format(Locale.ROOT, done, finished, finished, lo, hi));
        progress.printf(
            Locale.ROOT,
            "  W3S fill: %,d of %,d finished jobs (%.0f s)%n",
            hi,
            finished,
            seconds(t0));
      }
      st.execute("VACUUM ANALYZE " + schema + ".jobs");
      st.execute("VACUUM ANALYZE " + schema + ".finished_jobs");
      progress.printf(Locale.ROOT, "  W3S fill: VACUUM ANALYZE done (%.0f s)%n", seconds(t0));
      try {
        // Write the fill's dirty pages now rather than during the drain.
        st.execute("CHECKPOINT");
        progress.printf(Locale.ROOT, "  W3S fill: CHECKPOINT done (%.0f s)%n", seconds(t0));
      } catch (SQLException e) {
        progress.println("  W3S fill: no CHECKPOINT (" + e.getMessage().strip()
            + "); the drain may pay for the fill's writes");
      }
      // PostgreSQL 15 has no max(uuid); the primary key answers this backwards.
      try (ResultSet rs =
          st.executeQuery("SELECT id FROM " + schema + ".jobs ORDER BY id DESC LIMIT 1")) {
        return rs.next() ? rs.getObject(1, UUID.class) : new UUID(0, 0);
      }
    }
  }

  /** Jobs in {@code jobs} with an id above {@code after}. */
  long countAbove(UUID after) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT count(*) FROM " + schema + ".jobs WHERE id > ?")) {
      ps.setObject(1, after);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * The plans of pgjobs' claim of up to 1000 jobs of the default queue ({@link ClaimPlan#explain}: custom
   * and generic, in a transaction that is rolled back, so nothing stays claimed), as text.
   */
  String explainClaim() throws SQLException {
    return ClaimPlan.explain(dataSource, schema, JobType.DEFAULT_QUEUE, 1000);
  }

  private static double seconds(long t0) {
    return (System.nanoTime() - t0) / 1e9;
  }
}
