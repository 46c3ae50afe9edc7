package io.pgjobs.store;

import io.pgjobs.Job;
import io.pgjobs.JobError;
import io.pgjobs.JobState;
import io.pgjobs.json.PayloadCodec;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/** Reads {@link Job}s from rows selected with {@link JobSql#HOT_COLUMNS} or {@link JobSql#FINISHED_COLUMNS}. */
final class JobRowMapper {
  private final PayloadCodec codec;

  JobRowMapper(PayloadCodec codec) {
    this.codec = codec;
  }

  Job map(ResultSet rs) throws SQLException {
    long timeoutMs = rs.getLong("timeout_ms");
    Duration timeout = rs.wasNull() ? null : Duration.ofMillis(timeoutMs);
    int progress = rs.getInt("progress_percent");
    Integer progressPercent = rs.wasNull() ? null : progress;
    return new Job(
        rs.getObject("id", UUID.class),
        rs.getString("type"),
        rs.getString("queue"),
        codec.tree(rs.getString("payload")),
        rs.getInt("priority"),
        JobState.parse(rs.getString("state")),
        rs.getInt("attempts"),
        rs.getInt("max_attempts"),
        instant(rs, "run_at"),
        instant(rs, "created_at"),
        instant(rs, "attempted_at"),
        instant(rs, "finished_at"),
        rs.getString("locked_by"),
        instant(rs, "heartbeat_at"),
        rs.getString("context"),
        rs.getString("idempotency_key"),
        timeout,
        progressPercent,
        rs.getString("progress_message"),
        errors(rs.getString("errors")),
        codec.tree(rs.getString("output")),
        rs.getBoolean("cancel_requested"),
        rs.getObject("parent_id", UUID.class),
        rs.getString("capability"),
        rs.getInt("snoozes"));
  }

  private List<JobError> errors(String json) {
    if (json == null) {
      return List.of();
    }
    return List.of(codec.mapper().readValue(json, JobError[].class));
  }

  /**
   * A {@code timestamptz} column as an Instant, read as pgJDBC's OffsetDateTime: {@code getTimestamp}
   * goes through {@code java.util.Date} and its calendar, several times the cost, which a claim of
   * 1,000 jobs pays twice per job and an idle worker's pickup pays while its code is still cold.
   */
  static Instant instant(ResultSet rs, String column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }

  /** {@link #instant(ResultSet, String)} by column index. */
  static Instant instant(ResultSet rs, int column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }
}
