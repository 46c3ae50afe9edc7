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
import java.util.List;
import java.util.Map;
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
  private final String rescueStale;
  private final String removeDeadWorkers;
  private final String pruneFinished;

  /** A store over {@code schema}. */
  public WorkerStore(DataSource dataSource, String schema, PayloadCodec codec) {
    this.dataSource = dataSource;
    this.codec = codec;
    this.heartbeat = JobSql.forSchema(WorkerSql.HEARTBEAT, schema);
    this.deregister = JobSql.forSchema(WorkerSql.DEREGISTER, schema);
    this.list = JobSql.forSchema(WorkerSql.LIST, schema);
    this.acquireLease = JobSql.forSchema(WorkerSql.ACQUIRE_LEASE, schema);
    this.releaseLease = JobSql.forSchema(WorkerSql.RELEASE_LEASE, schema);
    this.rescueStale = JobSql.forSchema(WorkerSql.RESCUE_STALE, schema);
    this.removeDeadWorkers = JobSql.forSchema(WorkerSql.REMOVE_DEAD_WORKERS, schema);
    this.pruneFinished = JobSql.forSchema(WorkerSql.PRUNE_FINISHED, schema);
  }

  /** Who the worker is, as registered. */
  public record Registration(String id, String host, long pid, Map<String, Integer> queues, Collection<String> jobTypes) {}

  /**
   * Registers or renews the worker and the heartbeats of {@code runningJobs}.
   *
   * @return for each of those jobs still running on this worker, whether its cancellation was asked
   */
  public Map<UUID, Boolean> heartbeat(Registration worker, Collection<UUID> runningJobs) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(heartbeat)) {
      ps.setString(1, worker.id());
      ps.setString(2, worker.host());
      ps.setLong(3, worker.pid());
      ps.setString(4, codec.write(worker.queues()));
      ps.setString(5, codec.write(worker.jobTypes()));
      ps.setArray(6, c.createArrayOf("uuid", runningJobs.toArray()));
      Map<UUID, Boolean> result = new HashMap<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          result.put(rs.getObject(1, UUID.class), rs.getBoolean(2));
        }
      }
      return result;
    }
  }

  /** Removes the worker's row (clean shutdown). */
  public void deregister(String workerId) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(deregister)) {
      ps.setString(1, workerId);
      ps.executeUpdate();
    }
  }

  /** Registered workers, oldest first. */
  public List<WorkerInfo> list() throws SQLException {
    List<WorkerInfo> workers = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(list);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        workers.add(
            new WorkerInfo(
                rs.getString(1),
                rs.getString(2),
                rs.getLong(3),
                codec.mapper().readValue(rs.getString(4), new TypeReference<Map<String, Integer>>() {}),
                codec.mapper().readValue(rs.getString(5), new TypeReference<List<String>>() {}),
                rs.getTimestamp(6).toInstant(),
                rs.getTimestamp(7).toInstant(),
                rs.getLong(8)));
      }
    }
    return workers;
  }

  /** Takes or renews the lease {@code name} for {@code ttl}; true if {@code holder} has it now. */
  public boolean acquireLease(String name, String holder, Duration ttl) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(acquireLease)) {
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
        PreparedStatement ps = c.prepareStatement(releaseLease)) {
      ps.setString(1, name);
      ps.setString(2, holder);
      ps.executeUpdate();
    }
  }

  /** What one rescue pass did. */
  public record RescueCounts(long requeued, long ended) {}

  /** Rescues up to {@code limit} running jobs whose heartbeat is older than {@code staleAfter}. */
  public RescueCounts rescueStale(Duration staleAfter, int limit) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(rescueStale)) {
      ps.setLong(1, staleAfter.toMillis());
      ps.setInt(2, limit);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new RescueCounts(rs.getLong(1), rs.getLong(2));
      }
    }
  }

  /** Removes workers silent for longer than {@code staleAfter}; returns how many. */
  public int removeDeadWorkers(Duration staleAfter) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(removeDeadWorkers)) {
      ps.setLong(1, staleAfter.toMillis());
      return ps.executeUpdate();
    }
  }

  /** Deletes up to {@code limit} finished jobs older than {@code retention}; returns how many. */
  public long pruneFinished(Duration retention, int limit) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(pruneFinished)) {
      ps.setLong(1, retention.toMillis());
      ps.setInt(2, limit);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
