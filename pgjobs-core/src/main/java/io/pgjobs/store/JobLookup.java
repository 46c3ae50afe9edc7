package io.pgjobs.store;

import io.pgjobs.Job;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

/**
 * Reads one job by id, wherever it is ({@link JobSql#GET}: the hot table, then the history).
 *
 * <p>The history is partitioned by {@code finished_at} (V7__partitioned_history.sql), and a lookup by id
 * alone plans and probes every partition's id index (at 100,000,000 finished jobs in 25 partitions: 3.2 ms
 * a lookup at the median, against 1.35 ms bounded as below; docs/bench-journal/history-100m.md). A job finishes after
 * it was created, and its id (a UUIDv7) holds when it was created; so the lookup first reads the history
 * from that time (less {@link #CLOCK_MARGIN} for clocks) on, which prunes the older partitions when it is
 * planned. The statement is planned at each call ({@link CustomPlan}) so that the bound prunes at plan
 * time. A job not found there (an id pgjobs did not make, a clock further off than the margin, a job
 * finished by a transaction that began before it was created, or no such job) is looked up everywhere,
 * so the answer is exact: only a lookup that finds nothing pays for two.
 */
final class JobLookup {
  /** How much earlier than its id's time a job may have finished and be found by the first read. */
  static final Duration CLOCK_MARGIN = Duration.ofMinutes(5);

  private final String get;
  private final String getSince;
  private final JobRowMapper rows;

  JobLookup(String schema, JobRowMapper rows) {
    this.get = JobSql.forSchema(JobSql.GET, schema);
    this.getSince = JobSql.forSchema(JobSql.GET_SINCE, schema);
    this.rows = rows;
  }

  /** The job with this id, in the caller's connection. */
  Optional<Job> get(Connection connection, UUID id) throws SQLException {
    if (id.version() == 7) {
      Instant created = UuidV7.timeOf(id);
      Optional<Job> found = read(connection, getSince, id, created.minus(CLOCK_MARGIN));
      if (found.isPresent()) {
        return found;
      }
    }
    return read(connection, get, id, null);
  }

  private Optional<Job> read(Connection connection, String sql, UUID id, Instant since)
      throws SQLException {
    // Planned at every execution (CustomPlan): a generic plan made while the hot table was nearly
    // empty is a sequential scan, which a dashboard's lookup would keep while a long transaction
    // grows the table; and the history's bound prunes its partitions only in a plan made with its
    // value.
    try (PreparedStatement ps =
        CustomPlan.apply(StatementDeadline.apply(connection.prepareStatement(sql)))) {
      ps.setObject(1, id);
      ps.setObject(2, id);
      if (since != null) {
        ps.setTimestamp(3, Timestamp.from(since));
      }
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rows.map(rs)) : Optional.empty();
      }
    }
  }
}
