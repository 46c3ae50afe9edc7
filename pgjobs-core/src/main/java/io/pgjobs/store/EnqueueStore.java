package io.pgjobs.store;

import static io.pgjobs.store.Transactions.inTransaction;

import io.pgjobs.EnqueueOutcomeUnknownException;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.IdempotencyKeyReusedException;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsException;
import io.pgjobs.json.PayloadCodec;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import tools.jackson.databind.json.JsonMapper;

/**
 * The statements that enqueue jobs ({@link EnqueueSql}): one job, one job with an idempotency key, many
 * by COPY (with or without idempotency keys), many unique jobs, each with the notifications of what it
 * inserted. Methods that take a {@link Connection} run
 * in the caller's transaction and leave commit to the caller; {@link #insertAll(List)} takes a connection
 * from the data source and runs in a transaction of its own.
 */
public final class EnqueueStore {
  /**
   * Writes the job events of bulk inserts: pgjobs' own format, whatever the application's mapper does
   * (an indenting mapper would make the payload longer than the entries measured).
   */
  private static final JsonMapper EVENT_JSON = JsonMapper.builder().build();

  private final DataSource dataSource;
  private final PayloadCodec codec;
  private final JobRowMapper rows;

  private final String insert;
  private final String insertWithKey;
  private final String insertUnique;
  private final String insertUniqueMany;
  private final String insertUniqueStates;
  private final String insertUniqueStatesMany;
  private final String replaceUniqueHolders;
  private final String findKey;
  private final String copyJobs;
  private final String copyDueJobs;
  private final String insertKeys;
  private final String findKeys;
  private final String copyKeyedJobs;
  private final String copyDueKeyedJobs;
  private final JobLookup lookup;
  private final String notifyCopied;

  /** A store over {@code schema} (lowercase letters, digits, underscores). */
  public EnqueueStore(DataSource dataSource, String schema, PayloadCodec codec) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.codec = codec;
    this.rows = new JobRowMapper(codec);
    JobSql.requireSchema(schema);
    this.insert = JobSql.forSchema(EnqueueSql.INSERT, schema);
    this.insertWithKey = JobSql.forSchema(EnqueueSql.INSERT_WITH_KEY, schema);
    this.insertUnique = JobSql.forSchema(EnqueueSql.INSERT_UNIQUE, schema);
    this.insertUniqueMany = JobSql.forSchema(EnqueueSql.INSERT_UNIQUE_MANY, schema);
    this.insertUniqueStates = JobSql.forSchema(EnqueueSql.INSERT_UNIQUE_STATES, schema);
    this.insertUniqueStatesMany = JobSql.forSchema(EnqueueSql.INSERT_UNIQUE_STATES_MANY, schema);
    this.replaceUniqueHolders = JobSql.forSchema(EnqueueSql.REPLACE_UNIQUE_HOLDERS, schema);
    this.findKey = JobSql.forSchema(EnqueueSql.FIND_KEY, schema);
    this.copyJobs = JobSql.forSchema(EnqueueSql.COPY_JOBS, schema);
    this.copyDueJobs = JobSql.forSchema(EnqueueSql.COPY_DUE_JOBS, schema);
    this.insertKeys = JobSql.forSchema(EnqueueSql.INSERT_KEYS, schema);
    this.findKeys = JobSql.forSchema(EnqueueSql.FIND_KEYS, schema);
    this.copyKeyedJobs = JobSql.forSchema(EnqueueSql.COPY_KEYED_JOBS, schema);
    this.copyDueKeyedJobs = JobSql.forSchema(EnqueueSql.COPY_DUE_KEYED_JOBS, schema);
    this.lookup = new JobLookup(schema, this.rows);
    this.notifyCopied = JobSql.forSchema(EnqueueSql.NOTIFY_COPIED, schema);
  }

  /**
   * Inserts one job, or finds the job its idempotency key already names.
   *
   * @param connection the caller's connection (its transaction, if any, decides whether the job exists)
   */
  public EnqueuedJob insert(Connection connection, NewJob job) throws SQLException {
    if (job.unique() != null) {
      return insertUnique(connection, job);
    }
    boolean keyed = job.idempotencyKey() != null;
    try (PreparedStatement ps =
        StatementDeadline.apply(connection.prepareStatement(keyed ? insertWithKey : insert))) {
      int i = 1;
      if (keyed) {
        ps.setString(i++, job.idempotencyKey());
        ps.setObject(i++, job.id());
        ps.setString(i++, job.idempotencyFingerprint());
      } else {
        ps.setObject(i++, job.id());
      }
      i = bindColumns(ps, i, job, true);
      ps.setString(i, job.idempotencyKey());
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          Job stored = new Job(
              job.id(),
              job.type(),
              job.queue(),
              codec.tree(job.payloadJson()),
              job.priority(),
              JobState.QUEUED,
              0,
              job.maxAttempts(),
              JobRowMapper.instant(rs, "run_at"),
              JobRowMapper.instant(rs, "created_at"),
              null,
              null,
              null,
              null,
              job.context(),
              job.idempotencyKey(),
              job.timeoutMs() == null ? null : java.time.Duration.ofMillis(job.timeoutMs()),
              null,
              null,
              List.of(),
              null,
              false,
              job.parentId(),
              job.capability());
          return new EnqueuedJob(stored, false);
        }
      }
    }
    UUID original;
    try (PreparedStatement ps = StatementDeadline.apply(connection.prepareStatement(findKey))) {
      ps.setString(1, job.idempotencyKey());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new PgJobsException("idempotency key '" + job.idempotencyKey()
              + "' conflicted but names no job; try again");
        }
        original = rs.getObject(1, UUID.class);
        String fingerprint = rs.getString(2);
        // NULL: a key stored without a fingerprint answers any request.
        if (fingerprint != null && !fingerprint.equals(job.idempotencyFingerprint())) {
          throw new IdempotencyKeyReusedException(job.idempotencyKey(), original);
        }
      }
    }
    Job existing = get(connection, original)
        .orElseThrow(() -> new PgJobsException("idempotency key '" + job.idempotencyKey()
            + "' names job " + original + ", which no longer exists; try again"));
    return new EnqueuedJob(existing, true);
  }

  /** A unique job: the new one, or the unfinished job with its key (see {@link EnqueueSql#INSERT_UNIQUE}). */
  private EnqueuedJob insertUnique(Connection connection, NewJob job) throws SQLException {
    io.pgjobs.UniqueOptions u = job.unique();
    if (!u.finishedStates().isEmpty()) {
      return insertUniqueStates(connection, job);
    }
    boolean replaceRunAt = u.replaces(io.pgjobs.UniqueOptions.Replace.RUN_AT);
    try (PreparedStatement ps =
        StatementDeadline.apply(connection.prepareStatement(insertUnique))) {
      int i = 1;
      ps.setObject(i++, job.id());
      i = bindColumns(ps, i, job, true);
      ps.setBytes(i++, job.uniqueBase());
      setLong(ps, i++, u.period() == null ? null : u.period().toMillis());
      ps.setBoolean(i++, replaceRunAt);
      ps.setBoolean(i++, u.replaces(io.pgjobs.UniqueOptions.Replace.PAYLOAD));
      ps.setObject(i++, job.id());
      ps.setBoolean(i, replaceRunAt);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next(); // an upsert always returns its row
        return new EnqueuedJob(rows.map(rs), false, rs.getBoolean("duplicate"));
      }
    }
  }

  /**
   * A unique job whose rule counts finished states ({@link EnqueueSql#INSERT_UNIQUE_STATES}): the new job,
   * or the holder of its key as the statement saw it. A holder to replace, or one the statement could not
   * see (a concurrent enqueue committed it while this one waited for the key), is replaced (when asked
   * and still waiting) and read by id in following statements, which see it.
   */
  private EnqueuedJob insertUniqueStates(Connection connection, NewJob job) throws SQLException {
    io.pgjobs.UniqueOptions u = job.unique();
    UUID holder;
    try (PreparedStatement ps =
        StatementDeadline.apply(connection.prepareStatement(insertUniqueStates))) {
      int i = 1;
      ps.setBytes(i++, job.uniqueBase());
      setLong(ps, i++, u.period() == null ? null : u.period().toMillis());
      ps.setObject(i++, job.id());
      ps.setArray(i++, connection.createArrayOf("text", finishedStates(u)));
      i = bindColumns(ps, i, job, true);
      ps.setObject(i, job.id());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next(); // the key upsert always returns its row, with the job when the snapshot sees it
        holder = rs.getObject("holder_id", UUID.class);
        if (holder.equals(job.id())) {
          return new EnqueuedJob(rows.map(rs), false, false);
        }
        if (u.replace().isEmpty() && rs.getObject("id") != null) {
          return new EnqueuedJob(rows.map(rs), false, true);
        }
      }
    }
    if (!u.replace().isEmpty()) {
      replaceHolders(connection, job, u, new Object[] {holder}, new String[] {job.payloadJson()});
    }
    Job existing = get(connection, holder)
        .orElseThrow(() -> new PgJobsException("the unique key of this job names job " + holder
            + ", which no longer exists; try again"));
    return new EnqueuedJob(existing, false, true);
  }

  /**
   * Replaces run_at and/or payload of the waiting ones of {@code holders}
   * ({@link EnqueueSql#REPLACE_UNIQUE_HOLDERS}).
   */
  private void replaceHolders(
      Connection connection,
      NewJob job,
      io.pgjobs.UniqueOptions u,
      Object[] holders,
      String[] payloads)
      throws SQLException {
    boolean replaceRunAt = u.replaces(io.pgjobs.UniqueOptions.Replace.RUN_AT);
    try (PreparedStatement ps =
        StatementDeadline.apply(connection.prepareStatement(replaceUniqueHolders))) {
      int i = 1;
      ps.setBoolean(i++, replaceRunAt);
      setInstant(ps, i++, job.runAt());
      ps.setLong(i++, job.delayMs() == null ? 0L : job.delayMs());
      ps.setBoolean(i++, u.replaces(io.pgjobs.UniqueOptions.Replace.PAYLOAD));
      ps.setArray(i++, connection.createArrayOf("uuid", holders));
      ps.setArray(i++, connection.createArrayOf("text", payloads));
      ps.setBoolean(i, replaceRunAt);
      ps.executeQuery().close();
    }
  }

  private static Object[] finishedStates(io.pgjobs.UniqueOptions u) {
    return u.finishedStates().stream().map(JobState::value).toArray();
  }

  /**
   * Inserts many unique jobs of one type with the same options in one statement
   * ({@link EnqueueSql#INSERT_UNIQUE_MANY}); jobs with equal keys in the batch become one job (the first's,
   * with the last's payload if payloads are replaced, as one-by-one enqueues would leave it).
   *
   * @return for each job, in order, the id of the job that stands for it (new or existing), and how many
   *     were new
   */
  public UniqueBatch insertAllUnique(Connection connection, List<NewJob> jobs) throws SQLException {
    if (jobs.isEmpty()) {
      return new UniqueBatch(List.of(), 0);
    }
    NewJob first = jobs.getFirst();
    io.pgjobs.UniqueOptions u = first.unique();
    // Jobs are told apart by their keys' bases: the statement adds the period, from its own now(),
    // as the single insert does (one period for the whole batch, so equal bases are equal keys).
    Long periodMs = u.period() == null ? null : u.period().toMillis();
    boolean replacePayload = u.replaces(io.pgjobs.UniqueOptions.Replace.PAYLOAD);
    List<String> keys = new ArrayList<>(jobs.size());
    java.util.TreeMap<String, NewJob[]> distinct =
        new java.util.TreeMap<>(); // by key base: {first, last}
    for (NewJob job : jobs) {
      String key = java.util.HexFormat.of().formatHex(job.uniqueBase());
      keys.add(key);
      NewJob[] pair = distinct.computeIfAbsent(key, k -> new NewJob[] {job, job});
      pair[1] = job;
    }
    int n = distinct.size();
    Object[] ids = new Object[n];
    String[] payloads = new String[n];
    String[] hexKeys = new String[n];
    String[] limitKeys = new String[n];
    int k = 0;
    for (Map.Entry<String, NewJob[]> e : distinct.entrySet()) {
      ids[k] = e.getValue()[0].id();
      NewJob kept = replacePayload ? e.getValue()[1] : e.getValue()[0];
      payloads[k] = kept.payloadJson();
      limitKeys[k] = kept.limitKey();
      hexKeys[k] = e.getKey();
      k++;
    }
    Map<String, UUID> idByKey = new java.util.HashMap<>();
    int inserted = 0;
    if (!u.finishedStates().isEmpty()) {
      int[] made = new int[1];
      if (connection.getAutoCommit() && !u.replace().isEmpty()) {
        // Two statements (insert, then replace in the holders): one transaction keeps the call all
        // or none.
        inTransaction(
            connection,
            () -> made[0] = insertUniqueStatesMany(
                connection, first, u, periodMs, ids, payloads, hexKeys, limitKeys, idByKey));
      } else {
        made[0] = insertUniqueStatesMany(
            connection, first, u, periodMs, ids, payloads, hexKeys, limitKeys, idByKey);
      }
      inserted = made[0];
      List<UUID> result = new ArrayList<>(keys.size());
      for (String key : keys) {
        result.add(idByKey.get(key));
      }
      return new UniqueBatch(List.copyOf(result), inserted);
    }
    boolean replaceRunAt = u.replaces(io.pgjobs.UniqueOptions.Replace.RUN_AT);
    try (PreparedStatement ps =
        StatementDeadline.apply(connection.prepareStatement(insertUniqueMany))) {
      int i = 1;
      ps.setArray(i++, connection.createArrayOf("uuid", ids));
      ps.setArray(i++, connection.createArrayOf("text", payloads));
      ps.setArray(i++, connection.createArrayOf("text", hexKeys));
      ps.setArray(i++, connection.createArrayOf("text", limitKeys));
      setLong(ps, i++, periodMs);
      // The batch's options are the same for every job (one span for the batch: its trace context
      // too).
      i = bindColumns(ps, i, first, false);
      ps.setBoolean(i++, replaceRunAt);
      ps.setBoolean(i++, replacePayload);
      ps.setBoolean(i, replaceRunAt);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          idByKey.put(rs.getString("unique_key"), rs.getObject("id", UUID.class));
          inserted = rs.getInt("inserted");
        }
      }
    }
    List<UUID> result = new ArrayList<>(keys.size());
    for (String key : keys) {
      result.add(idByKey.get(key));
    }
    return new UniqueBatch(List.copyOf(result), inserted);
  }

  /**
   * The bulk insert of unique jobs whose rule counts finished states ({@link EnqueueSql#INSERT_UNIQUE_STATES_MANY}),
   * then the replacements in the holders that were there before, when asked. Fills {@code idByKey}.
   *
   * @return how many jobs were new
   */
  private int insertUniqueStatesMany(
      Connection connection,
      NewJob first,
      io.pgjobs.UniqueOptions u,
      Long periodMs,
      Object[] ids,
      String[] payloads,
      String[] hexKeys,
      String[] limitKeys,
      Map<String, UUID> idByKey)
      throws SQLException {
    int inserted = 0;
    try (PreparedStatement ps =
        StatementDeadline.apply(connection.prepareStatement(insertUniqueStatesMany))) {
      int i = 1;
      ps.setArray(i++, connection.createArrayOf("uuid", ids));
      ps.setArray(i++, connection.createArrayOf("text", payloads));
      ps.setArray(i++, connection.createArrayOf("text", hexKeys));
      ps.setArray(i++, connection.createArrayOf("text", limitKeys));
      setLong(ps, i++, periodMs);
      ps.setArray(i++, connection.createArrayOf("text", finishedStates(u)));
      // The batch's options are the same for every job (one span for the batch: its trace context
      // too).
      bindColumns(ps, i, first, false);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          idByKey.put(rs.getString("unique_key"), rs.getObject("id", UUID.class));
          inserted = rs.getInt("inserted");
        }
      }
    }
    if (!u.replace().isEmpty()) {
      List<Object> holders = new ArrayList<>();
      List<String> holderPayloads = new ArrayList<>();
      for (int k = 0; k < ids.length; k++) {
        UUID holder = idByKey.get(hexKeys[k]);
        if (!holder.equals(ids[k])) {
          holders.add(holder);
          holderPayloads.add(payloads[k]);
        }
      }
      if (!holders.isEmpty()) {
        replaceHolders(
            connection, first, u, holders.toArray(), holderPayloads.toArray(String[]::new));
      }
    }
    return inserted;
  }

  /**
   * What a bulk insert did: the job id for each job asked for (the new job, or for a unique job or a key
   * already used, the job that stands for it), and how many were new.
   */
  public record UniqueBatch(List<UUID> ids, int inserted) {}

  /**
   * Inserts many jobs with one COPY in a transaction of its own, on a connection from the data source:
   * the rows (with their keys, if they have idempotency keys) and their wake-up notification commit
   * together (a notification is delivered at commit, so workers never wake before the rows are visible).
   * All or none are stored. A failure is reported as it happened (see {@link #insertAll(Connection, List)});
   * a rollback that fails after it is attached as suppressed.
   *
   * @throws EnqueueOutcomeUnknownException if the connection was lost while the COMMIT was under way: the
   *     batch may have been stored (all of it) or not; any other failure means nothing was stored
   */
  public UniqueBatch insertAll(List<NewJob> jobs) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      UniqueBatch[] batch = new UniqueBatch[1];
      boolean[] committing = new boolean[1];
      try {
        inTransaction(c, () -> {
          batch[0] = insertAll(c, jobs);
          committing[0] = true; // what fails from here on is the COMMIT
        });
      } catch (SQLException | RuntimeException e) {
        if (committing[0] && BrokenConnections.connectionLost(e)) {
          throw outcomeUnknown(e);
        }
        throw e;
      }
      return batch[0];
    }
  }

  /**
   * The failure of an enqueue that lost its connection while its commit was under way (its COMMIT, or
   * its one statement committed on its own, had gone out): it may have been stored.
   */
  public static EnqueueOutcomeUnknownException outcomeUnknown(Throwable cause) {
    return new EnqueueOutcomeUnknownException(
        "database error: " + cause.getMessage()
            + " (the connection was lost while the enqueue committed:"
            + " its jobs may or may not be stored; call again with the same idempotency keys to store each once)",
        cause);
  }

  /**
   * Inserts many jobs with one COPY. Delays are turned into absolute times with the database's clock,
   * read once. Jobs with idempotency keys (every job of the batch has one, or none has) go in as
   * {@link #insertKeyed} says.
   *
   * <p>If the connection is lost during the COPY (SQLState class 08, or the server terminated the
   * session), it is aborted before the failure is thrown, so that its pool discards it: the caller's
   * transaction is gone either way, and the connection must not be handed out again.
   *
   * @return each job's id, in order (for a job whose key was already used: the id of the job the key
   *     names), and how many jobs were new
   */
  public UniqueBatch insertAll(Connection connection, List<NewJob> jobs) throws SQLException {
    if (jobs.isEmpty()) {
      return new UniqueBatch(List.of(), 0);
    }
    if (jobs.getFirst().idempotencyKey() != null) {
      return insertKeyed(connection, jobs);
    }
    copy(connection, jobs, false, null);
    return new UniqueBatch(jobs.stream().map(NewJob::id).toList(), jobs.size());
  }

  /**
   * How a job of a graph goes in: {@code blocked} with {@code waitingOn} parents in its graph (0:
   * {@code queued}), and whether a job of its graph waits for it.
   *
   * @param waitingOn its parents in the graph
   * @param hasDependents whether it is a parent in the graph
   */
  public record GraphPlacement(int waitingOn, boolean hasDependents) {}

  /**
   * Inserts the jobs of a graph with one COPY, each already as the graph places it ({@code placements},
   * one per job, in order): a job waiting for parents of its graph goes in {@code blocked}, and a parent
   * marked, so that the edges within the graph need no second write of either row. Jobs without keys.
   */
  public void insertGraph(Connection connection, List<NewJob> jobs, List<GraphPlacement> placements)
      throws SQLException {
    if (placements.size() != jobs.size()) {
      throw new IllegalArgumentException(
          placements.size() + " placements for " + jobs.size() + " jobs");
    }
    copy(connection, jobs, false, placements);
  }

  /**
   * Jobs with idempotency keys, in bulk: the keys in one statement ({@link EnqueueSql#INSERT_KEYS}), then
   * the jobs whose keys went in by COPY, then, if some keys were there already, what they name
   * ({@link EnqueueSql#FIND_KEYS}): the same request (fingerprint) answers with the job the key names, a
   * different one is refused ({@link IdempotencyKeyReusedException}: the caller's transaction must then
   * roll back, as the bulk call's own does). Three statements in the caller's transaction, whatever the
   * batch size; a retry of a batch whose keys all went in costs two.
   */
  private UniqueBatch insertKeyed(Connection connection, List<NewJob> jobs) throws SQLException {
    int n = jobs.size();
    String[] keys = new String[n];
    Object[] ids = new Object[n];
    String[] fingerprints = new String[n];
    for (int i = 0; i < n; i++) {
      NewJob job = jobs.get(i);
      if (job.idempotencyKey() == null) {
        throw new IllegalArgumentException(
            "a bulk insert's jobs all have idempotency keys, or none has");
      }
      keys[i] = job.idempotencyKey();
      ids[i] = job.id();
      fingerprints[i] = job.idempotencyFingerprint();
    }
    Set<UUID> inserted = new HashSet<>();
    try (PreparedStatement ps = StatementDeadline.apply(connection.prepareStatement(insertKeys))) {
      ps.setArray(1, connection.createArrayOf("text", keys));
      ps.setArray(2, connection.createArrayOf("uuid", ids));
      ps.setArray(3, connection.createArrayOf("text", fingerprints));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          inserted.add(rs.getObject(1, UUID.class));
        }
      }
    }
    List<NewJob> fresh = jobs.stream().filter(j -> inserted.contains(j.id())).toList();
    if (!fresh.isEmpty()) {
      copy(connection, fresh, true, null);
    }
    if (fresh.size() == n) {
      return new UniqueBatch(jobs.stream().map(NewJob::id).toList(), n);
    }
    Map<String, String[]> named = new HashMap<>(); // key -> {job id, fingerprint}
    try (PreparedStatement ps = StatementDeadline.apply(connection.prepareStatement(findKeys))) {
      ps.setArray(
          1,
          connection.createArrayOf(
              "text",
              jobs.stream()
                  .filter(j -> !inserted.contains(j.id()))
                  .map(NewJob::idempotencyKey)
                  .distinct()
                  .toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          named.put(rs.getString(1), new String[] {rs.getString(2), rs.getString(3)});
        }
      }
    }
    List<UUID> result = new ArrayList<>(n);
    for (NewJob job : jobs) {
      if (inserted.contains(job.id())) {
        result.add(job.id());
        continue;
      }
      String[] row = named.get(job.idempotencyKey());
      if (row == null) {
        throw new PgJobsException("idempotency key '" + job.idempotencyKey()
            + "' conflicted but names no job; try again");
      }
      UUID original = UUID.fromString(row[0]);
      // NULL: a key stored without a fingerprint answers any request, as in insert().
      if (row[1] != null && !row[1].equals(job.idempotencyFingerprint())) {
        throw new IdempotencyKeyReusedException(job.idempotencyKey(), original);
      }
      result.add(original);
    }
    return new UniqueBatch(List.copyOf(result), fresh.size());
  }

  /**
   * The COPY of {@code jobs} and its notifications ({@link CopiedAnnouncement}, gathered in the same pass); {@code keyed}: with each
   * job's idempotency key in its row; {@code graph} (or null): each job's state, count of parents and
   * parent mark.
   */
  private void copy(
      Connection connection, List<NewJob> jobs, boolean keyed, List<GraphPlacement> graph)
      throws SQLException {
    // Jobs due now (the usual bulk enqueue) leave state, run_at and created_at to the columns'
    // defaults ('queued', now(), now()): parsing two timestamps per row is a quarter of the
    // server's COPY time. Streamed jobs are not made yet (that is the point): their batch knows.
    boolean allDueNow = jobs instanceof StreamedJobs streamed
        ? streamed.dueNow()
        : jobs.stream()
            .allMatch(j -> j.runAt() == null && (j.delayMs() == null || j.delayMs() == 0));
    Instant now = null;
    if (!allDueNow) {
      try (Statement st = connection.createStatement();
          ResultSet rs = st.executeQuery(EnqueueSql.NOW)) {
        rs.next();
        now = rs.getTimestamp(1).toInstant();
      }
    }
    String copySql = keyed
        ? (allDueNow ? copyDueKeyedJobs : copyKeyedJobs)
        : (allDueNow ? copyDueJobs : copyJobs);
    if (graph != null) {
      copySql = EnqueueSql.withGraphColumns(copySql);
    }
    Instant dueAt = now;
    CopiedAnnouncement announced = new CopiedAnnouncement(now);
    CopyStatement.copy(connection, copySql, jobs.size(), (i, rowsOut) -> {
      NewJob job = jobs.get(i);
      rowsOut
          .uuid(job.id())
          .text(job.type())
          .text(job.queue())
          .text(job.payloadJson())
          .number(job.priority())
          .number(job.maxAttempts())
          .text(job.context())
          .number(job.timeoutMs())
          .text(job.capability())
          .text(job.traceContext())
          .text(job.limitKey());
      if (keyed) {
        rowsOut.text(job.idempotencyKey());
      }
      if (!allDueNow) {
        Instant runAt = job.runAt() != null
            ? job.runAt()
            : job.delayMs() == null ? dueAt : dueAt.plusMillis(job.delayMs());
        rowsOut.instant(runAt).instant(dueAt);
      }
      boolean blocked = false;
      if (graph != null) {
        GraphPlacement place = graph.get(i);
        blocked = place.waitingOn() > 0;
        rowsOut
            .text(blocked ? "blocked" : "queued")
            .number(blocked ? Long.valueOf(place.waitingOn()) : null)
            .text(place.hasDependents() ? "t" : "f");
      }
      announced.add(job, blocked);
    });
    announced.send(connection, notifyCopied);
  }

  /**
   * What {@link JobSql#NOTIFY_INSERTED} does for a statement, for rows that came in by COPY: the same
   * entries, listed while their UTF-8 bytes stay within {@link JobSql#EVENT_JOBS_MAX_BYTES}, so the
   * notification can never abort the caller's transaction for being too long. Gathered as the COPY
   * writes each row ({@link #add}), in the same pass: a graph's jobs are made as the COPY reads them and
   * not kept, so they cannot be read a second time.
   */
  private static final class CopiedAnnouncement {
    private final Instant now;
    private final Set<String> dueQueues = new java.util.LinkedHashSet<>();
    private final List<Map<String, Object>> listed = new ArrayList<>();
    private long listedBytes;
    private boolean full;
    private int count;

    /** {@code now}: the database's time the rows' run times were computed from, or null if all are due now. */
    CopiedAnnouncement(Instant now) {
      this.now = now;
    }

    void add(NewJob job, boolean blocked) {
      count++;
      boolean due = !blocked
          && (now == null
              || (job.runAt() != null
                  ? !job.runAt().isAfter(now)
                  : job.delayMs() == null || job.delayMs() <= 0));
      if (due) {
        dueQueues.add(job.queue());
      }
      if (!full && listed.size() < JobSql.EVENT_JOBS_MAX_COUNT) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("id", job.id());
        event.put("state", blocked ? "blocked" : "queued");
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

    void send(Connection connection, String notifyCopied) throws SQLException {
      Map<String, Object> payload = new LinkedHashMap<>();
      payload.put("op", "state");
      payload.put("count", count);
      payload.put("truncated", listed.size() < count);
      payload.put("jobs", listed);
      try (PreparedStatement ps =
          StatementDeadline.apply(connection.prepareStatement(notifyCopied))) {
        ps.setArray(1, connection.createArrayOf("text", dueQueues.toArray()));
        ps.setString(2, EVENT_JSON.writeValueAsString(payload));
        ps.execute();
      }
    }
  }

  /** A type or queue name as a job event carries it: its first {@link JobSql#EVENT_NAME_MAX_CHARS} characters. */
  private static String eventName(String name) {
    if (name == null || name.codePointCount(0, name.length()) <= JobSql.EVENT_NAME_MAX_CHARS) {
      return name;
    }
    return name.substring(0, name.offsetByCodePoints(0, JobSql.EVENT_NAME_MAX_CHARS));
  }

  /** The job, in the caller's connection (as {@link AdminStore#get(Connection, UUID)} reads it). */
  private Optional<Job> get(Connection connection, UUID id) throws SQLException {
    return lookup.get(connection, id);
  }

  /**
   * Binds the job columns every insert writes, in the order the statements of {@link EnqueueSql} list
   * them: type, queue, payload (unless the rows' payloads come from an array), priority, max attempts,
   * run_at, delay, context, timeout, parent, capability, trace context, partition key (the bulk unique
   * statements: the key of rows that have none in their array).
   *
   * @return the next parameter index
   */
  private static int bindColumns(PreparedStatement ps, int i, NewJob job, boolean payload)
      throws SQLException {
    ps.setString(i++, job.type());
    ps.setString(i++, job.queue());
    if (payload) {
      ps.setString(i++, job.payloadJson());
    }
    ps.setInt(i++, job.priority());
    ps.setInt(i++, job.maxAttempts());
    setInstant(ps, i++, job.runAt());
    ps.setLong(i++, job.delayMs() == null ? 0L : job.delayMs());
    ps.setString(i++, job.context());
    setLong(ps, i++, job.timeoutMs());
    ps.setObject(i++, job.parentId(), Types.OTHER);
    ps.setString(i++, job.capability());
    ps.setString(i++, job.traceContext());
    ps.setString(i++, job.limitKey());
    return i;
  }

  private static void setInstant(PreparedStatement ps, int index, Instant value)
      throws SQLException {
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
