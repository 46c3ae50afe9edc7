package io.pgjobs.store;

import static io.pgjobs.store.Transactions.inTransaction;

import io.pgjobs.QueueLimits;
import io.pgjobs.QueueLimitsStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/** Reads and writes queues' limits ({@link LimitsSql}); the limited claim is {@link ExecutionStore}'s. */
public final class LimitsStore {
  /** Who set a queue's limits: a worker's declaration in code. */
  public static final String SOURCE_CODE = "code";
  /** Who set a queue's limits: the API, the CLI or {@code JobClient} at run time. */
  public static final String SOURCE_API = "api";
  /** The most partitions {@link #status} reports: {@value}. */
  public static final int MAX_PARTITIONS_REPORTED = 50;

  private final DataSource dataSource;
  private final String lockQueue;
  private final String upsert;
  private final String keyWaiting;
  private final String countRunning;
  private final String clear;
  private final String wake;
  private final String all;
  private final String one;
  private final String partitionRules;
  private final String usage;
  private final String partitions;
  private final String keyUnkeyed;
  private final String pruneRates;
  private final String countUnkeyedRunning;
  private final String limitedCounts;
  private final String jobWait;

  /** A store over {@code schema}. */
  public LimitsStore(DataSource dataSource, String schema) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.lockQueue = JobSql.forSchema(LimitsSql.LOCK_QUEUE, schema);
    this.upsert = JobSql.forSchema(LimitsSql.UPSERT, schema);
    this.keyWaiting = JobSql.forSchema(LimitsSql.KEY_WAITING, schema);
    this.countRunning = JobSql.forSchema(LimitsSql.COUNT_RUNNING, schema);
    this.clear = JobSql.forSchema(LimitsSql.CLEAR, schema);
    this.wake = JobSql.forSchema(LimitsSql.WAKE, schema);
    this.all = JobSql.forSchema(LimitsSql.ALL, schema);
    this.one = JobSql.forSchema(LimitsSql.ONE, schema);
    this.partitionRules = JobSql.forSchema(LimitsSql.PARTITION_RULES, schema);
    this.usage = JobSql.forSchema(LimitsSql.USAGE, schema);
    this.partitions = JobSql.forSchema(LimitsSql.PARTITIONS, schema);
    this.keyUnkeyed = JobSql.forSchema(LimitsSql.KEY_UNKEYED, schema);
    this.pruneRates = JobSql.forSchema(LimitsSql.PRUNE_RATES, schema);
    this.countUnkeyedRunning = JobSql.forSchema(LimitsSql.COUNT_UNKEYED_RUNNING, schema);
    this.limitedCounts = JobSql.forSchema(LimitsSql.LIMITED_COUNTS, schema);
    this.jobWait = JobSql.forSchema(LimitsSql.JOB_WAIT, schema);
  }

  /**
   * Sets {@code queue}'s limits, in one transaction that waits for the queue's claim in flight (if any): the
   * next claim on any worker sees them. Waiting jobs without a partition get the one the new rule gives
   * them; jobs running now count toward the limits. {@link QueueLimits#NONE} removes them.
   *
   * @param source {@link #SOURCE_API} or {@link #SOURCE_CODE}; a worker's declaration does not replace limits
   *     set at run time
   * @return false if nothing changed because limits set at run time stand (source code only)
   */
  public boolean set(String queue, QueueLimits limits, String source) throws SQLException {
    if (!SOURCE_API.equals(source) && !SOURCE_CODE.equals(source)) {
      throw new IllegalArgumentException("source must be 'api' or 'code', was " + source);
    }
    boolean[] changed = {false};
    try (Connection c = dataSource.getConnection()) {
      inTransaction(c, () -> {
        execute(c, lockQueue, queue);
        if (limits.isNone()) {
          if (SOURCE_CODE.equals(source)) {
            changed[0] = false;
            return;
          }
          execute(c, clear, queue);
          changed[0] = true;
        } else {
          try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(upsert))) {
            int i = 1;
            ps.setString(i++, queue);
            setInt(ps, i++, limits.globalConcurrency());
            i = setRate(ps, i, limits.rate());
            ps.setString(i++, limits.partitionBy());
            setInt(ps, i++, limits.partitionConcurrency());
            i = setRate(ps, i, limits.partitionRate());
            ps.setString(i++, source);
            ps.setString(i, source);
            try (ResultSet rs = ps.executeQuery()) {
              changed[0] = rs.next();
            }
          }
          if (changed[0]) {
            execute(c, keyWaiting, queue);
            execute(c, countRunning, queue);
          }
        }
        if (changed[0]) {
          execute(c, wake, queue);
        }
      });
    }
    return changed[0];
  }

  /**
   * Keys at most {@code batch} waiting jobs of partitioned queues that have no partition key
   * ({@link LimitsSql#KEY_UNKEYED}) if {@code lookForWaiting} says so, counts in running jobs of limited
   * queues that have none ({@link LimitsSql#COUNT_UNKEYED_RUNNING}) and prunes rate state that says
   * nothing any more.
   *
   * @param lookForWaiting given when a partitioned queue's limits last changed (null: never), says
   *     whether to look for waiting jobs without a key this time (a read of every waiting job of the
   *     partitioned queues); not asked when no queue is partitioned
   * @return how many jobs were keyed, or -1 if waiting jobs were not looked for
   */
  public int keyUnkeyed(int batch, java.util.function.Predicate<Instant> lookForWaiting)
      throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      long partitioned;
      long limited;
      Instant rulesChanged;
      try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(limitedCounts));
          ResultSet rs = ps.executeQuery()) {
        rs.next();
        partitioned = rs.getLong(1);
        limited = rs.getLong(2);
        rulesChanged = JobRowMapper.instant(rs, 3);
      }
      int keyed = -1;
      if (partitioned > 0 && lookForWaiting.test(rulesChanged)) {
        try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(keyUnkeyed))) {
          ps.setInt(1, batch);
          keyed = ps.executeUpdate();
        }
      }
      if (limited > 0) {
        try (PreparedStatement ps =
            StatementDeadline.apply(c.prepareStatement(countUnkeyedRunning))) {
          ps.executeUpdate();
        }
      }
      try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(pruneRates))) {
        ps.executeUpdate();
      }
      return keyed;
    }
  }

  /** The limits of every limited queue, by name. */
  public Map<String, QueueLimits> all() throws SQLException {
    Map<String, QueueLimits> limits = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(all));
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        limits.put(rs.getString("name"), read(rs));
      }
    }
    return limits;
  }

  /** {@code queue}'s limits, if it has any. */
  public Optional<QueueLimits> get(String queue) throws SQLException {
    return Optional.ofNullable(all().get(queue));
  }

  /** The partition rule of every partitioned queue, by queue. */
  public Map<String, String> partitionRules() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      return partitionRules(c);
    }
  }

  /** {@link #partitionRules()} read on {@code c} (in its transaction, if any). */
  public Map<String, String> partitionRules(Connection c) throws SQLException {
    Map<String, String> rules = new HashMap<>();
    try (PreparedStatement ps = c.prepareStatement(partitionRules);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        rules.put(rs.getString(1), rs.getString(2));
      }
    }
    return rules;
  }

  /** Every limited queue's status: its limits and what they hold back now. */
  public List<QueueLimitsStatus> statuses() throws SQLException {
    return statuses(null);
  }

  /** {@code queue}'s status, if it is limited (its own rows only, not every limited queue's). */
  public Optional<QueueLimitsStatus> status(String queue) throws SQLException {
    return statuses(queue).stream().findFirst();
  }

  /** The status of every limited queue, or of {@code queue} alone if not null. */
  private List<QueueLimitsStatus> statuses(String queue) throws SQLException {
    List<QueueLimitsStatus> out = new ArrayList<>();
    try (Connection c = dataSource.getConnection()) {
      Map<String, Object[]> rows = new LinkedHashMap<>();
      try (PreparedStatement ps =
          StatementDeadline.apply(c.prepareStatement(queue == null ? all : one))) {
        if (queue != null) {
          ps.setString(1, queue);
        }
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            rows.put(rs.getString("name"), new Object[] {
              read(rs), rs.getString("limits_source"), JobRowMapper.instant(rs, "limits_updated_at")
            });
          }
        }
      }
      for (Map.Entry<String, Object[]> e : rows.entrySet()) {
        out.add(
            status(c, e.getKey(), (QueueLimits) e.getValue()[0], (String) e.getValue()[1], (Instant)
                e.getValue()[2]));
      }
    }
    return out;
  }

  private QueueLimitsStatus status(
      Connection c, String queue, QueueLimits limits, String source, Instant updatedAt)
      throws SQLException {
    long running;
    long waiting;
    Instant tat;
    Instant now;
    try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(usage))) {
      ps.setString(1, queue);
      ps.setString(2, queue);
      ps.setString(3, queue);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        running = rs.getLong("running");
        waiting = rs.getLong("waiting");
        tat = JobRowMapper.instant(rs, "tat");
        now = JobRowMapper.instant(rs, "now");
      }
    }
    Instant nextStart = nextStart(tat, now, limits.rate());
    List<QueueLimitsStatus.Partition> parts = new ArrayList<>();
    if (limits.partitionBy() != null) {
      try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(partitions))) {
        for (int i = 1; i <= 4; i++) {
          ps.setString(i, queue);
        }
        ps.setInt(5, MAX_PARTITIONS_REPORTED);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            long r = rs.getLong("running");
            long w = rs.getLong("waiting");
            Instant next = nextStart(JobRowMapper.instant(rs, "tat"), now, limits.partitionRate());
            String why = null;
            if (w > 0) {
              if (limits.partitionConcurrency() != null && r >= limits.partitionConcurrency()) {
                why = QueueLimitsStatus.PARTITION_BUSY;
              } else if (next != null) {
                why = QueueLimitsStatus.RATE_LIMITED;
              }
            }
            parts.add(new QueueLimitsStatus.Partition(rs.getString("partition"), r, w, next, why));
          }
        }
      }
    }
    String waitingFor = null;
    if (waiting > 0) {
      if (limits.globalConcurrency() != null && running >= limits.globalConcurrency()) {
        waitingFor = QueueLimitsStatus.AT_GLOBAL_LIMIT;
      } else if (nextStart != null) {
        waitingFor = QueueLimitsStatus.RATE_LIMITED;
      } else if (!parts.isEmpty()
          && parts.stream().allMatch(p -> p.waiting() == 0 || p.waitingFor() != null)) {
        waitingFor = QueueLimitsStatus.PARTITIONS_BUSY;
      }
    }
    return new QueueLimitsStatus(
        queue,
        limits,
        source,
        updatedAt,
        running,
        waiting,
        nextStart,
        waitingFor,
        List.copyOf(parts));
  }

  /**
   * What the limits of job {@code id}'s queue say about it ({@link LimitsSql#JOB_WAIT}).
   *
   * @param queue its queue
   * @param state its state
   * @param limitKey its partition as stored ({@code limit_key}), or null
   * @param limited whether its queue has limits
   * @param due whether it is queued or retrying and due
   * @param waitingFor why it waits, if a limit holds it back
   */
  public record JobLimits(
      String queue,
      String state,
      String limitKey,
      boolean limited,
      boolean due,
      String waitingFor) {}

  /** What the limits of job {@code id}'s queue say about it; empty if there is no such job. */
  public Optional<JobLimits> job(java.util.UUID id) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(jobWait))) {
      ps.setObject(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(new JobLimits(
            rs.getString("queue"),
            rs.getString("state"),
            rs.getString("limit_key"),
            rs.getBoolean("limited"),
            rs.getBoolean("due"),
            rs.getString("waiting_for")));
      }
    }
  }

  /**
   * When a rate with GCRA state {@code tat} next allows a start: {@code tat} less its burst tolerance, or
   * null if that is not after {@code now} (or there is no rate).
   */
  static Instant nextStart(Instant tat, Instant now, QueueLimits.Rate rate) {
    if (tat == null || rate == null) {
      return null;
    }
    double intervalNanos = (double) rate.period().toNanos() / rate.limit();
    Instant next = tat.minusNanos((long) ((rate.burst() - 1) * intervalNanos));
    return next.isAfter(now) ? next : null;
  }

  private static QueueLimits read(ResultSet rs) throws SQLException {
    return new QueueLimits(
        integer(rs, "global_concurrency"),
        rate(rs, "rate_limit", "rate_period_ms", "rate_burst"),
        rs.getString("partition_by"),
        integer(rs, "partition_concurrency"),
        rate(rs, "partition_rate_limit", "partition_rate_period_ms", "partition_rate_burst"));
  }

  private static Integer integer(ResultSet rs, String column) throws SQLException {
    int v = rs.getInt(column);
    return rs.wasNull() ? null : v;
  }

  private static QueueLimits.Rate rate(ResultSet rs, String limit, String periodMs, String burst)
      throws SQLException {
    Integer l = integer(rs, limit);
    return l == null
        ? null
        : new QueueLimits.Rate(l, Duration.ofMillis(rs.getLong(periodMs)), rs.getInt(burst));
  }

  private static void execute(Connection c, String sql, String queue) throws SQLException {
    try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(sql))) {
      ps.setString(1, queue);
      ps.execute();
    }
  }

  private static void setInt(PreparedStatement ps, int i, Integer value) throws SQLException {
    if (value == null) {
      ps.setNull(i, Types.INTEGER);
    } else {
      ps.setInt(i, value);
    }
  }

  private static int setRate(PreparedStatement ps, int i, QueueLimits.Rate rate)
      throws SQLException {
    if (rate == null) {
      ps.setNull(i++, Types.INTEGER);
      ps.setNull(i++, Types.BIGINT);
      ps.setNull(i++, Types.INTEGER);
    } else {
      ps.setInt(i++, rate.limit());
      ps.setLong(i++, rate.period().toMillis());
      ps.setInt(i++, rate.burst());
    }
    return i;
  }
}
