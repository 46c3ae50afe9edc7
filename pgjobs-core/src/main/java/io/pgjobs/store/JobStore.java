package io.pgjobs.store;

import static io.pgjobs.store.Transactions.inTransaction;

import io.pgjobs.CancelCounts;
import io.pgjobs.CancelResult;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.Job;
import io.pgjobs.JobFilter;
import io.pgjobs.JobPage;
import io.pgjobs.JobState;
import io.pgjobs.MinuteStats;
import io.pgjobs.QueueInfo;
import io.pgjobs.PgJobsException;
import io.pgjobs.QueueCounts;
import io.pgjobs.json.PayloadCodec;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;
import tools.jackson.databind.json.JsonMapper;

/**
 * The seam between pgjobs and PostgreSQL: one method per operation, each one statement. Methods that take
 * a {@link Connection} run in the caller's transaction and leave commit to the caller; the others take a
 * connection from the data source in auto-commit mode.
 */
public final class JobStore {
  private static final Set<JobState> HOT_STATES = Set.of(JobState.QUEUED, JobState.RETRYING, JobState.RUNNING);
  private static final int COPY_CHUNK_CHARS = 1 << 20;
  /**
   * Writes the job events of bulk inserts: pgjobs' own format, whatever the application's mapper does
   * (an indenting mapper would make the payload longer than the entries measured).
   */
  private static final JsonMapper EVENT_JSON = JsonMapper.builder().build();

  private final DataSource dataSource;
  private final String schema;
  private final PayloadCodec codec;
  private final JobRowMapper rows;

  private final String insert;
  private final String insertWithKey;
  private final String findKey;
  private final String copyJobs;
  private final String copyDueJobs;
  private final String get;
  private final String cancel;
  private final String cancelMatching;
  private final String retryFinished;
  private final String countByQueue;
  private final String readyDepth;
  private final String retryMatching;
  private final String setQueuePaused;
  private final String notifyReady;
  private final String notifyCopied;
  private final String queueOverview;
  private final String statsPerMinute;

  /**
   * @param schema the pgjobs schema (lowercase letters, digits, underscores)
   */
  public JobStore(DataSource dataSource, String schema, PayloadCodec codec) {
    this.dataSource = dataSource;
    this.schema = JobSql.requireSchema(schema);
    this.codec = codec;
    this.rows = new JobRowMapper(codec);
    this.insert = sql(EnqueueSql.INSERT);
    this.insertWithKey = sql(EnqueueSql.INSERT_WITH_KEY);
    this.findKey = sql(EnqueueSql.FIND_KEY);
    this.copyJobs = sql(EnqueueSql.COPY_JOBS);
    this.copyDueJobs = sql(EnqueueSql.COPY_DUE_JOBS);
    this.get = sql(JobSql.GET);
    this.cancel = sql(AdminSql.CANCEL);
    this.cancelMatching = sql(AdminSql.CANCEL_MATCHING);
    this.retryFinished = sql(AdminSql.RETRY_FINISHED);
    this.countByQueue = sql(AdminSql.COUNT_BY_QUEUE);
    this.readyDepth = sql(AdminSql.READY_DEPTH);
    this.retryMatching = sql(AdminSql.RETRY_MATCHING);
    this.setQueuePaused = sql(AdminSql.SET_QUEUE_PAUSED);
    this.notifyReady = sql(AdminSql.NOTIFY_READY);
    this.notifyCopied = sql(EnqueueSql.NOTIFY_COPIED);
    this.queueOverview = sql(AdminSql.QUEUE_OVERVIEW);
    this.statsPerMinute = sql(AdminSql.STATS_PER_MINUTE);
  }

  /** The schema this store works in. */
  public String schema() {
    return schema;
  }

  /** The data source. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** The JSON codec. */
  public PayloadCodec codec() {
    return codec;
  }

  // ---------------------------------------------------------------- enqueue

  /**
   * Inserts one job, or finds the job its idempotency key already names.
   *
   * @param connection the caller's connection (its transaction, if any, decides whether the job exists)
   */
  public EnqueuedJob insert(Connection connection, NewJob job) throws SQLException {
    boolean keyed = job.idempotencyKey() != null;
    try (PreparedStatement ps = connection.prepareStatement(keyed ? insertWithKey : insert)) {
      int i = 1;
      if (keyed) {
        ps.setString(i++, job.idempotencyKey());
        ps.setObject(i++, job.id());
      } else {
        ps.setObject(i++, job.id());
      }
      ps.setString(i++, job.type());
      ps.setString(i++, job.queue());
      ps.setString(i++, job.payloadJson());
      ps.setInt(i++, job.priority());
      ps.setInt(i++, job.maxAttempts());
      setInstant(ps, i++, job.runAt());
      ps.setLong(i++, job.delayMs() == null ? 0L : job.delayMs());
      ps.setString(i++, job.context());
      ps.setString(i++, job.idempotencyKey());
      setLong(ps, i, job.timeoutMs());
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          Job stored =
              new Job(
                  job.id(), job.type(), job.queue(), codec.tree(job.payloadJson()), job.priority(),
                  JobState.QUEUED, 0, job.maxAttempts(), JobRowMapper.instant(rs, "run_at"),
                  JobRowMapper.instant(rs, "created_at"), null, null, null, null, job.context(),
                  job.idempotencyKey(),
                  job.timeoutMs() == null ? null : java.time.Duration.ofMillis(job.timeoutMs()),
                  null, null, List.of(), null, false);
          return new EnqueuedJob(stored, false);
        }
      }
    }
    UUID original;
    try (PreparedStatement ps = connection.prepareStatement(findKey)) {
      ps.setString(1, job.idempotencyKey());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new PgJobsException(
              "idempotency key '" + job.idempotencyKey() + "' conflicted but names no job; try again");
        }
        original = rs.getObject(1, UUID.class);
      }
    }
    Job existing =
        get(connection, original)
            .orElseThrow(
                () -> new PgJobsException(
                    "idempotency key '" + job.idempotencyKey() + "' names job " + original
                        + ", which no longer exists; try again"));
    return new EnqueuedJob(existing, true);
  }

  /**
   * Inserts many jobs with one COPY (jobs without idempotency keys) in a transaction of its own, on a
   * connection from the data source: the rows and their wake-up notification commit together (a
   * notification is delivered at commit, so workers never wake before the rows are visible). All or none
   * are stored. A failure is reported as it happened (see {@link #insertAll(Connection, List)}); a
   * rollback that fails after it is attached as suppressed.
   */
  public void insertAll(List<NewJob> jobs) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      inTransaction(c, () -> insertAll(c, jobs));
    }
  }

  /**
   * Inserts many jobs with one COPY (jobs without idempotency keys). Delays are turned into absolute
   * times with the database's clock, read once.
   *
   * <p>If the connection is lost during the COPY (SQLState class 08, or the server terminated the
   * session), it is aborted before the failure is thrown, so that its pool discards it: the caller's
   * transaction is gone either way, and the connection must not be handed out again.
   */
  public void insertAll(Connection connection, List<NewJob> jobs) throws SQLException {
    if (jobs.isEmpty()) {
      return;
    }
    // Jobs due now (the usual bulk enqueue) leave state, run_at and created_at to the columns' defaults
    // ('queued', now(), now()): parsing two timestamps per row is a quarter of the server's COPY time.
    boolean allDueNow = jobs.stream().allMatch(j -> j.runAt() == null && (j.delayMs() == null || j.delayMs() == 0));
    Instant now = null;
    if (!allDueNow) {
      try (Statement st = connection.createStatement();
          ResultSet rs = st.executeQuery(EnqueueSql.NOW)) {
        rs.next();
        now = rs.getTimestamp(1).toInstant();
      }
    }
    CopyIn copy = null;
    try {
      copy = connection.unwrap(PGConnection.class).getCopyAPI().copyIn(allDueNow ? copyDueJobs : copyJobs);
      CopyRows rowsOut = new CopyRows();
      for (NewJob job : jobs) {
        rowsOut
            .uuid(job.id())
            .text(job.type())
            .text(job.queue())
            .text(job.payloadJson())
            .number(job.priority())
            .number(job.maxAttempts())
            .text(job.context())
            .number(job.timeoutMs());
        if (!allDueNow) {
          Instant runAt =
              job.runAt() != null ? job.runAt() : job.delayMs() == null ? now : now.plusMillis(job.delayMs());
          rowsOut.instant(runAt).instant(now);
        }
        rowsOut.endRow();
        if (rowsOut.length() >= COPY_CHUNK_CHARS) {
          byte[] chunk = rowsOut.drain();
          copy.writeToCopy(chunk, 0, chunk.length);
        }
      }
      byte[] chunk = rowsOut.drain();
      if (chunk.length > 0) {
        copy.writeToCopy(chunk, 0, chunk.length);
      }
      copy.endCopy();
    } catch (Throwable e) {
      if (copy != null && copy.isActive()) {
        try {
          copy.cancelCopy(); // the connection stays usable for the caller's rollback
        } catch (SQLException | RuntimeException cancel) {
          e.addSuppressed(cancel); // the failure that stopped the COPY is the one to report
        }
      }
      if (connectionLost(e)) {
        discard(connection, e);
      }
      throw e;
    }
    announceCopied(connection, jobs, now);
  }

  /**
   * True if {@code failure} (or a cause, chained or suppressed exception of it) says the session is
   * gone: SQLState class 08 (connection exception), or 57P01 to 57P03 (terminated by an administrator,
   * crash or shutdown of the server, which the driver reports before the socket closes).
   */
  private static boolean connectionLost(Throwable failure) {
    ArrayDeque<Throwable> todo = new ArrayDeque<>();
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    todo.add(failure);
    while (!todo.isEmpty() && seen.size() < 50) {
      Throwable t = todo.poll();
      if (!seen.add(t)) {
        continue;
      }
      if (t instanceof SQLException sql) {
        String state = sql.getSQLState();
        if (state != null && (state.startsWith("08") || state.equals("57P01") || state.equals("57P02")
            || state.equals("57P03"))) {
          return true;
        }
        if (sql.getNextException() != null) {
          todo.add(sql.getNextException());
        }
      }
      if (t.getCause() != null) {
        todo.add(t.getCause());
      }
      todo.addAll(List.of(t.getSuppressed()));
    }
    return false;
  }

  /**
   * Makes sure a connection lost under a COPY is not used again. The COPY runs on the driver's own
   * connection ({@code unwrap}), below the pool's proxy, so the pool never saw the failure. And the
   * driver leaves the connection open after a failed COPY or its BEGIN: a pool would take it back and
   * hand it out again (HikariCP does not validate a connection used within the last 500 ms), and every
   * bulk enqueue on it would fail the same way, for as long as it kept being reused. So: abort it (the
   * driver closes the socket), then touch it through {@code connection}, the pool's proxy: the driver
   * answers "connection has been closed" (SQLState 08003), and a pool that watches its proxies for
   * connection errors (HikariCP does, for class 08) evicts it at once; another pool finds it closed when
   * it resets or validates it; a plain data source's connection is simply closed.
   */
  private static void discard(Connection connection, Throwable failure) {
    try {
      connection.abort(Runnable::run); // this thread: closed before the touch below
    } catch (SQLException | RuntimeException e) {
      failure.addSuppressed(e);
    }
    try {
      // clearWarnings, not getAutoCommit: HikariCP answers the latter from its own state once the
      // auto-commit mode was set, without asking the driver.
      connection.clearWarnings();
    } catch (SQLException expected) {
      // The "closed" error the pool had to see; nothing to report.
    }
  }

  /**
   * What {@link JobSql#NOTIFY_INSERTED} does for a statement, for rows that came in by COPY: the same
   * entries, listed while their UTF-8 bytes stay within {@link JobSql#EVENT_JOBS_MAX_BYTES}, so the
   * notification can never abort the caller's transaction for being too long.
   */
  private void announceCopied(Connection connection, List<NewJob> jobs, Instant now) throws SQLException {
    Set<String> dueQueues = new java.util.LinkedHashSet<>();
    List<Map<String, Object>> listed = new ArrayList<>(Math.min(JobSql.EVENT_JOBS_MAX_COUNT, jobs.size()));
    long listedBytes = 0;
    boolean full = false;
    for (NewJob job : jobs) {
      boolean due =
          now == null
              || (job.runAt() != null ? !job.runAt().isAfter(now) : job.delayMs() == null || job.delayMs() <= 0);
      if (due) {
        dueQueues.add(job.queue());
      }
      if (!full && listed.size() < JobSql.EVENT_JOBS_MAX_COUNT) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("id", job.id());
        event.put("state", "queued");
        event.put("type", eventName(job.type()));
        event.put("queue", eventName(job.queue()));
        event.put("attempts", 0);
        listedBytes += EVENT_JSON.writeValueAsString(event).getBytes(StandardCharsets.UTF_8).length;
        // A prefix, as in SQL: once one entry does not fit, none after it is listed either.
        full = listedBytes > JobSql.EVENT_JOBS_MAX_BYTES;
        if (!full) {
          listed.add(event);
        }
      }
    }
    Map<String, Object> payload = new LinkedHashMap<>();
    payload.put("op", "state");
    payload.put("count", jobs.size());
    payload.put("truncated", listed.size() < jobs.size());
    payload.put("jobs", listed);
    try (PreparedStatement ps = connection.prepareStatement(notifyCopied)) {
      ps.setArray(1, connection.createArrayOf("text", dueQueues.toArray()));
      ps.setString(2, EVENT_JSON.writeValueAsString(payload));
      ps.execute();
    }
  }

  /** A type or queue name as a job event carries it: its first {@link JobSql#EVENT_NAME_MAX_CHARS} characters. */
  private static String eventName(String name) {
    if (name == null || name.codePointCount(0, name.length()) <= JobSql.EVENT_NAME_MAX_CHARS) {
      return name;
    }
    return name.substring(0, name.offsetByCodePoints(0, JobSql.EVENT_NAME_MAX_CHARS));
  }

  // ---------------------------------------------------------------- reading

  /** The job, wherever it is. */
  public Optional<Job> get(UUID id) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      return get(c, id);
    }
  }

  /** The job, in the caller's connection. */
  public Optional<Job> get(Connection connection, UUID id) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(get)) {
      ps.setObject(1, id);
      ps.setObject(2, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rows.map(rs)) : Optional.empty();
      }
    }
  }

  /**
   * A page of jobs, newest first (by id, which is time-ordered). Each table is asked for at most one
   * page through its primary key, then the two are merged.
   */
  public JobPage list(JobFilter filter) throws SQLException {
    boolean hot = filter.states().isEmpty() || filter.states().stream().anyMatch(HOT_STATES::contains);
    boolean finished =
        filter.states().isEmpty() || filter.states().stream().anyMatch(s -> !HOT_STATES.contains(s));
    try (Connection c = dataSource.getConnection()) {
      List<Object> params = new ArrayList<>();
      List<String> parts = new ArrayList<>();
      if (hot) {
        parts.add(listPart(c, "jobs", JobSql.HOT_COLUMNS, filter, params));
      }
      if (finished) {
        parts.add(listPart(c, "finished_jobs", JobSql.FINISHED_COLUMNS, filter, params));
      }
      String sql = "SELECT * FROM (" + String.join("\nUNION ALL\n", parts) + ") AS page ORDER BY id DESC LIMIT ?";
      params.add(filter.limit());
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        for (int i = 0; i < params.size(); i++) {
          ps.setObject(i + 1, params.get(i));
        }
        List<Job> jobs = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            jobs.add(rows.map(rs));
          }
        }
        return JobPage.of(jobs, filter.limit());
      }
    }
  }

  /** One table's share of a page; only whitelisted columns are named, every value is a parameter. */
  private String listPart(Connection c, String table, String columns, JobFilter filter, List<Object> params)
      throws SQLException {
    List<String> where = new ArrayList<>();
    if (!filter.states().isEmpty()) {
      where.add("state = ANY(?)");
      params.add(c.createArrayOf("text", filter.states().stream().map(JobState::value).toArray()));
    }
    if (!filter.types().isEmpty()) {
      where.add("type = ANY(?)");
      params.add(c.createArrayOf("text", filter.types().toArray()));
    }
    if (!filter.queues().isEmpty()) {
      where.add("queue = ANY(?)");
      params.add(c.createArrayOf("text", filter.queues().toArray()));
    }
    if (filter.createdAfter() != null) {
      where.add("created_at > ?");
      params.add(Timestamp.from(filter.createdAfter()));
    }
    if (filter.createdBefore() != null) {
      where.add("created_at < ?");
      params.add(Timestamp.from(filter.createdBefore()));
    }
    if (filter.text() != null) {
      // strpos, not LIKE: the text is matched literally, % and _ included.
      where.add("(strpos(lower(payload::text), lower(?)) > 0 OR strpos(lower(context), lower(?)) > 0)");
      params.add(filter.text());
      params.add(filter.text());
    }
    if (filter.after() != null) {
      where.add("id < ?");
      params.add(filter.after());
    }
    params.add(filter.limit());
    return "(SELECT " + columns + " FROM " + schema + "." + table
        + (where.isEmpty() ? "" : " WHERE " + String.join(" AND ", where))
        + " ORDER BY id DESC LIMIT ?)";
  }

  /** Counts per queue and state, every state present. */
  public List<QueueCounts> countByQueue() throws SQLException {
    Map<String, EnumMap<JobState, Long>> counts = new LinkedHashMap<>();
    Map<String, Long> scheduled = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(countByQueue);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        String queue = rs.getString(1);
        EnumMap<JobState, Long> perState =
            counts.computeIfAbsent(
                queue,
                q -> {
                  EnumMap<JobState, Long> m = new EnumMap<>(JobState.class);
                  for (JobState s : JobState.values()) {
                    m.put(s, 0L);
                  }
                  return m;
                });
        perState.merge(JobState.parse(rs.getString(2)), rs.getLong(3), Long::sum);
        scheduled.merge(queue, rs.getLong(4), Long::sum);
      }
    }
    List<QueueCounts> result = new ArrayList<>();
    counts.entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .forEach(e -> result.add(new QueueCounts(e.getKey(), Map.copyOf(e.getValue()), scheduled.get(e.getKey()))));
    return result;
  }

  /** Pauses or resumes a queue; a resumed queue's workers are woken in the same transaction. */
  public void setQueuePaused(String queue, boolean paused) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      inTransaction(
          c,
          () -> {
            try (PreparedStatement ps = c.prepareStatement(setQueuePaused)) {
              ps.setString(1, queue);
              ps.setBoolean(2, paused);
              ps.executeUpdate();
            }
            if (!paused) {
              try (PreparedStatement wake = c.prepareStatement(notifyReady)) {
                wake.setString(1, queue);
                wake.execute();
              }
            }
          });
    }
  }

  /** Every known queue with counts per state, oldest due job's age and paused flag, by name. */
  public List<QueueInfo> queues() throws SQLException {
    Map<String, EnumMap<JobState, Long>> counts = new LinkedHashMap<>();
    Map<String, Long> scheduled = new LinkedHashMap<>();
    Map<String, Long> oldestDueMs = new LinkedHashMap<>();
    Map<String, Boolean> paused = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(queueOverview);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        String queue = rs.getString(1);
        EnumMap<JobState, Long> perState = counts.computeIfAbsent(queue, q -> zeroCounts());
        String state = rs.getString(2);
        if (state != null) {
          perState.merge(JobState.parse(state), rs.getLong(3), Long::sum);
        }
        scheduled.merge(queue, rs.getLong(4), Long::sum);
        double oldest = rs.getDouble(5);
        if (!rs.wasNull()) {
          oldestDueMs.merge(queue, (long) oldest, Math::max);
        }
        paused.put(queue, rs.getBoolean(6));
      }
    }
    List<QueueInfo> result = new ArrayList<>();
    counts.forEach((queue, perState) -> result.add(new QueueInfo(
        queue, Map.copyOf(perState), scheduled.getOrDefault(queue, 0L),
        oldestDueMs.containsKey(queue) ? java.time.Duration.ofMillis(oldestDueMs.get(queue)) : null,
        paused.getOrDefault(queue, false))));
    return result;
  }

  /** Jobs finished per minute over the last {@code window}, by type, queue and final state. */
  public List<MinuteStats> statsPerMinute(java.time.Duration window) throws SQLException {
    List<MinuteStats> stats = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(statsPerMinute)) {
      ps.setLong(1, window.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          stats.add(new MinuteStats(rs.getTimestamp(1).toInstant(), rs.getString(2), rs.getString(3),
              JobState.parse(rs.getString(4)), rs.getLong(5)));
        }
      }
    }
    return stats;
  }

  private static EnumMap<JobState, Long> zeroCounts() {
    EnumMap<JobState, Long> m = new EnumMap<>(JobState.class);
    for (JobState s : JobState.values()) {
      m.put(s, 0L);
    }
    return m;
  }

  /** Due jobs per queue (queue depth). */
  public Map<String, Long> readyDepth() throws SQLException {
    Map<String, Long> depth = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(readyDepth);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        depth.put(rs.getString(1), rs.getLong(2));
      }
    }
    return depth;
  }

  /**
   * Cancels one job: a waiting one at once, a running one by flag (its worker stops it). Tries again
   * when the job changed state between the statement's parts.
   */
  public CancelResult cancel(Connection connection, UUID id) throws SQLException {
    for (int round = 0; round < 5; round++) {
      try (PreparedStatement ps = connection.prepareStatement(cancel)) {
        ps.setObject(1, id);
        ps.setObject(2, id);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (rs.getLong(1) > 0) {
            return new CancelResult(CancelResult.Outcome.CANCELLED, JobState.CANCELLED);
          }
          if (rs.getLong(2) > 0) {
            return new CancelResult(CancelResult.Outcome.PENDING_ON_WORKER, JobState.RUNNING);
          }
        }
      }
      Optional<Job> job = get(connection, id);
      if (job.isEmpty()) {
        return new CancelResult(CancelResult.Outcome.NOT_FOUND, null);
      }
      if (job.get().state().isTerminal()) {
        return new CancelResult(CancelResult.Outcome.ALREADY_TERMINAL, job.get().state());
      }
      if (job.get().state() == JobState.RUNNING && job.get().cancelRequested()) {
        return new CancelResult(CancelResult.Outcome.PENDING_ON_WORKER, JobState.RUNNING);
      }
      // It moved between waiting and running while we looked: go again.
    }
    throw new PgJobsException("job " + id + " kept changing state while being cancelled; try again");
  }

  /** Cancels every waiting or running job of the given types and queues (empty = any). */
  public CancelCounts cancelMatching(Connection connection, Set<String> types, Set<String> queues, Set<JobState> states)
      throws SQLException {
    List<Object> values = new ArrayList<>();
    String sql = cancelMatching.replace("{where}", matching(connection, types, queues, states, values));
    try (PreparedStatement ps = connection.prepareStatement(sql)) {
      int i = 1;
      for (int part = 0; part < 2; part++) {
        for (Object value : values) {
          ps.setObject(i++, value);
        }
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new CancelCounts(rs.getLong(1), rs.getLong(2));
      }
    }
  }

  /** Puts every failed or cancelled job of the given types, queues and states back in the queue. */
  public long retryMatching(Connection connection, Set<String> types, Set<String> queues, Set<JobState> states)
      throws SQLException {
    List<Object> values = new ArrayList<>();
    String sql = retryMatching.replace("{where}", matching(connection, types, queues, states, values));
    try (PreparedStatement ps = connection.prepareStatement(sql)) {
      for (int i = 0; i < values.size(); i++) {
        ps.setObject(i + 1, values.get(i));
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * The condition of a bulk operation: whitelisted columns only, each value appended to {@code values}
   * as a bound array. {@code true} when nothing narrows it.
   */
  private static String matching(
      Connection connection, Set<String> types, Set<String> queues, Set<JobState> states, List<Object> values)
      throws SQLException {
    List<String> where = new ArrayList<>();
    if (!types.isEmpty()) {
      where.add("type = ANY(?)");
      values.add(connection.createArrayOf("text", types.toArray()));
    }
    if (!queues.isEmpty()) {
      where.add("queue = ANY(?)");
      values.add(connection.createArrayOf("text", queues.toArray()));
    }
    if (!states.isEmpty()) {
      where.add("state = ANY(?)");
      values.add(connection.createArrayOf("text", states.stream().map(JobState::value).toArray()));
    }
    return where.isEmpty() ? "true" : String.join(" AND ", where);
  }

  /** Puts a failed or cancelled job back in the queue. */
  public io.pgjobs.RetryResult retry(Connection connection, UUID id) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(retryFinished)) {
      ps.setObject(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          return io.pgjobs.RetryResult.RETRIED;
        }
      }
    }
    return get(connection, id).isPresent() ? io.pgjobs.RetryResult.NOT_RETRYABLE : io.pgjobs.RetryResult.NOT_FOUND;
  }

  private String sql(String template) {
    return JobSql.forSchema(template, schema);
  }

  private static void setInstant(PreparedStatement ps, int index, Instant value) throws SQLException {
    if (value == null) {
      ps.setNull(index, Types.TIMESTAMP_WITH_TIMEZONE);
    } else {
      ps.setObject(index, java.time.OffsetDateTime.ofInstant(value, java.time.ZoneOffset.UTC));
    }
  }

  private static void setLong(PreparedStatement ps, int index, Long value) throws SQLException {
    if (value == null) {
      ps.setNull(index, Types.BIGINT);
    } else {
      ps.setLong(index, value);
    }
  }
}
