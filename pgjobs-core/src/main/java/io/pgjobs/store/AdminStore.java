package io.pgjobs.store;

import static io.pgjobs.store.Transactions.inTransaction;

import io.pgjobs.CancelCounts;
import io.pgjobs.CancelResult;
import io.pgjobs.Job;
import io.pgjobs.JobFilter;
import io.pgjobs.JobPage;
import io.pgjobs.JobState;
import io.pgjobs.MinuteStats;
import io.pgjobs.PgJobsException;
import io.pgjobs.QueueCounts;
import io.pgjobs.QueueInfo;
import io.pgjobs.json.PayloadCodec;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * The statements of administration ({@link AdminSql}): reads of jobs, counts and overviews, cancel and
 * retry (one job or all that match), pause and resume of queues. Methods that take a {@link Connection}
 * run in the caller's transaction and leave commit to the caller; the others take a connection from the
 * data source in auto-commit mode, except {@link #setQueuePaused}, which runs in a transaction of its own.
 */
public final class AdminStore {
  /** How often a text search asks again whether the trigram index exists: 30 s. */
  static final long TEXT_INDEX_RECHECK_NANOS = TimeUnit.SECONDS.toNanos(30);

  private static final Set<JobState> HOT_STATES =
      Set.of(JobState.QUEUED, JobState.RETRYING, JobState.RUNNING);

  private final DataSource dataSource;
  private final String schema;
  private final JobRowMapper rows;

  private final JobLookup lookup;
  private final String cancel;
  private final String cancelMatching;
  private final String retryFinished;
  private final String hotCounts;
  private final String finishedCounts;
  private final String readyDepth;
  private final String blockedDepth;
  private final String retryMatching;
  private final String countCancelMatching;
  private final String countRetryMatching;
  private final String setQueuePaused;
  private final String notifyReady;
  private final String queueOverview;
  private final String unrunnable;
  private final String servedQueues;
  private final String statsPerMinute;
  private volatile TextIndexLookup trigramIndex;

  /** A store over {@code schema} (lowercase letters, digits, underscores). */
  public AdminStore(DataSource dataSource, String schema, PayloadCodec codec) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.schema = JobSql.requireSchema(schema);
    this.rows = new JobRowMapper(codec);
    this.lookup = new JobLookup(schema, this.rows);
    this.cancel = JobSql.forSchema(AdminSql.CANCEL, schema);
    this.cancelMatching = JobSql.forSchema(AdminSql.CANCEL_MATCHING, schema);
    this.retryFinished = JobSql.forSchema(AdminSql.RETRY_FINISHED, schema);
    this.hotCounts = JobSql.forSchema(AdminSql.HOT_COUNTS, schema);
    this.finishedCounts = JobSql.forSchema(AdminSql.FINISHED_COUNTS, schema);
    this.readyDepth = JobSql.forSchema(AdminSql.READY_DEPTH, schema);
    this.blockedDepth = JobSql.forSchema(AdminSql.BLOCKED_DEPTH, schema);
    this.retryMatching = JobSql.forSchema(AdminSql.RETRY_MATCHING, schema);
    this.countCancelMatching = JobSql.forSchema(AdminSql.COUNT_CANCEL_MATCHING, schema);
    this.countRetryMatching = JobSql.forSchema(AdminSql.COUNT_RETRY_MATCHING, schema);
    this.setQueuePaused = JobSql.forSchema(AdminSql.SET_QUEUE_PAUSED, schema);
    this.notifyReady = JobSql.forSchema(AdminSql.NOTIFY_READY, schema);
    this.queueOverview = JobSql.forSchema(AdminSql.QUEUE_OVERVIEW, schema);
    this.unrunnable = JobSql.forSchema(AdminSql.UNRUNNABLE, schema);
    this.servedQueues = JobSql.forSchema(AdminSql.SERVED_QUEUES, schema);
    this.statsPerMinute = JobSql.forSchema(AdminSql.STATS_PER_MINUTE, schema);
  }

  /** The schema this store works in. */
  public String schema() {
    return schema;
  }

  /** Ids of the jobs {@code parent}'s handler enqueued, oldest first, at most {@code limit}. */
  public List<UUID> children(UUID parent, int limit) throws SQLException {
    List<UUID> ids = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(JobSql.forSchema(AdminSql.CHILDREN, schema))) {
      ps.setObject(1, parent);
      ps.setObject(2, parent);
      ps.setInt(3, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getObject(1, UUID.class));
        }
      }
    }
    return ids;
  }

  /** The job, wherever it is. */
  public Optional<Job> get(UUID id) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      return get(c, id);
    }
  }

  /** The job, in the caller's connection. */
  public Optional<Job> get(Connection connection, UUID id) throws SQLException {
    return lookup.get(connection, id);
  }

  /**
   * A page of jobs, newest first (by id, which is time-ordered). Each table is asked for at most one
   * page through its primary key, then the two are merged.
   */
  public JobPage list(JobFilter filter) throws SQLException {
    boolean hot =
        filter.states().isEmpty() || filter.states().stream().anyMatch(HOT_STATES::contains);
    // Scheduled jobs are queued ones: only the hot table has them.
    boolean finished = !Boolean.TRUE.equals(filter.scheduled())
        && (filter.states().isEmpty()
            || filter.states().stream().anyMatch(s -> !HOT_STATES.contains(s)));
    try (Connection c = dataSource.getConnection()) {
      if (finished && filter.text() != null && filter.text().length() >= 3 && trigramIndex(c)) {
        // A text many jobs contain is found among the newest finished jobs at once; one that few
        // contain
        // through the trigram index. The probe is exact when it fills a page with finished jobs:
        // every
        // match it did not read is older than all it read.
        List<Job> probed = listOnce(c, filter, hot, FinishedRead.PROBE);
        UUID boundary = probeBoundary(c, filter);
        // (Compared as text: PostgreSQL orders uuids by their bytes, unsigned, as their hex text
        // sorts.)
        boolean exact = boundary == null
            || (probed.size() == filter.limit()
                && probed.getLast().id().toString().compareTo(boundary.toString()) >= 0);
        if (exact) {
          return JobPage.of(probed, filter.limit());
        }
        return JobPage.of(
            listOnce(c, filter, hot, FinishedRead.THROUGH_TEXT_INDEX), filter.limit());
      }
      return JobPage.of(
          listOnce(c, filter, hot, finished ? FinishedRead.NEWEST_FIRST : null), filter.limit());
    }
  }

  /** How the list reads finished_jobs (null: not at all). */
  private enum FinishedRead {
    /** Through the primary key, newest first, until a page matched. */
    NEWEST_FIRST,
    /** The newest {@value #PROBE_ROWS} rows matching all but the text, then the text among them. */
    PROBE,
    /** Every row matching the text, through the trigram index, then the newest of them. */
    THROUGH_TEXT_INDEX,
    /** Not a read of jobs: the id of the oldest row a probe reads. */
    BOUNDARY;

    static final int PROBE_ROWS = 5000;
  }

  /**
   * The oldest of the finished jobs a probe reads (the {@value FinishedRead#PROBE_ROWS}th newest matching all
   * but the text), or null when fewer match: the probe then read them all. Its primary key answers this.
   */
  private UUID probeBoundary(Connection c, JobFilter filter) throws SQLException {
    List<Object> params = new ArrayList<>();
    String sql = listPart(c, "finished_jobs", "id", filter, params, FinishedRead.BOUNDARY);
    try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(sql))) {
      for (int i = 0; i < params.size(); i++) {
        ps.setObject(i + 1, params.get(i));
      }
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getObject(1, UUID.class) : null;
      }
    }
  }

  private List<Job> listOnce(Connection c, JobFilter filter, boolean hot, FinishedRead finished)
      throws SQLException {
    List<Object> params = new ArrayList<>();
    List<String> parts = new ArrayList<>();
    if (hot) {
      parts.add(listPart(c, "jobs", JobSql.HOT_COLUMNS, filter, params, FinishedRead.NEWEST_FIRST));
    }
    if (finished != null) {
      parts.add(listPart(c, "finished_jobs", JobSql.FINISHED_COLUMNS, filter, params, finished));
    }
    String sql = "SELECT * FROM (" + String.join("\nUNION ALL\n", parts)
        + ") AS page ORDER BY id DESC LIMIT ?";
    params.add(filter.limit());
    try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(sql))) {
      for (int i = 0; i < params.size(); i++) {
        ps.setObject(i + 1, params.get(i));
      }
      List<Job> jobs = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          jobs.add(rows.map(rs));
        }
      }
      return jobs;
    }
  }

  /** One table's share of a page; only whitelisted columns are named, every value is a parameter. */
  private String listPart(
      Connection c,
      String table,
      String columns,
      JobFilter filter,
      List<Object> params,
      FinishedRead read)
      throws SQLException {
    List<String> where = new ArrayList<>();
    if (!filter.states().isEmpty()) {
      where.add("state = ANY(?)");
      params.add(
          c.createArrayOf("text", filter.states().stream().map(JobState::value).toArray()));
    }
    if (!filter.types().isEmpty()) {
      where.add("type = ANY(?)");
      params.add(c.createArrayOf("text", filter.types().toArray()));
    }
    if (!filter.queues().isEmpty()) {
      where.add("queue = ANY(?)");
      params.add(c.createArrayOf("text", filter.queues().toArray()));
    }
    // The creation time filters read the id (UUIDv7: the time the enqueue was called) through the
    // index the list walks anyway: a range of ids. created_at (the enqueue transaction's start) has
    // no index on the partitioned history, where a filter on it read every partition's rows newer
    // than the bound.
    if (filter.createdAfter() != null) {
      where.add("id >= ?");
      params.add(UuidV7.after(filter.createdAfter()));
    }
    if (filter.createdBefore() != null) {
      where.add("id < ?");
      params.add(UuidV7.before(filter.createdBefore()));
    }
    if (filter.scheduled() != null && table.equals("jobs")) {
      where.add(
          filter.scheduled()
              ? "(state = 'queued' AND run_at > now())"
              : "NOT (state = 'queued' AND run_at > now())");
    }
    if (filter.after() != null) {
      where.add("id < ?");
      params.add(filter.after());
    }
    if (read == FinishedRead.BOUNDARY) {
      return "SELECT id FROM " + schema + "." + table + where(where) + " ORDER BY id DESC OFFSET "
          + (FinishedRead.PROBE_ROWS - 1) + " LIMIT 1";
    }
    // The text last, so its parameter comes after the others in every form below. ILIKE over the
    // expression of finished_jobs_text_trgm_idx, so that trigram index serves it where the operator
    // created it; % _ and \ are escaped, so the text is matched literally.
    String text = null;
    if (filter.text() != null) {
      text = JobSql.SEARCHED_TEXT + " ILIKE ?";
      params.add("%" + JobSql.likeEscape(filter.text()) + "%");
    }
    params.add(filter.limit());
    String from = schema + "." + table;
    if (text != null && read == FinishedRead.PROBE) {
      return "(SELECT " + columns + " FROM (SELECT * FROM " + from + where(where)
          + " ORDER BY id DESC LIMIT " + FinishedRead.PROBE_ROWS + ") AS recent WHERE " + text
          + " ORDER BY id DESC LIMIT ?)";
    }
    if (text != null) {
      where.add(text);
    }
    if (read == FinishedRead.THROUGH_TEXT_INDEX) {
      // Without the fence (OFFSET 0) the planner walks the primary key newest first, expecting a
      // match soon, and a text that matches nothing (or only old jobs) reads the whole table.
      return "(SELECT " + columns + " FROM (SELECT * FROM " + from + where(where)
          + " OFFSET 0) AS matched ORDER BY id DESC LIMIT ?)";
    }
    return "(SELECT " + columns + " FROM " + from + where(where) + " ORDER BY id DESC LIMIT ?)";
  }

  private static String where(List<String> conditions) {
    return conditions.isEmpty() ? "" : " WHERE " + String.join(" AND ", conditions);
  }

  /**
   * Whether the trigram index over the searched text exists and can serve queries. It is the
   * operator's to create (docs/operations.md), so the answer is asked again at most every
   * {@link #TEXT_INDEX_RECHECK_NANOS}: an index created (or dropped) while the server runs is used (or no
   * longer relied on) without a restart. An index that some partition of the history has no part of yet,
   * or left invalid by a build that failed, does not count: the planner cannot use it, and the list's
   * read "through the index" would then read and sort every match instead of stopping at a page.
   */
  boolean trigramIndex(Connection c) throws SQLException {
    TextIndexLookup known = trigramIndex;
    long now = System.nanoTime();
    if (known == null || now - known.askedAtNanos() > TEXT_INDEX_RECHECK_NANOS) {
      try (PreparedStatement ps =
          StatementDeadline.apply(c.prepareStatement(AdminSql.TEXT_INDEX_USABLE))) {
        ps.setString(1, schema + ".finished_jobs_text_trgm_idx");
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          known = new TextIndexLookup(rs.getBoolean(1), now);
        }
      }
      trigramIndex = known;
    }
    return known.exists();
  }

  /** The last answer of {@link #trigramIndex} and when it was asked. */
  private record TextIndexLookup(boolean exists, long askedAtNanos) {}

  /** Counts per queue and state, every state present, by queue name. */
  public List<QueueCounts> countByQueue() throws SQLException {
    Map<String, EnumMap<JobState, Long>> counts = new TreeMap<>();
    Map<String, Long> scheduled = new HashMap<>();
    try (Connection c = dataSource.getConnection()) {
      inTransaction(c, () -> {
        for (HotCount hot : hotCounts(c)) {
          counts
              .computeIfAbsent(hot.queue(), q -> zeroCounts())
              .merge(hot.state(), hot.jobs(), Long::sum);
          scheduled.merge(hot.queue(), hot.scheduled(), Long::sum);
        }
        try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(finishedCounts));
            ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            counts
                .computeIfAbsent(rs.getString(1), q -> zeroCounts())
                .merge(JobState.parse(rs.getString(2)), rs.getLong(3), Long::sum);
          }
        }
      });
    }
    List<QueueCounts> result = new ArrayList<>();
    counts.forEach((queue, perState) -> result.add(
        new QueueCounts(queue, Map.copyOf(perState), scheduled.getOrDefault(queue, 0L))));
    return result;
  }

  /** One queue and state of {@link AdminSql#HOT_COUNTS}; {@code oldestDueMs} null when none is due. */
  private record HotCount(
      String queue, JobState state, long jobs, long scheduled, Long oldestDueMs) {}

  /**
   * Starts the caller's transaction as one read-only snapshot ({@link AdminSql#ONE_SNAPSHOT}) and reads
   * the hot table's counts ({@link AdminSql#HOT_COUNTS}, through its indexes when the jobs are few);
   * statements after it in the transaction are planned as usual.
   */
  private List<HotCount> hotCounts(Connection c) throws SQLException {
    try (java.sql.Statement s = c.createStatement()) {
      s.execute(AdminSql.ONE_SNAPSHOT + ";\n" + AdminSql.PAGES_PRICED_ALIKE);
    }
    List<HotCount> hot = new ArrayList<>();
    try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(hotCounts));
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        double oldest = rs.getDouble(5);
        hot.add(new HotCount(
            rs.getString(1),
            JobState.parse(rs.getString(2)),
            rs.getLong(3),
            rs.getLong(4),
            rs.wasNull() ? null : (long) oldest));
      }
    }
    try (java.sql.Statement s = c.createStatement()) {
      s.execute(AdminSql.PLANNED_AS_USUAL);
    }
    return hot;
  }

  /** Pauses or resumes a queue; a resumed queue's workers are woken in the same transaction. */
  public void setQueuePaused(String queue, boolean paused) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      inTransaction(c, () -> {
        try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(setQueuePaused))) {
          ps.setString(1, queue);
          ps.setBoolean(2, paused);
          ps.executeUpdate();
        }
        if (!paused) {
          try (PreparedStatement wake = StatementDeadline.apply(c.prepareStatement(notifyReady))) {
            wake.setString(1, queue);
            wake.execute();
          }
        }
      });
    }
  }

  /**
   * How recent a worker's heartbeat must be for {@link #queues()} to count it as live: the default
   * dead-worker threshold, from the settings catalogue ({@code worker_dead_after}).
   */
  public static final java.time.Duration LIVE_WORKER_WINDOW =
      io.pgjobs.config.PgJobsSettings.WORKER_DEAD_AFTER.defaultValue();

  /**
   * Every known queue with counts per state, oldest due job's age, paused flag and the jobs no live
   * worker can run (see {@link QueueInfo.Unrunnable}; live: heartbeat within {@link #LIVE_WORKER_WINDOW}),
   * by name.
   */
  public List<QueueInfo> queues() throws SQLException {
    return queues(LIVE_WORKER_WINDOW);
  }

  /** {@link #queues()}, a worker counting as live while its heartbeat is newer than {@code workerDeadAfter}. */
  public List<QueueInfo> queues(java.time.Duration workerDeadAfter) throws SQLException {
    Map<String, EnumMap<JobState, Long>> counts = new TreeMap<>();
    Map<String, Long> scheduled = new HashMap<>();
    Map<String, Long> oldestDueMs = new HashMap<>();
    Map<String, Boolean> paused = new HashMap<>();
    try (Connection c = dataSource.getConnection()) {
      inTransaction(c, () -> {
        for (HotCount hot : hotCounts(c)) {
          counts
              .computeIfAbsent(hot.queue(), q -> zeroCounts())
              .merge(hot.state(), hot.jobs(), Long::sum);
          scheduled.merge(hot.queue(), hot.scheduled(), Long::sum);
          if (hot.oldestDueMs() != null) {
            oldestDueMs.merge(hot.queue(), hot.oldestDueMs(), Math::max);
          }
        }
        try (PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(queueOverview));
            ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            String queue = rs.getString(1);
            EnumMap<JobState, Long> perState = counts.computeIfAbsent(queue, q -> zeroCounts());
            String state = rs.getString(2);
            if (state != null) {
              perState.merge(JobState.parse(state), rs.getLong(3), Long::sum);
            }
            if (rs.getBoolean(4)) {
              paused.put(queue, true);
            }
          }
        }
      });
    }
    Map<String, QueueInfo.Unrunnable> unrunnable = unrunnable(workerDeadAfter);
    java.util.Set<String> served = servedQueues(workerDeadAfter);
    List<QueueInfo> result = new ArrayList<>();
    counts.forEach((queue, perState) -> {
      boolean waiting =
          perState.getOrDefault(JobState.QUEUED, 0L) + perState.getOrDefault(JobState.RETRYING, 0L)
              > 0;
      result.add(new QueueInfo(
          queue,
          Map.copyOf(perState),
          scheduled.getOrDefault(queue, 0L),
          oldestDueMs.containsKey(queue)
              ? java.time.Duration.ofMillis(oldestDueMs.get(queue))
              : null,
          paused.getOrDefault(queue, false),
          unrunnable.getOrDefault(queue, QueueInfo.Unrunnable.NONE),
          waiting && !served.contains(queue)));
    });
    return result;
  }

  /** The queues some live worker serves ({@link AdminSql#SERVED_QUEUES}). */
  public java.util.Set<String> servedQueues(java.time.Duration workerDeadAfter)
      throws SQLException {
    java.util.Set<String> served = new java.util.HashSet<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(servedQueues))) {
      ps.setLong(1, workerDeadAfter.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          served.add(rs.getString(1));
        }
      }
    }
    return served;
  }

  /**
   * Per queue, the waiting jobs that need a capability no live worker serving the queue declares (live:
   * heartbeat newer than {@code workerDeadAfter}); queues without such jobs are absent.
   */
  public Map<String, QueueInfo.Unrunnable> unrunnable(java.time.Duration workerDeadAfter)
      throws SQLException {
    Map<String, Long> count = new LinkedHashMap<>();
    Map<String, List<String>> capabilities = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(unrunnable))) {
      ps.setLong(1, workerDeadAfter.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String queue = rs.getString(1);
          capabilities.computeIfAbsent(queue, q -> new ArrayList<>()).add(rs.getString(2));
          count.merge(queue, rs.getLong(3), Long::sum);
        }
      }
    }
    Map<String, QueueInfo.Unrunnable> result = new LinkedHashMap<>();
    count.forEach((queue, n) ->
        result.put(queue, new QueueInfo.Unrunnable(n, List.copyOf(capabilities.get(queue)))));
    return result;
  }

  /** Jobs finished per minute over the last {@code window}, by type, queue and final state. */
  public List<MinuteStats> statsPerMinute(java.time.Duration window) throws SQLException {
    List<MinuteStats> stats = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(statsPerMinute))) {
      ps.setLong(1, window.toMillis());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          stats.add(new MinuteStats(
              rs.getTimestamp(1).toInstant(),
              rs.getString(2),
              rs.getString(3),
              JobState.parse(rs.getString(4)),
              rs.getLong(5)));
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

  /**
   * Blocked jobs of graphs per queue ({@link AdminSql#BLOCKED_DEPTH}), from their partial index. One
   * statement in auto-commit.
   */
  public Map<String, Long> blockedDepth() throws SQLException {
    Map<String, Long> blocked = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(blockedDepth));
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        blocked.put(rs.getString(1), rs.getLong(2));
      }
    }
    return blocked;
  }

  /**
   * Due jobs per queue (queue depth), read from the ready indexes ({@link AdminSql#READY_DEPTH}): its cost
   * follows the jobs waiting, not the size the hot table once grew to. One statement in auto-commit.
   */
  public Map<String, Long> readyDepth() throws SQLException {
    Map<String, Long> depth = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = StatementDeadline.apply(c.prepareStatement(readyDepth));
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
      try (PreparedStatement ps =
          CustomPlan.apply(StatementDeadline.apply(connection.prepareStatement(cancel)))) {
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
    throw new PgJobsException(
        "job " + id + " kept changing state while being cancelled; try again");
  }

  /** Cancels every waiting or running job of the given types and queues (empty = any). */
  public CancelCounts cancelMatching(
      Connection connection, Set<String> types, Set<String> queues, Set<JobState> states)
      throws SQLException {
    List<Object> values = new ArrayList<>();
    String sql =
        cancelMatching.replace("{where}", matching(connection, types, queues, states, values));
    try (PreparedStatement ps = StatementDeadline.apply(connection.prepareStatement(sql))) {
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

  /** What {@link #cancelMatching} would do, changing nothing. */
  public CancelCounts countCancelMatching(
      Connection connection, Set<String> types, Set<String> queues, Set<JobState> states)
      throws SQLException {
    List<Object> values = new ArrayList<>();
    String sql =
        countCancelMatching.replace("{where}", matching(connection, types, queues, states, values));
    try (PreparedStatement ps = connection.prepareStatement(sql)) {
      for (int i = 0; i < values.size(); i++) {
        ps.setObject(i + 1, values.get(i));
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new CancelCounts(rs.getLong(1), rs.getLong(2));
      }
    }
  }

  /** How many jobs {@link #retryMatching} would queue again, changing nothing. */
  public long countRetryMatching(
      Connection connection, Set<String> types, Set<String> queues, Set<JobState> states)
      throws SQLException {
    List<Object> values = new ArrayList<>();
    String sql =
        countRetryMatching.replace("{where}", matching(connection, types, queues, states, values));
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

  /** Puts every failed or cancelled job of the given types, queues and states back in the queue. */
  public long retryMatching(
      Connection connection, Set<String> types, Set<String> queues, Set<JobState> states)
      throws SQLException {
    List<Object> values = new ArrayList<>();
    String sql =
        retryMatching.replace("{where}", matching(connection, types, queues, states, values));
    try (PreparedStatement ps = StatementDeadline.apply(connection.prepareStatement(sql))) {
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
      Connection connection,
      Set<String> types,
      Set<String> queues,
      Set<JobState> states,
      List<Object> values)
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
      values.add(
          connection.createArrayOf("text", states.stream().map(JobState::value).toArray()));
    }
    return where.isEmpty() ? "true" : String.join(" AND ", where);
  }

  /**
   * Puts a failed or cancelled job back in the queue, due when it was due (or now if that has passed),
   * or now if {@code now}.
   */
  public io.pgjobs.RetryResult retry(Connection connection, UUID id, boolean now)
      throws SQLException {
    try (PreparedStatement ps =
        StatementDeadline.apply(connection.prepareStatement(retryFinished))) {
      ps.setObject(1, id);
      ps.setBoolean(2, now);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          return io.pgjobs.RetryResult.RETRIED;
        }
      }
    }
    return get(connection, id).isPresent()
        ? io.pgjobs.RetryResult.NOT_RETRYABLE
        : io.pgjobs.RetryResult.NOT_FOUND;
  }
}
