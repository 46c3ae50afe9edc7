package io.pgjobs.store;

import io.pgjobs.WorkerInfo;
import io.pgjobs.json.PayloadCodec;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import tools.jackson.core.type.TypeReference;

/** Liveness and maintenance statements ({@link WorkerSql}): one method each. */
public final class WorkerStore {
  private final DataSource dataSource;
  private final PayloadCodec codec;
  private final String heartbeat;
  private final String deregister;
  private final String list;
  private final String acquireLease;
  private final String releaseLease;
  private final String rescue;
  private final String removeDeadWorkers;
  private final String failUnknownTypes;
  private final String ensureHistoryPartitions;
  private final String dropHistoryPartition;
  private final String countHistoryPartitions;
  private final String detachedHistoryTables;
  private final String schema;
  private final String pruneDefaultPartition;
  private final String pruneUniqueKeys;
  private final String hotTableState;
  private final String analyzeHotTable;
  private final String vacuumHotTable;
  private final String vacuumHotTableGivingPagesBack;
  private final String horizonHolder;

  /** A store over {@code schema}. */
  public WorkerStore(DataSource dataSource, String schema, PayloadCodec codec) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.codec = codec;
    this.heartbeat = JobSql.forSchema(WorkerSql.HEARTBEAT, schema);
    this.deregister = JobSql.forSchema(WorkerSql.DEREGISTER, schema);
    this.list = JobSql.forSchema(WorkerSql.LIST, schema);
    this.acquireLease = JobSql.forSchema(WorkerSql.ACQUIRE_LEASE, schema);
    this.releaseLease = JobSql.forSchema(WorkerSql.RELEASE_LEASE, schema);
    this.rescue = JobSql.forSchema(WorkerSql.RESCUE, schema);
    this.failUnknownTypes = JobSql.forSchema(WorkerSql.FAIL_UNKNOWN_TYPES, schema);
    this.removeDeadWorkers = JobSql.forSchema(WorkerSql.REMOVE_DEAD_WORKERS, schema);
    this.ensureHistoryPartitions = JobSql.forSchema(WorkerSql.ENSURE_HISTORY_PARTITIONS, schema);
    this.dropHistoryPartition = JobSql.forSchema(WorkerSql.DROP_HISTORY_PARTITION, schema);
    this.countHistoryPartitions = JobSql.forSchema(WorkerSql.COUNT_HISTORY_PARTITIONS, schema);
    this.detachedHistoryTables = JobSql.forSchema(WorkerSql.DETACHED_HISTORY_TABLES, schema);
    this.schema = JobSql.requireSchema(schema);
    this.pruneDefaultPartition = JobSql.forSchema(WorkerSql.PRUNE_DEFAULT_PARTITION, schema);
    this.pruneUniqueKeys = JobSql.forSchema(WorkerSql.PRUNE_UNIQUE_KEYS, schema);
    this.hotTableState = JobSql.forSchema(WorkerSql.HOT_TABLE_STATE, schema);
    this.analyzeHotTable = JobSql.forSchema(WorkerSql.ANALYZE_HOT_TABLE, schema);
    this.vacuumHotTable = JobSql.forSchema(WorkerSql.VACUUM_HOT_TABLE, schema);
    this.vacuumHotTableGivingPagesBack =
        JobSql.forSchema(WorkerSql.VACUUM_HOT_TABLE_GIVING_PAGES_BACK, schema);
    this.horizonHolder = WorkerSql.HORIZON_HOLDER;
  }

  /**
   * Who the worker is, as registered.
   *
   * @param deadAfter the worker's dead-worker threshold, recorded so that readers call it live or presumed
   *     dead as rescue does
   */
  public record Registration(
      String id,
      String host,
      long pid,
      Map<String, Integer> queues,
      Collection<String> jobTypes,
      Collection<String> capabilities,
      Duration deadAfter) {
    /** A worker without capabilities, with the default dead-worker threshold. */
    public Registration(
        String id,
        String host,
        long pid,
        Map<String, Integer> queues,
        Collection<String> jobTypes) {
      this(id, host, pid, queues, jobTypes, List.of(), WorkerSql.DEFAULT_DEAD_AFTER);
    }
  }

  /**
   * Registers or renews the worker and the heartbeats of the jobs it holds, on {@code connection} (the
   * heartbeat's own, so handlers that use up the pool cannot starve it), in a short transaction whose
   * lock waits are bounded by {@code lockTimeout}.
   *
   * @param held every job the worker holds, mapped to its claim token
   * @param waiting those of them claimed but not started
   * @param stuckLanes lanes held by handlers the worker had to let go (reported in its row)
   * @return for each job renewed, whether its cancellation was asked; and the held jobs that are no
   *     longer this worker's claim
   */
  public Beat heartbeat(
      Connection connection,
      Registration worker,
      Map<UUID, Long> held,
      Collection<UUID> waiting,
      int stuckLanes,
      Duration lockTimeout)
      throws SQLException {
    UUID[] ids = held.keySet().toArray(UUID[]::new);
    String tokens = ExecutionStore.jsonObject(ids, i -> Long.toString(held.get(ids[i])));
    boolean autoCommit = connection.getAutoCommit();
    connection.setAutoCommit(false);
    try {
      // Its lock waits are bounded here, and the beat as a whole by the worker's network timeout
      // and watch: a statement_timeout of the database or role (which a beat of tens of thousands
      // of jobs could outlast, and then fail at every try until the worker fenced itself) does not
      // apply.
      try (PreparedStatement set = StatementDeadline.apply(
          connection.prepareStatement(
              "SELECT set_config('lock_timeout', ?, true), set_config('statement_timeout', '0', true)"))) {
        set.setString(1, lockTimeout.toMillis() + "ms");
        set.execute();
      }
      Map<UUID, Boolean> cancelRequested = new HashMap<>();
      Set<UUID> lost = new HashSet<>();
      try (PreparedStatement ps =
          CustomPlan.apply(StatementDeadline.apply(connection.prepareStatement(heartbeat)))) {
        java.sql.Array heldIds = connection.createArrayOf("uuid", ids);
        ps.setArray(1, heldIds);
        ps.setString(2, worker.id());
        ps.setObject(3, ExecutionStore.jsonb(tokens));
        ps.setString(4, worker.id());
        ps.setString(5, worker.host());
        ps.setLong(6, worker.pid());
        ps.setString(7, codec.write(worker.queues()));
        ps.setString(8, codec.write(worker.jobTypes()));
        ps.setInt(9, stuckLanes);
        ps.setArray(10, connection.createArrayOf("text", worker.capabilities().toArray()));
        ps.setArray(11, heldIds);
        ps.setLong(12, worker.deadAfter().toMillis());
        ps.setArray(13, connection.createArrayOf("uuid", waiting.toArray()));
        ps.setString(14, worker.id());
        ps.setObject(15, ExecutionStore.jsonb(tokens));
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            UUID id = rs.getObject(1, UUID.class);
            boolean cancel = rs.getBoolean(2);
            if (rs.wasNull()) {
              lost.add(id);
            } else {
              cancelRequested.put(id, cancel);
            }
          }
        }
      }
      connection.commit();
      return new Beat(cancelRequested, lost);
    } catch (SQLException | RuntimeException e) {
      try {
        connection.rollback();
      } catch (SQLException rollbackFailure) {
        e.addSuppressed(rollbackFailure);
      }
      throw e;
    } finally {
      try {
        connection.setAutoCommit(autoCommit);
      } catch (SQLException ignored) {
        // the connection is broken; the caller discards it
      }
    }
  }

  /**
   * Asks, on {@code probe}, whether the server session {@code pid} has been waiting for its client for at
   * least {@code idleFor} (not running a statement): while its client waits for a reply, that means the
   * connection between them is lost. Empty when it cannot be told (no such session seen, or not this
   * user's).
   */
  public Optional<Boolean> sessionWaitsForClient(Connection probe, int pid, Duration idleFor)
      throws SQLException {
    try (PreparedStatement ps = probe.prepareStatement(WorkerSql.SESSION_WAITS_FOR_CLIENT)) {
      ps.setLong(1, idleFor.toMillis());
      ps.setInt(2, pid);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getBoolean(1)) : Optional.empty();
      }
    }
  }

  /**
   * What a heartbeat found.
   *
   * @param cancelRequested the jobs renewed, each with whether its cancellation was asked
   * @param lost held jobs that are no longer this worker's under the claim token it holds them by
   *     (rescued, or claimed again, while the worker was silent); held jobs in neither were skipped
   *     because another transaction holds their row (the worker's own outcome write, or its handler's)
   */
  public record Beat(Map<UUID, Boolean> cancelRequested, Set<UUID> lost) {}

  /** Removes the worker's row (clean shutdown). */
  public void deregister(String workerId) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(deregister))) {
      ps.setString(1, workerId);
      ps.executeUpdate();
    }
  }

  /** Registered workers, oldest first. */
  public List<WorkerInfo> list() throws SQLException {
    List<WorkerInfo> workers = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(list));
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        workers.add(new WorkerInfo(
            rs.getString(1),
            rs.getString(2),
            rs.getLong(3),
            codec.mapper().readValue(rs.getString(4), new TypeReference<Map<String, Integer>>() {}),
            codec.mapper().readValue(rs.getString(5), new TypeReference<List<String>>() {}),
            rs.getTimestamp(6).toInstant(),
            rs.getTimestamp(7).toInstant(),
            rs.getLong(8),
            rs.getInt(9),
            List.of((String[]) rs.getArray(10).getArray()),
            rs.getBoolean(11)));
      }
    }
    return workers;
  }

  /** Takes or renews the lease {@code name} for {@code ttl}; true if {@code holder} has it now. */
  public boolean acquireLease(String name, String holder, Duration ttl) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(acquireLease))) {
      ps.setString(1, name);
      ps.setString(2, holder);
      ps.setLong(3, ttl.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** Gives up a lease held by {@code holder}. */
  public void releaseLease(String name, String holder) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(releaseLease))) {
      ps.setString(1, name);
      ps.setString(2, holder);
      ps.executeUpdate();
    }
  }

  /**
   * What one rescue pass did.
   *
   * @param requeued jobs that had started, back to the queue with their attempt counted
   * @param ended jobs failed (no attempts left) or cancelled (cancellation asked)
   * @param unclaimed jobs that never started, back to the queue as they were
   */
  public record RescueCounts(long requeued, long ended, long unclaimed) {
    /** Jobs this pass changed. */
    public long total() {
      return requeued + ended + unclaimed;
    }
  }

  /**
   * Rescues up to {@code limit} running jobs whose worker has not renewed its own row for
   * {@code deadAfter}, or whose own heartbeat is older than {@code staleAfter} (see {@link WorkerSql#RESCUE}).
   */
  public RescueCounts rescue(Duration deadAfter, Duration staleAfter, int limit)
      throws SQLException {
    try (Connection c = StatementTimeoutLift.connection(dataSource);
        PreparedStatement ps =
            CustomPlan.apply(StatementDeadline.apply(c.prepareStatement(rescue)))) {
      ps.setLong(1, deadAfter.toMillis());
      ps.setLong(2, staleAfter.toMillis());
      ps.setInt(3, limit);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new RescueCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3));
      }
    }
  }

  /**
   * Fails up to {@code limit} waiting jobs whose type no live worker serving their queue runs, created more
   * than {@code grace} ago ({@link WorkerSql#FAIL_UNKNOWN_TYPES}); {@code leader} is named in their error.
   * Returns how many.
   */
  public long failUnknownTypes(Duration grace, String leader, int limit) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            CustomPlan.apply(StatementDeadline.apply(c.prepareStatement(failUnknownTypes)))) {
      ps.setLong(1, grace.toMillis());
      ps.setString(2, grace.toString());
      ps.setString(3, leader);
      ps.setInt(4, limit);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Removes workers silent for longer than {@code staleAfter}; returns how many. */
  public int removeDeadWorkers(Duration staleAfter) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(removeDeadWorkers))) {
      ps.setLong(1, staleAfter.toMillis());
      return ps.executeUpdate();
    }
  }

  /**
   * The hot table's dead row versions, its size in pages as the planner's statistics last saw it, its
   * size in pages now and its live rows ({@link WorkerSql#HOT_TABLE_STATE}).
   */
  public record HotTable(long deadRows, long plannedPages, long pages, long liveRows) {}

  /** The hot table's state now ({@link HotTable}). */
  public HotTable hotTable() throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(hotTableState));
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return new HotTable(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
    }
  }

  /** The hot table's dead row versions, as PostgreSQL's statistics count them. */
  public long hotTableDeadRows() throws SQLException {
    return hotTable().deadRows();
  }

  /** What holds the xmin horizon back the most ({@link WorkerSql#HORIZON_HOLDER}), or null. */
  public String horizonHolder() throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(horizonHolder));
        ResultSet rs = ps.executeQuery()) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  /** What became of a {@link #vacuumHotTable()}. */
  public enum VacuumOutcome {
    /** The table was vacuumed. */
    VACUUMED,
    /** Another session held a lock that conflicts (another vacuum, a schema change): try later. */
    LOCKED,
    /** PostgreSQL refused (the user does not own the table); the warning says why. */
    REFUSED
  }

  /** A vacuum's outcome and, when refused, PostgreSQL's warning. */
  public record Vacuum(VacuumOutcome outcome, String warning) {}

  /**
   * Vacuums the hot table ({@link WorkerSql#VACUUM_HOT_TABLE}), in auto-commit mode whatever the pool's
   * default, with no statement deadline (it takes as long as the table needs). PostgreSQL answers a
   * vacuum it skipped with a warning, not an error: lock not available (SQLSTATE 55P03), or not the owner.
   */
  public Vacuum vacuumHotTable() throws SQLException {
    return maintain(vacuumHotTable);
  }

  /**
   * {@link #vacuumHotTable()} that also cuts the empty pages off the table's end
   * ({@link WorkerSql#VACUUM_HOT_TABLE_GIVING_PAGES_BACK}); answered the same way.
   */
  public Vacuum vacuumHotTableGivingPagesBack() throws SQLException {
    return maintain(vacuumHotTableGivingPagesBack);
  }

  /**
   * Refreshes the hot table's planner statistics ({@link WorkerSql#ANALYZE_HOT_TABLE}); answered like
   * {@link #vacuumHotTable()}.
   */
  public Vacuum analyzeHotTable() throws SQLException {
    return maintain(analyzeHotTable);
  }

  private Vacuum maintain(String statement) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(true);
      try (java.sql.Statement s = c.createStatement()) {
        s.execute(statement);
        for (java.sql.SQLWarning w = s.getWarnings(); w != null; w = w.getNextWarning()) {
          if ("55P03".equals(w.getSQLState())) {
            return new Vacuum(VacuumOutcome.LOCKED, w.getMessage());
          }
          if (w.getMessage() != null
              && w.getMessage().toLowerCase(java.util.Locale.ROOT).contains("skipping")) {
            return new Vacuum(VacuumOutcome.REFUSED, w.getMessage());
          }
        }
        return new Vacuum(VacuumOutcome.VACUUMED, null);
      } finally {
        c.setAutoCommit(autoCommit);
      }
    }
  }

  /**
   * Makes the partitions of the history ({@code finished_jobs}) that cover from the last one to now +
   * {@code ahead}, each {@code width} wide (V7__partitioned_history.sql). A lock on the table that is not
   * granted within 200 ms fails the call with SQLState 55P03 (lock_not_available).
   *
   * @return how many were made
   */
  public int ensureHistoryPartitions(Duration width, Duration ahead) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            StatementDeadline.apply(c.prepareStatement(ensureHistoryPartitions))) {
      ps.setLong(1, width.toMillis());
      ps.setLong(2, ahead.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  /**
   * Counts, once, each partition of the history whose upper bound is more than {@code grace} past, for the
   * queue overview (V7__partitioned_history.sql, count_history_partitions): one read of each partition.
   *
   * @return how many partitions it counted
   */
  public int countHistoryPartitions(Duration grace) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            StatementDeadline.apply(c.prepareStatement(countHistoryPartitions))) {
      ps.setLong(1, grace.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  /** A partition of the history dropped past retention, and its row count as the statistics put it. */
  public record DroppedPartition(String name, long approximateRows) {}

  /**
   * Drops the oldest partition of the history whose every row finished longer ago than {@code
   * retention}, with its jobs' idempotency keys, dependency edges, graph names and keys and workflow
   * steps and signals: detached in one statement (which waits at most 200 ms for its lock on the table,
   * else SQLState 55P03), then dropped in another, so that the unlinking of its files at commit holds no
   * lock on the history.
   *
   * @return the partition dropped, or empty when none is past retention
   */
  public Optional<DroppedPartition> dropHistoryPartition(Duration retention) throws SQLException {
    DroppedPartition detached;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(dropHistoryPartition))) {
      ps.setLong(1, retention.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        detached = new DroppedPartition(rs.getString(1), rs.getLong(2));
      }
    }
    dropDetachedTable(detached.name());
    return Optional.of(detached);
  }

  /**
   * Drops the tables of the history that a pass detached and did not drop (its process died between
   * the two statements).
   *
   * @return how many it dropped
   */
  public int dropDetachedHistoryTables() throws SQLException {
    List<String> names = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(detachedHistoryTables));
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        names.add(rs.getString(1));
      }
    }
    for (String name : names) {
      dropDetachedTable(name);
    }
    return names.size();
  }

  private void dropDetachedTable(String name) throws SQLException {
    try (Connection c = dataSource.getConnection();
        java.sql.Statement st = StatementDeadline.apply(c.createStatement())) {
      st.execute("DROP TABLE IF EXISTS " + schema + ".\"" + name.replace("\"", "\"\"") + "\"");
    }
  }

  /**
   * Deletes up to {@code limit} rows older than {@code retention} from the history's default partition
   * (rows written when no partition covered their time), with their jobs' side rows as {@link
   * #dropHistoryPartition} deletes them; returns how many.
   */
  public long pruneDefaultPartition(Duration retention, int limit) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(pruneDefaultPartition))) {
      ps.setLong(1, retention.toMillis());
      ps.setInt(2, limit);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * Deletes at most {@code limit} key rows of unique jobs with finished states that hold nothing any more
   * ({@link WorkerSql#PRUNE_UNIQUE_KEYS}): their holder no longer counts, or their period ended more than
   * {@code grace} ago.
   *
   * @return how many were deleted
   */
  public long pruneUniqueKeys(Duration grace, int limit) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(pruneUniqueKeys))) {
      ps.setLong(1, grace.toMillis());
      ps.setInt(2, limit);
      ps.setLong(3, grace.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
