package io.pgjobs.bench;

import io.pgjobs.JobType;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * A history of finished jobs as a busy installation has it (issue 31, section 3): one partition of {@code
 * finished_jobs} per past hour (V7__partitioned_history.sql; the default retention of 24 h gives 1-hour
 * partitions), each written as a table of its own and then attached, as the partitions the maintenance
 * leader made would hold them. The shape is the dashboard benchmark's shape A: four types and queues, 94 %
 * succeeded, 5 % failed, 1 % cancelled, 1 in 1,000,000 of a rare type and queue ({@code report_export},
 * {@code reports}), a payload with an e-mail address for the text search. Ids are UUIDv7 of the job's
 * creation, a second before it finished.
 */
final class HistoryFill {
  /** Finished jobs at full size. */
  static final long FULL = 100_000_000L;
  /** Past hours filled (the current hour's partition is left to the drain). */
  static final int HOURS = 25;
  /** The rare type's and queue's share: one job in this many. */
  static final int RARE_EVERY = 1_000_000;

  private final DataSource dataSource;
  private final String schema;
  private final PrintStream progress;

  HistoryFill(DataSource dataSource, String schema, PrintStream progress) {
    this.dataSource = dataSource;
    this.schema = schema;
    this.progress = progress;
  }

  /**
   * Fills {@code rows} finished jobs over the {@link #HOURS} hours before the current one, an hour's
   * partition at a time; returns the time it took in ms.
   */
  long fill(long rows) throws SQLException {
    long t0 = System.nanoTime();
    long perHour = Math.max(1, rows / HOURS);
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      st.execute("SET synchronous_commit = off");
      for (int h = HOURS; h >= 1; h--) {
        String lo = "(date_bin('1 hour', now(), timestamptz '2000-01-01 00:00:00+00') - interval '"
            + h + " hours')";
        String name;
        try (ResultSet rs = st.executeQuery("SELECT 'finished_jobs_' || to_char(" + lo
            + " AT TIME ZONE 'UTC', 'YYYYMMDD\"_\"HH24MI')")) {
          rs.next();
          name = rs.getString(1);
        }
        long first = (long) (HOURS - h) * perHour + 1;
        st.execute("CREATE TABLE " + schema + "." + name + " (LIKE " + schema
            + ".finished_jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)");
        st.executeUpdate(String.format(
            Locale.ROOT,
            """
            INSERT INTO %1$s.%2$s (id, type, queue, payload, priority, state, attempts, max_attempts, run_at,
                   created_at, attempted_at, locked_by, errors, finished_at)
            SELECT %3$s,
                   CASE WHEN g %% %6$d = 17 THEN 'report_export'
                        ELSE (ARRAY['send_email', 'resize_image', 'summarize_text', 'webhook_delivery'])[1 + g %% 4] END,
                   CASE WHEN g %% %6$d = 17 THEN 'reports'
                        ELSE (ARRAY['default', 'emails', 'images', 'webhooks'])[1 + (g / 7) %% 4] END,
                   jsonb_build_object('to', 'user' || g || '@example.com', 'n', g), %7$d,
                   CASE WHEN g %% 100 < 94 THEN 'succeeded' WHEN g %% 100 < 99 THEN 'failed' ELSE 'cancelled' END,
                   1, %8$d, f - interval '1 second', f - interval '1 second', f - interval '1 second',
                   'bench-filler', '[]', f
              FROM (SELECT g, %9$s + ((g - %4$d)::float8 / %5$d) * interval '1 hour' AS f
                      FROM generate_series(%4$d, %10$d) AS g) AS s""",
            schema,
            name,
            ScaleFill.uuidV7("f - interval '1 second'"),
            first,
            perHour,
            RARE_EVERY,
            JobType.DEFAULT_PRIORITY,
            JobType.DEFAULT_MAX_ATTEMPTS,
            lo,
            first + perHour - 1));
        st.execute("ALTER TABLE " + schema + ".finished_jobs ATTACH PARTITION " + schema + "."
            + name + " FOR VALUES FROM (" + lo + ") TO (" + lo + " + interval '1 hour')");
        st.execute("VACUUM ANALYZE " + schema + "." + name);
        progress.printf(
            Locale.ROOT,
            "  W3H fill: %s, %,d of %,d finished jobs (%.0f s)%n",
            name,
            (HOURS - h + 1) * perHour,
            perHour * HOURS,
            (System.nanoTime() - t0) / 1e9);
      }
      st.execute("ANALYZE " + schema + ".finished_jobs");
      try {
        st.execute("CHECKPOINT");
      } catch (SQLException e) {
        progress.println("  W3H fill: no CHECKPOINT (" + e.getMessage().strip() + ")");
      }
    }
    return (System.nanoTime() - t0) / 1_000_000;
  }

  /**
   * Makes empty 1-hour partitions of {@code finished_jobs} for the {@code hours} hours before the current
   * one, as a maintenance leader running for that long would have made them (the migration makes the
   * current hour's and later ones only), so rows written with a past {@code finished_at} land in a
   * partition, not the default one.
   */
  static void pastHourPartitions(Statement st, String schema, int hours) throws SQLException {
    st.execute(String.format(Locale.ROOT, """
        DO $$
        DECLARE
            lo   timestamptz;
            name text;
        BEGIN
            FOR h IN REVERSE %2$d..1 LOOP
                lo := date_bin('1 hour', now(), timestamptz '2000-01-01 00:00:00+00') - h * interval '1 hour';
                name := 'finished_jobs_' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD"_"HH24MI');
                IF to_regclass(format('%%I.%%I', '%1$s', name)) IS NULL THEN
                    EXECUTE format('CREATE TABLE %%I.%%I (LIKE %%I.finished_jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                                   '%1$s', name, '%1$s');
                    EXECUTE format('ALTER TABLE %%I.finished_jobs ATTACH PARTITION %%I.%%I FOR VALUES FROM (%%L) TO (%%L)',
                                   '%1$s', '%1$s', name, lo, lo + interval '1 hour');
                END IF;
            END LOOP;
        END
        $$""", schema, hours));
  }
}
