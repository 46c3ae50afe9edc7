package io.pgjobs.testkit;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Plants jobs in any state straight into the tables, around pgjobs (no notification, no unique or
 * idempotency bookkeeping): for a test that needs a job as a worker or an administrator left it, without
 * driving one there. Unfinished states ({@code queued}, {@code retrying}, {@code running}, {@code blocked})
 * go to {@code jobs}, finished ones ({@code succeeded}, {@code failed}, {@code cancelled}) to {@code finished_jobs}.
 * Every column the schema requires has a default fit for the state, so a test names only what it is about:
 *
 * <pre>{@code
 * UUID id = JobRows.in(db).type("parked").state("cancelled").attempts(1).insert();
 * JobRows.in(db).type("task").queue("q").insert(300); // 300 due jobs, one statement
 * }</pre>
 *
 * <p>Defaults: type {@code numbered}, queue {@code default}, payload {@code {}}, priority 0, state {@code
 * queued}, max attempts 3, attempts 0 (1 for a running or finished job), times now; a running job is
 * locked by {@code test-worker} with claim token 1 and a heartbeat now; a blocked job waits on one parent
 * ({@code waiting_on} 1, with no edge: only a test's own update releases it). Values are bound as parameters, so
 * any text (control characters included) goes in as it is.
 */
public final class JobRows {
  private static final Set<String> UNFINISHED = Set.of("queued", "retrying", "running", "blocked");
  private static final Set<String> FINISHED = Set.of("succeeded", "failed", "cancelled");

  private final DataSource dataSource;
  private String schema = "pgjobs";
  private UUID id;
  private String state = "queued";
  private Integer attempts;
  private final Map<String, Object> values = new LinkedHashMap<>();

  private JobRows(DataSource dataSource) {
    this.dataSource = dataSource;
    values.put("type", "numbered");
    values.put("queue", "default");
    values.put("payload", "{}");
    values.put("priority", 0);
    values.put("max_attempts", 3);
  }

  /** Plants into the test database's {@code pgjobs} schema. */
  public static JobRows in(TestDatabase db) {
    return new JobRows(db.dataSource());
  }

  /** Plants through any data source. */
  public static JobRows in(DataSource dataSource) {
    return new JobRows(dataSource);
  }

  /** The schema of the job tables ({@code pgjobs} unless set). */
  public JobRows schema(String schema) {
    this.schema = schema;
    return this;
  }

  /** The job's id (a random one unless set; for {@link #insert(int)} every row gets a random one). */
  public JobRows id(UUID id) {
    this.id = id;
    return this;
  }

  /**
   * {@code queued}, {@code retrying}, {@code running}, {@code blocked}, {@code succeeded}, {@code failed} or
   * {@code cancelled}.
   */
  public JobRows state(String state) {
    String s = state.toLowerCase(Locale.ROOT);
    if (!UNFINISHED.contains(s) && !FINISHED.contains(s)) {
      throw new IllegalArgumentException("not a job state: " + state);
    }
    this.state = s;
    return this;
  }

  /** The job type's name. */
  public JobRows type(String type) {
    return set("type", type);
  }

  /** The queue. */
  public JobRows queue(String queue) {
    return set("queue", queue);
  }

  /** The payload as JSON text. */
  public JobRows payload(String json) {
    return set("payload", json);
  }

  /** The priority (higher runs first). */
  public JobRows priority(int priority) {
    return set("priority", priority);
  }

  /** Claims so far. */
  public JobRows attempts(int attempts) {
    this.attempts = attempts;
    return this;
  }

  /** The most attempts. */
  public JobRows maxAttempts(int maxAttempts) {
    return set("max_attempts", maxAttempts);
  }

  /** When the job may run. */
  public JobRows runAt(Instant runAt) {
    return set("run_at", runAt);
  }

  /** When it was enqueued. */
  public JobRows createdAt(Instant createdAt) {
    return set("created_at", createdAt);
  }

  /** When a finished job finished. */
  public JobRows finishedAt(Instant finishedAt) {
    return set("finished_at", finishedAt);
  }

  /** The worker holding (running) or that ran (finished) the job. */
  public JobRows lockedBy(String worker) {
    return set("locked_by", worker);
  }

  /** A running job's last heartbeat. */
  public JobRows heartbeatAt(Instant heartbeatAt) {
    return set("heartbeat_at", heartbeatAt);
  }

  /** The claim's token. */
  public JobRows claimToken(long token) {
    return set("claim_token", token);
  }

  /** The free-text context. */
  public JobRows context(String context) {
    return set("context", context);
  }

  /** The errors, a JSON array. */
  public JobRows errors(String jsonArray) {
    return set("errors", jsonArray);
  }

  /** A succeeded job's output as JSON text. */
  public JobRows output(String json) {
    return set("output", json);
  }

  /** The capability a worker needs to claim it. */
  public JobRows capability(String capability) {
    return set("capability", capability);
  }

  /** Any other column, bound as a parameter. */
  public JobRows column(String name, Object value) {
    return set(name, value);
  }

  private JobRows set(String column, Object value) {
    values.put(column, value);
    return this;
  }

  /** Inserts one job and returns its id. */
  public UUID insert() {
    UUID jobId = id != null ? id : UUID.randomUUID();
    Map<String, Object> row = row();
    row.put("id", jobId);
    run(
        "INSERT INTO " + table() + " (" + String.join(", ", row.keySet()) + ") VALUES ("
            + placeholders(row) + ")",
        row);
    return jobId;
  }

  /** Inserts {@code n} such jobs with random ids in one statement. */
  public void insert(int n) {
    if (id != null) {
      throw new IllegalStateException("one id for " + n + " jobs");
    }
    Map<String, Object> row = row();
    run(
        "INSERT INTO " + table() + " (id, " + String.join(", ", row.keySet())
            + ") SELECT gen_random_uuid(), " + placeholders(row) + " FROM generate_series(1, " + n
            + ")",
        row);
  }

  private boolean finished() {
    return FINISHED.contains(state);
  }

  private String table() {
    return schema + "." + (finished() ? "finished_jobs" : "jobs");
  }

  /** The columns to write: the set ones and what the state needs. */
  private Map<String, Object> row() {
    Map<String, Object> row = new LinkedHashMap<>(values);
    row.put("state", state);
    boolean ran = state.equals("running") || finished();
    row.put("attempts", attempts != null ? attempts : ran ? 1 : 0);
    Instant now = Instant.now();
    if (finished()) {
      row.putIfAbsent("run_at", now);
      row.putIfAbsent("created_at", now);
      row.putIfAbsent("errors", "[]");
      row.putIfAbsent("finished_at", now);
    }
    if (state.equals("blocked")) {
      row.putIfAbsent("waiting_on", 1);
    }
    if (state.equals("running")) {
      row.putIfAbsent("locked_by", "test-worker");
      row.putIfAbsent("claim_token", 1L);
      row.putIfAbsent("attempted_at", now);
      row.putIfAbsent("heartbeat_at", now);
    }
    return row;
  }

  private static String placeholders(Map<String, Object> row) {
    List<String> marks = new ArrayList<>();
    row.forEach((column, value) -> marks.add(
        switch (column) {
          case "payload", "errors", "output" -> "?::jsonb";
          default -> "?";
        }));
    return String.join(", ", marks);
  }

  private void run(String sql, Map<String, Object> row) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement st = c.prepareStatement(sql)) {
      int i = 1;
      for (Object value : row.values()) {
        st.setObject(i++, value instanceof Instant t ? t.atOffset(ZoneOffset.UTC) : value);
      }
      st.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }
}
