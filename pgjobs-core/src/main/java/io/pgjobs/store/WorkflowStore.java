package io.pgjobs.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The recorded steps of workflow runs ({@link WorkflowSql}). Each write is one statement in auto-commit:
 * a step's record is durable the moment the call returns.
 */
public final class WorkflowStore {
  private final DataSource dataSource;
  private final String steps;
  private final String record;
  private final String step;
  private final String compensated;
  private final String signal;
  private final String findSignal;
  private final String wake;
  private final String flagCancelled;
  private final String cancelRequested;
  private final String rescuedToCompensate;
  private final String awaitJobs;
  private final String setResult;
  private final String endedJobs;

  /** Starts jobs on a connection in its open transaction; returns their ids. */
  @FunctionalInterface
  public interface JobStarter {
    /** Enqueues the jobs on {@code transaction}. */
    List<UUID> start(Connection transaction) throws SQLException;
  }

  /**
   * A job a run awaited, as it ended.
   *
   * @param id its id
   * @param type its type
   * @param state {@code succeeded}, {@code failed} or {@code cancelled}
   * @param output its output as JSON text, or null
   * @param lastError the message of its last error, or null
   */
  public record EndedJob(UUID id, String type, String state, String output, String lastError) {}

  /**
   * A recorded step.
   *
   * @param name its name
   * @param kind {@code step}, {@code sleep}, {@code signal} or {@code jobs}
   * @param state {@code done}, {@code skipped}, {@code compensated} or {@code compensation_failed}
   * @param result its result as JSON text (a sleep's: its wake-up instant), or null
   * @param error a skipped step's or failed compensation's error, or null
   * @param seq the order in which it first ran, from 1
   * @param finishedAt when it was recorded (or its compensation ended)
   */
  public record StepRecord(
      String name,
      String kind,
      String state,
      String result,
      String error,
      int seq,
      Instant finishedAt) {}

  /** A store over {@code schema}. */
  public WorkflowStore(DataSource dataSource, String schema) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.steps = JobSql.forSchema(WorkflowSql.STEPS, schema);
    this.record = JobSql.forSchema(WorkflowSql.RECORD, schema);
    this.step = JobSql.forSchema(WorkflowSql.STEP, schema);
    this.compensated = JobSql.forSchema(WorkflowSql.COMPENSATED, schema);
    this.signal = JobSql.forSchema(WorkflowSql.SIGNAL, schema);
    this.findSignal = JobSql.forSchema(WorkflowSql.FIND_SIGNAL, schema);
    this.wake = JobSql.forSchema(WorkflowSql.WAKE, schema);
    this.flagCancelled = JobSql.forSchema(WorkflowSql.FLAG_CANCELLED, schema);
    this.cancelRequested = JobSql.forSchema(WorkflowSql.CANCEL_REQUESTED, schema);
    this.rescuedToCompensate = JobSql.forSchema(WorkflowSql.RESCUED_TO_COMPENSATE, schema);
    this.awaitJobs = JobSql.forSchema(WorkflowSql.AWAIT_JOBS, schema);
    this.setResult = JobSql.forSchema(WorkflowSql.SET_RESULT, schema);
    this.endedJobs = JobSql.forSchema(WorkflowSql.ENDED_JOBS, schema);
  }

  /**
   * Starts the jobs a run awaits as its step {@code name}, once: in one transaction, records the step
   * (kind {@code jobs}), enqueues the jobs with {@code starter}, makes them the run's parents and records
   * their ids as the step's result. If the step was recorded before (an earlier execution started them),
   * starts nothing. Returns the ids recorded, as JSON text.
   */
  public String startJobs(UUID runId, String name, JobStarter starter) throws SQLException {
    String[] result = new String[1];
    try (Connection c = dataSource.getConnection()) {
      Transactions.inTransaction(c, () -> {
        boolean mine;
        try (PreparedStatement ps = c.prepareStatement(record)) {
          ps.setObject(1, runId);
          ps.setString(2, name);
          ps.setObject(3, runId);
          ps.setString(4, "jobs");
          ps.setString(5, "done");
          ps.setString(6, "[]");
          ps.setString(7, null);
          try (ResultSet rs = ps.executeQuery()) {
            mine = rs.next();
          }
        }
        if (!mine) {
          // An earlier execution started them (its record committed): read what it recorded.
          try (PreparedStatement ps = c.prepareStatement(step)) {
            ps.setObject(1, runId);
            ps.setString(2, name);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              result[0] = rs.getString(2);
            }
          }
          return;
        }
        List<UUID> ids = starter.start(c);
        try (PreparedStatement ps = c.prepareStatement(awaitJobs)) {
          ps.setObject(1, runId);
          ps.setArray(2, c.createArrayOf("uuid", ids.toArray()));
          ps.executeUpdate();
        }
        StringBuilder json = new StringBuilder("[");
        for (UUID id : ids) {
          json.append(json.length() > 1 ? "," : "").append('"').append(id).append('"');
        }
        result[0] = json.append(']').toString();
        try (PreparedStatement ps = c.prepareStatement(setResult)) {
          ps.setString(1, result[0]);
          ps.setObject(2, runId);
          ps.setString(3, name);
          ps.executeUpdate();
        }
      });
    }
    return result[0];
  }

  /** The jobs of {@code ids} that have ended (those not ended yet are left out). */
  public List<EndedJob> endedJobs(List<UUID> ids) throws SQLException {
    List<EndedJob> out = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(endedJobs)) {
      ps.setArray(1, c.createArrayOf("uuid", ids.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new EndedJob(
              rs.getObject(1, UUID.class),
              rs.getString(2),
              rs.getString(3),
              rs.getString(4),
              rs.getString(5)));
        }
      }
    }
    return out;
  }

  /** Every recorded step of run {@code runId}, in the order they first ran. */
  public List<StepRecord> steps(UUID runId) throws SQLException {
    List<StepRecord> out = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(steps)) {
      ps.setObject(1, runId);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new StepRecord(
              rs.getString(1),
              rs.getString(2),
              rs.getString(3),
              rs.getString(4),
              rs.getString(5),
              rs.getInt(6),
              rs.getTimestamp(7).toInstant()));
        }
      }
    }
    return out;
  }

  /**
   * Records a step's outcome, or finds the one recorded first (another execution of the run got there
   * before): returns what is recorded now, as {@code {state, result}}.
   */
  public String[] record(
      UUID runId, String name, String kind, String state, String resultJson, String error)
      throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      try (PreparedStatement ps = c.prepareStatement(record)) {
        ps.setObject(1, runId);
        ps.setString(2, name);
        ps.setObject(3, runId);
        ps.setString(4, kind);
        ps.setString(5, state);
        ps.setString(6, resultJson);
        ps.setString(7, error);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            return new String[] {state, resultJson};
          }
        }
      }
      try (PreparedStatement ps = c.prepareStatement(step)) {
        ps.setObject(1, runId);
        ps.setString(2, name);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return new String[] {rs.getString(1), rs.getString(2)};
        }
      }
    }
  }

  /**
   * Records that a done step's compensation ended ({@code compensated} or {@code compensation_failed}).
   *
   * @return false if the step was not done any more (compensated before)
   */
  public boolean compensated(UUID runId, String name, String state, String error)
      throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(compensated)) {
      ps.setString(1, state);
      ps.setString(2, error);
      ps.setObject(3, runId);
      ps.setString(4, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /**
   * Stores signal {@code name} for run {@code runId} (the first of a name counts).
   *
   * @return false if a signal of that name had come before (this one is not stored)
   */
  public boolean signal(UUID runId, String name, String payloadJson) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(signal)) {
      ps.setObject(1, runId);
      ps.setString(2, name);
      ps.setString(3, payloadJson);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** The payload of signal {@code name} of run {@code runId} as JSON text, or null if none came. */
  public String findSignal(UUID runId, String name) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(findSignal)) {
      ps.setObject(1, runId);
      ps.setString(2, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  /**
   * Makes a waiting run's job due now (a snoozed job: {@code queued} with a future run_at).
   *
   * @return the job's state after it (null: it has ended), so a caller can see it still running
   */
  public String wake(UUID runId) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(wake)) {
      ps.setObject(1, runId);
      ps.setObject(2, runId);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }

  /** Sets run {@code runId}'s job's cancel flag (its execution compensated and ends it cancelled). */
  public void flagCancelled(UUID runId) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(flagCancelled)) {
      ps.setObject(1, runId);
      ps.executeUpdate();
    }
  }

  /** Whether run {@code runId}'s cancellation was asked (false for an unknown run). */
  public boolean cancelRequested(UUID runId) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(cancelRequested)) {
      ps.setObject(1, runId);
      ps.setObject(2, runId);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }

  /**
   * Whether run {@code runId} was rescued after its worker died during its last attempt, and given one
   * execution more to compensate its done steps (the marker {@code (rescued)}, WorkerSql.RESCUE).
   */
  public boolean rescuedToCompensate(UUID runId) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(rescuedToCompensate)) {
      ps.setObject(1, runId);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
  }
}
