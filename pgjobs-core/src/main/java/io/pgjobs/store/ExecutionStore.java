package io.pgjobs.store;

import io.pgjobs.JobState;
import io.pgjobs.json.PayloadCodec;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.IntFunction;
import javax.sql.DataSource;
import org.postgresql.util.PGobject;

/**
 * The statements of running jobs ({@link ExecutionSql}): the claim, and every write to a job its claim
 * holds, each fenced by the claim token and each telling what it wrote. Used by the worker runtime only.
 * Methods that take a {@link Connection} run in the caller's transaction; the others take a connection
 * from the data source in auto-commit mode.
 *
 * <p><b>The claim handle.</b> A write to one running job takes the {@link ClaimedJob} its claim returned:
 * the job's id and claim token (the fence) travel together, and only this class reads the token out of
 * it. The forms that take an id and a token are the same statements; the worker does not use them (they
 * are what tests use to write with a stale or forged token).
 */
public final class ExecutionStore {
  private final DataSource dataSource;
  private final PayloadCodec codec;

  private final ClaimTexts claim;
  private final ClaimTexts claimCapable;
  /** The worker's capabilities; empty: it claims only jobs that need none, with the unchanged claim. */
  private final String[] capabilities;

  private final ClaimTexts claimResume;
  private final ClaimTexts claimResumeOneLevel;
  private final String firstClaimable;
  private final String succeedBatch;
  private final String succeedBatchSkipLocked;
  private final String succeedBatchHandingOff;
  private final String claimStatus;
  private final String unclaimBatch;
  private final String unknownClaims;
  private final String succeedOne;
  private final String finishUnsuccessful;
  private final String retryLater;
  private final String snooze;
  private final String snoozeBlocked;
  private final String release;
  private final String progress;
  private final String heartbeat;
  private final String isRunning;
  private final String createdAgo;
  private final String clearPrefetched;
  private final String claimLimited;
  /** The types this worker runs, for the limited claim; null: every type. */
  private final String[] types;

  /** A store over {@code schema} (lowercase letters, digits, underscores) for a worker without capabilities. */
  public ExecutionStore(DataSource dataSource, String schema, PayloadCodec codec) {
    this(dataSource, schema, codec, List.of());
  }

  /**
   * A store over {@code schema} whose claims are those of a worker with {@code capabilities}: it claims the
   * jobs that need one of them first, then jobs that need none (see {@link #claim}). Names as
   * {@link io.pgjobs.JobType#requireCapability} allows.
   */
  public ExecutionStore(
      DataSource dataSource, String schema, PayloadCodec codec, Collection<String> capabilities) {
    this(dataSource, schema, codec, capabilities, null);
  }

  /**
   * A store over {@code schema} whose claims are those of a worker with {@code capabilities} that runs only
   * {@code types}: its claims step over jobs of any other type, leaving them to a worker that runs them
   * ({@link ExecutionSql#typeFilter}). Null {@code types}: every type.
   *
   * @throws IllegalArgumentException if {@code types} is empty
   */
  public ExecutionStore(
      DataSource dataSource,
      String schema,
      PayloadCodec codec,
      Collection<String> capabilities,
      Collection<String> types) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.codec = codec;
    JobSql.requireSchema(schema);
    this.capabilities = capabilities.stream()
        .map(name -> io.pgjobs.JobType.requireCapability("capabilities", name))
        .distinct()
        .toArray(String[]::new);
    String typeFilter = ExecutionSql.typeFilter(types);
    this.claim =
        new ClaimTexts(JobSql.forSchema(ExecutionSql.CLAIM, schema).replace("{types}", typeFilter));
    this.claimCapable = new ClaimTexts(JobSql.forSchema(ExecutionSql.CLAIM_CAPABLE, schema)
        .replace("{types}", typeFilter)
        .replace(
            "{capabilities}",
            capabilitiesInline()
                ? "ARRAY["
                    + String.join(
                        ", ", java.util.Collections.nCopies(this.capabilities.length, "?"))
                    + "]::text[]"
                : "?::text[]"));
    this.claimResume = new ClaimTexts(
        JobSql.forSchema(ExecutionSql.CLAIM_RESUME, schema).replace("{types}", typeFilter));
    this.claimResumeOneLevel =
        new ClaimTexts(JobSql.forSchema(ExecutionSql.CLAIM_RESUME_ONE_LEVEL, schema)
            .replace("{types}", typeFilter));
    this.firstClaimable = JobSql.forSchema(ExecutionSql.FIRST_CLAIMABLE, schema);
    this.succeedBatch = JobSql.forSchema(ExecutionSql.SUCCEED_BATCH, schema);
    this.succeedBatchSkipLocked = JobSql.forSchema(ExecutionSql.SUCCEED_BATCH_SKIP_LOCKED, schema);
    this.succeedBatchHandingOff = JobSql.forSchema(ExecutionSql.SUCCEED_BATCH_HANDING_OFF, schema)
        .replace("{types}", typeFilter);
    this.claimStatus = JobSql.forSchema(ExecutionSql.CLAIM_STATUS, schema);
    this.unclaimBatch = JobSql.forSchema(ExecutionSql.UNCLAIM_BATCH, schema);
    this.unknownClaims = JobSql.forSchema(ExecutionSql.UNKNOWN_CLAIMS, schema);
    this.succeedOne = JobSql.forSchema(ExecutionSql.SUCCEED_ONE, schema);
    this.finishUnsuccessful = JobSql.forSchema(ExecutionSql.FINISH_UNSUCCESSFUL, schema);
    this.retryLater = JobSql.forSchema(ExecutionSql.RETRY_LATER, schema);
    this.snooze = JobSql.forSchema(ExecutionSql.SNOOZE, schema);
    this.snoozeBlocked = JobSql.forSchema(ExecutionSql.SNOOZE_BLOCKED, schema);
    this.release = JobSql.forSchema(ExecutionSql.RELEASE, schema);
    this.progress = JobSql.forSchema(ExecutionSql.PROGRESS, schema);
    this.heartbeat = JobSql.forSchema(ExecutionSql.HEARTBEAT, schema);
    this.isRunning = JobSql.forSchema(ExecutionSql.IS_RUNNING, schema);
    this.createdAgo = JobSql.forSchema(ExecutionSql.CREATED_AGO, schema);
    this.clearPrefetched = JobSql.forSchema(ExecutionSql.CLEAR_PREFETCHED, schema);
    this.claimLimited = JobSql.forSchema(LimitsSql.CLAIM_LIMITED, schema);
    this.types = types == null ? null : types.stream().distinct().sorted().toArray(String[]::new);
  }

  /** The JSON codec. */
  public PayloadCodec codec() {
    return codec;
  }

  /** The application's data source (as given, not as pgjobs borrows from it: see {@link AutoCommitDataSource}). */
  public DataSource dataSource() {
    return AutoCommitDataSource.unwrapped(dataSource);
  }

  /**
   * {@code EXPLAIN (ANALYZE, BUFFERS)} of the full-pass claim of up to {@code limit} jobs of {@code queue},
   * as {@link #claim} runs it (worker id {@code explain}), once as a custom plan (what the first executions
   * on a connection get) and once as a generic plan (what a prepared statement may switch to after five),
   * in one transaction that is rolled back, so nothing stays claimed. Returns both plans as text, each
   * after a line {@code -- plan_cache_mode = …}.
   */
  public String explainClaim(String queue, int limit) throws SQLException {
    String text = claim.withLimit(limit);
    StringBuilder numbered = new StringBuilder();
    int param = 0;
    for (char ch : text.toCharArray()) {
      if (ch == '?') {
        numbered.append('$').append(++param);
      } else {
        numbered.append(ch);
      }
    }
    if (param != 5) {
      throw new IllegalStateException(
          "the claim has " + param + " parameters, expected 5:\n" + text);
    }
    StringBuilder out = new StringBuilder();
    try (Connection c = AutoCommitDataSource.unwrapped(dataSource).getConnection();
        Statement st = c.createStatement()) {
      st.execute(ExecutionSql.PREPARE_EXPLAINED_CLAIM.replace("{claim}", numbered));
      try {
        c.setAutoCommit(false);
        try {
          for (String mode : new String[] {"force_custom_plan", "force_generic_plan"}) {
            st.execute("SAVEPOINT before_claim");
            st.execute("SET LOCAL plan_cache_mode = " + mode);
            out.append("-- plan_cache_mode = ").append(mode).append('\n');
            String literal = "'" + queue.replace("'", "''") + "'";
            try (ResultSet rs =
                st.executeQuery(ExecutionSql.EXPLAIN_CLAIM.replace("{queue}", literal))) {
              while (rs.next()) {
                out.append(rs.getString(1)).append('\n');
              }
            }
            st.execute("ROLLBACK TO SAVEPOINT before_claim");
          }
        } finally {
          c.rollback();
          c.setAutoCommit(true);
        }
      } finally {
        st.execute(ExecutionSql.DEALLOCATE_EXPLAINED_CLAIM);
      }
    }
    return out.toString();
  }

  /**
   * Claims up to {@code limit} due jobs of {@code queue} for {@code workerId}, in claim order, from the
   * low end of every level (no cursor: a full pass).
   */
  public List<ClaimedJob> claim(String queue, int limit, String workerId) throws SQLException {
    return claim(queue, limit, workerId, null);
  }

  /**
   * Claims up to {@code limit} due jobs of {@code queue} for {@code workerId}, in claim order, resuming
   * where {@code cursor} says or from the low end of every level, as {@link ClaimCursor} decides, and moves
   * the cursor. The cursor's probe for jobs behind it is the caller's ({@link #firstClaimable}).
   */
  public List<ClaimedJob> claim(String queue, int limit, String workerId, ClaimCursor cursor)
      throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      return claim(c, queue, limit, workerId, cursor);
    }
  }

  /** {@link #claim(String, int, String, ClaimCursor)} on {@code connection}, in auto-commit mode. */
  public List<ClaimedJob> claim(
      Connection c, String queue, int limit, String workerId, ClaimCursor cursor)
      throws SQLException {
    if (capabilities.length == 0) {
      return claimWithoutCapability(c, queue, limit, workerId, cursor);
    }
    // A worker with capabilities serves the jobs only workers like it can run first (by priority
    // among them), then fills what is left of the batch with jobs any worker can run. Two
    // statements, each a complete claim of its own; the cursor follows the second only (its index
    // holds only those jobs).
    List<ClaimedJob> claimed = claimCapable(c, queue, limit, workerId);
    if (claimed.size() < limit) {
      claimed.addAll(claimWithoutCapability(c, queue, limit - claimed.size(), workerId, cursor));
    }
    return claimed;
  }

  /**
   * The jobs of a limited claim, in the order it took them, the partition it ended at, and whether they
   * are the first due jobs past the claim cursor (the fast path's alone: the cursor may move past them).
   */
  public record LimitedClaim(List<ClaimedJob> jobs, String lastPartition, boolean resumable) {}

  /**
   * Claims up to {@code limit} due jobs of limited queue {@code queue} for {@code workerId} within its
   * limits ({@code claim_limited}, V2__flow_control.sql): one statement, in auto-commit mode, on
   * {@code connection} or one from the pool if null. {@code after} is the partition the worker's last
   * claim of the queue ended at (null: none), where the round-robin goes on.
   *
   * <p>{@code cursor} (null: none; pass none for a queue whose claim cannot resume, see below) is where the
   * worker's claims of the queue got to, as for the unlimited claim ({@link ClaimCursor}): the claim reads the head of the queue just past it,
   * so that its cost does not grow with the dead entries a long transaction elsewhere keeps. A full pass is
   * made when the cursor says one is due (and, while the low ends are cheap to read, after a resumed claim
   * that found nothing). The cursor moves past the jobs only when the claim took them all from that head
   * (the function says so): jobs the round-robin took elsewhere, or a head it left partly behind (a
   * partition at its limit), leave it where it was. A row another transaction holds is skipped as the
   * unlimited claim skips it (the head is read and locked at once): the cursor may pass it, and the
   * cursor's probe finds it. A queue without partitions resumes as the unlimited claim does (it takes the
   * first jobs past the cursor, within its limits), and so does a partitioned queue whose partitions may
   * run more than one job at a time; only for a worker without capabilities. For the others (strict
   * order per partition, capabilities) a cursor would only repeat a claim that found nothing.
   */
  public LimitedClaim claimLimited(
      Connection connection,
      String queue,
      int limit,
      String workerId,
      String after,
      ClaimCursor cursor)
      throws SQLException {
    if (connection == null) {
      try (Connection c = dataSource.getConnection()) {
        return claimLimited(c, queue, limit, workerId, after, cursor);
      }
    }
    // claim_limited goes by rounds for a worker with capabilities: it never resumes.
    if (cursor == null || capabilities.length > 0) {
      return claimLimitedOnce(connection, queue, limit, workerId, after, null);
    }
    LimitedClaim claim = pass(
        cursor,
        from -> claimLimitedOnce(connection, queue, limit, workerId, after, from),
        c -> c.jobs().isEmpty());
    if (claim.resumable()) {
      cursor.advance(claim.jobs());
    }
    return claim;
  }

  /** A row of claim_limited: the job, and the partition it was claimed under (null: none). */
  private record ClaimedRow(ClaimedJob job, String partition) {}

  private LimitedClaim claimLimitedOnce(
      Connection connection,
      String queue,
      int limit,
      String workerId,
      String after,
      ClaimCursor resumeFrom)
      throws SQLException {
    List<ClaimedRow> rows = new ArrayList<>();
    boolean resumable = true;
    try (PreparedStatement ps = connection.prepareStatement(claimLimited)) {
      ps.setString(1, workerId);
      ps.setString(2, queue);
      ps.setInt(3, limit);
      ps.setArray(4, types == null ? null : connection.createArrayOf("text", types));
      ps.setArray(5, connection.createArrayOf("text", capabilities));
      ps.setString(6, after);
      if (resumeFrom == null || resumeFrom.positions().isEmpty()) {
        ps.setString(7, null);
        ps.setString(8, null);
        ps.setString(9, null);
      } else {
        ClaimCursor.ResumeParameters at = resumeFrom.resumeParameters();
        ps.setString(7, at.levels());
        ps.setString(8, at.runAts());
        ps.setString(9, at.ids());
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows.add(new ClaimedRow(readClaimedRow(rs, false), rs.getString(16)));
          resumable &= rs.getBoolean(17);
        }
      }
    }
    if (resumable) {
      // A claim of the head alone comes back unordered (claim_limited leaves the sort to its
      // caller, as the unlimited claim does): into claim order, each job with its partition.
      rows.sort(java.util.Comparator.comparing(ClaimedRow::job, CLAIM_ORDER));
    }
    List<ClaimedJob> claimed = new ArrayList<>(rows.size());
    String last = after;
    for (ClaimedRow row : rows) {
      claimed.add(row.job());
      if (row.partition() != null) {
        last = row.partition(); // the round-robin goes on after the last partition taken from
      }
    }
    return new LimitedClaim(claimed, last, resumable);
  }

  /**
   * How many executions of a server-prepared statement PostgreSQL plans for their values before it
   * weighs its generic plan (plancache.c: five custom plans), plus the one that then chooses.
   */
  private static final int CUSTOM_PLANS_BEFORE_GENERIC = 6;

  /**
   * The queue {@link #prepareClaims} claims from: no job can be in it (the queue's domain type,
   * {@code job_queue_name}, requires 1 to 255 characters), so those claims find, lock and change nothing.
   */
  static final String NO_QUEUE = "";

  /**
   * Readies the claim statements on {@code c}, a connection that will claim on notifications (the
   * worker's LISTEN connection), so that the first jobs after a worker starts or reconnects are not
   * claimed slowly: runs each claim statement of {@code limit} jobs this worker uses (the full pass, the
   * resumed claim of one level, and the capable claim if it has capabilities) as often as it takes pgJDBC
   * to server-prepare it (its {@code prepareThreshold}) and PostgreSQL to weigh its generic plan. The
   * claims are made from {@link #NO_QUEUE}, inside a transaction that is rolled back: nothing is claimed,
   * locked or announced, so no other claim has to skip a job meanwhile (a warm-up that locked real jobs
   * made this worker's first claims, and other workers' claims, skip the most urgent ones and run jobs out
   * of priority order). The statements do not name the queue (a parameter): they are then ready for every
   * queue. {@code c} is left in the auto-commit mode it was in.
   *
   * <p>Why: a new connection parses and plans the claim afresh at each of its first executions (pgJDBC
   * sends it unnamed until its fifth, then PostgreSQL plans the prepared statement for its values five
   * more times): on this project's machine 2–5 ms for the first and about 1 ms for each of the next
   * ten, against 0.4 ms once settled — the first eleven jobs an idle worker picks up paid it
   * (docs/bench-journal/issue-15-part-3.md, "Claims planned once per connection").
   *
   * @throws SQLException if a statement fails; the transaction is rolled back
   */
  public void prepareClaims(Connection c, int limit, String workerId) throws SQLException {
    String queue = NO_QUEUE;
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(false);
    try {
      prepare(c, claim.withLimit(limit), ps -> bindClaim(ps, queue, workerId, null));
      prepare(
          c,
          claimResumeOneLevel.withLimit(limit),
          ps -> bindResume(ps, queue, workerId, LEVEL_ZERO_FROM_START));
      if (capabilities.length > 0) {
        prepare(c, claimCapable.withLimit(limit), ps -> bindCapable(ps, queue, workerId));
      }
    } finally {
      try {
        c.rollback();
      } finally {
        c.setAutoCommit(autoCommit);
      }
    }
  }

  /**
   * A claim statement's text for each limit, written once ({@link ExecutionSql#withLimit}): a worker claims
   * in a few sizes only (QueuePoller.claimSize), and each claim would otherwise copy the whole statement
   * (several kilobytes) and hash the copy in pgJDBC's statement cache; the same string each time is hashed
   * once.
   */
  static final class ClaimTexts {
    private final String sql;
    private final java.util.concurrent.ConcurrentHashMap<Integer, String> byLimit =
        new java.util.concurrent.ConcurrentHashMap<>();

    ClaimTexts(String sql) {
      this.sql = sql;
    }

    /** @throws IllegalArgumentException if {@code limit} is not positive */
    String withLimit(int limit) {
      String text = byLimit.get(limit);
      return text != null
          ? text
          : byLimit.computeIfAbsent(limit, l -> ExecutionSql.withLimit(sql, l));
    }
  }

  /** Binds a statement's parameters. */
  @FunctionalInterface
  private interface Binder {
    void bind(PreparedStatement ps) throws SQLException;
  }

  private static void prepare(Connection c, String sql, Binder binder) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int threshold = ps.isWrapperFor(org.postgresql.PGStatement.class)
          ? ps.unwrap(org.postgresql.PGStatement.class).getPrepareThreshold()
          : 0;
      // A threshold of 0 or less: never server-prepared, planned at each execution; one execution
      // still loads the catalog entries the statement reads (most of the first execution's cost).
      int executions = threshold > 0 ? threshold - 1 + CUSTOM_PLANS_BEFORE_GENERIC : 1;
      for (int i = 0; i < executions; i++) {
        binder.bind(ps);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            // none: no job is in NO_QUEUE
          }
        }
      }
    }
  }

  /** The worker's capabilities (empty: none). */
  public List<String> capabilities() {
    return List.of(capabilities);
  }

  private List<ClaimedJob> claimCapable(Connection c, String queue, int limit, String workerId)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(claimCapable.withLimit(limit))) {
      bindCapable(ps, queue, workerId);
      List<ClaimedJob> claimed = readClaimed(ps, limit);
      claimed.sort(CLAIM_ORDER);
      return claimed;
    }
  }

  /** True if the capable claim binds each capability on its own ({@link ExecutionSql#CAPABILITIES_INLINE}). */
  private boolean capabilitiesInline() {
    return capabilities.length <= ExecutionSql.CAPABILITIES_INLINE;
  }

  private void bindCapable(PreparedStatement ps, String queue, String workerId)
      throws SQLException {
    int i = 1;
    ps.setString(i++, workerId);
    ps.setString(i++, queue);
    if (capabilitiesInline()) {
      for (String capability : capabilities) {
        ps.setString(i++, capability);
      }
    } else {
      ps.setArray(i++, ps.getConnection().createArrayOf("text", capabilities));
    }
    ps.setString(i++, queue);
    ps.setString(i++, queue);
    ps.setString(i, queue);
  }

  /** Claim order: priority desc, run_at, id. */
  private static final java.util.Comparator<ClaimedJob> CLAIM_ORDER =
      (a, b) -> a.priority() != b.priority()
          ? Integer.compare(b.priority(), a.priority())
          : a.runAt().equals(b.runAt())
              ? ClaimCursor.compareUuids(a.id(), b.id())
              : a.runAt().compareTo(b.runAt());

  private static List<ClaimedJob> readClaimed(PreparedStatement ps, int limit) throws SQLException {
    List<ClaimedJob> claimed = new ArrayList<>(Math.min(limit, 1_024));
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        claimed.add(readClaimedRow(rs, true));
      }
    }
    return claimed;
  }

  /**
   * One claimed row, in the column order of every claim statement (ExecutionSql.CLAIM_TAIL);
   * {@code withDependents}: column 16 says whether the job has dependents (not in the limited claim's
   * rows, whose column 16 is the partition).
   */
  private static ClaimedJob readClaimedRow(ResultSet rs, boolean withDependents)
      throws SQLException {
    long timeoutMs = rs.getLong(11);
    Long timeout = rs.wasNull() ? null : timeoutMs; // wasNull() speaks of the last column read
    return new ClaimedJob(
        rs.getObject(1, UUID.class),
        rs.getString(2),
        rs.getString(3),
        rs.getString(4),
        rs.getInt(5),
        rs.getInt(6),
        rs.getInt(7),
        JobRowMapper.instant(rs, 8),
        JobRowMapper.instant(rs, 9),
        rs.getString(10),
        timeout,
        rs.getLong(12),
        rs.getString(13),
        rs.getInt(15),
        withDependents && rs.getBoolean(16));
  }

  private List<ClaimedJob> claimWithoutCapability(
      Connection c, String queue, int limit, String workerId, ClaimCursor cursor)
      throws SQLException {
    if (cursor == null) {
      return claimOnce(c, queue, limit, workerId, null);
    }
    List<ClaimedJob> claimed =
        pass(cursor, from -> claimOnce(c, queue, limit, workerId, from), List::isEmpty);
    cursor.advance(claimed);
    return claimed;
  }

  /** One claim statement: resumed from the cursor given, or a full pass if null. */
  @FunctionalInterface
  private interface ClaimPass<R> {
    R claim(ClaimCursor resumeFrom) throws SQLException;
  }

  /**
   * Claims by {@code cursor}'s rule, for the unlimited and the limited claim alike: a full pass when the
   * cursor says one is due, else resumed from it; and a resumed claim that found nothing ({@code empty})
   * is followed at once by a full pass while the low ends are cheap to read — a notification or a poll
   * said jobs may wait, and one may have committed behind the cursor: look there now rather than at the
   * next probe. Moving the cursor past what was claimed is the caller's.
   */
  private static <R> R pass(
      ClaimCursor cursor, ClaimPass<R> claim, java.util.function.Predicate<R> empty)
      throws SQLException {
    long now = System.nanoTime();
    boolean full = cursor.fullPassDue(now);
    R claimed = claim.claim(full ? null : cursor);
    if (full) {
      cursor.fullPassMade(now);
    } else if (empty.test(claimed) && cursor.fullPassCheap()) {
      claimed = claim.claim(null);
      cursor.fullPassMade(now);
    }
    return claimed;
  }

  /** The claim statement for {@code cursor}: the full pass if null, else the resumed claim for its levels. */
  ClaimTexts claimSql(ClaimCursor cursor) {
    return cursor == null
        ? claim
        : cursor.positions().size() == 1 ? claimResumeOneLevel : claimResume;
  }

  /** One claim statement: resumed from {@code cursor}'s positions, or a full pass if null. */
  private List<ClaimedJob> claimOnce(
      Connection c, String queue, int limit, String workerId, ClaimCursor cursor)
      throws SQLException {
    String sql = claimSql(cursor).withLimit(limit);
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      bindClaim(ps, queue, workerId, cursor);
      List<ClaimedJob> claimed = readClaimed(ps, limit);
      // RETURNING has no order: put the batch back in claim order (priority desc, run_at, id).
      claimed.sort(CLAIM_ORDER);
      return claimed;
    }
  }

  /**
   * The first claimable job of every priority level of {@code queue} (jobs that need no capability), for
   * {@link ClaimCursor#probed}: read-only, no row locks, so it may run while claims go on. Highest level
   * first.
   */
  public List<ClaimCursor.LevelStart> firstClaimable(String queue) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(firstClaimable)) {
      ps.setString(1, queue);
      ps.setString(2, queue);
      List<ClaimCursor.LevelStart> firsts = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          firsts.add(new ClaimCursor.LevelStart(
              rs.getInt(1), JobRowMapper.instant(rs, 2), rs.getObject(3, UUID.class)));
        }
      }
      return firsts;
    }
  }

  private static void bindClaim(
      PreparedStatement ps, String queue, String workerId, ClaimCursor resumeFrom)
      throws SQLException {
    if (resumeFrom != null) {
      bindResume(ps, queue, workerId, resumeFrom.resumeParameters());
      return;
    }
    ps.setString(1, workerId);
    for (int i = 2; i <= 5; i++) {
      ps.setString(i, queue);
    }
  }

  /**
   * Resume parameters for {@link #prepareClaims}: level 0 from its start (the smallest run_at and id), as
   * a cursor that knows one level reads it.
   */
  private static final ClaimCursor.ResumeParameters LEVEL_ZERO_FROM_START =
      new ClaimCursor.ResumeParameters(
          0, "{0}", "{-infinity}", "{00000000-0000-0000-0000-000000000000}");

  private static void bindResume(
      PreparedStatement ps, String queue, String workerId, ClaimCursor.ResumeParameters resume)
      throws SQLException {
    ps.setString(1, workerId);
    ps.setString(2, queue);
    ps.setInt(3, resume.highestLevel());
    ps.setString(4, resume.levels());
    ps.setString(5, resume.runAts());
    ps.setString(6, resume.ids());
    ps.setString(7, queue);
    ps.setString(8, queue);
  }

  /**
   * Writes many successes of worker {@code workerId} in one statement.
   *
   * @param lockWait how long the statement may wait for a row another transaction holds, or null to skip
   *     such rows instead (see {@link ExecutionSql#SUCCEED_BATCH}); past it the wait ends in an error
   *     (SQLState 55P03) and nothing is written. It bounds lock waits only, not the statement's own work
   * @return how many were written; if fewer than given, some were skipped (their row is locked by another
   *     transaction) or are no longer their claim's: ask {@link #claimStatus} which
   */
  public int succeed(String workerId, List<Completion> completions, Duration lockWait)
      throws SQLException {
    if (completions.isEmpty()) {
      return 0;
    }
    UUID[] ids = completions.stream().map(Completion::id).toArray(UUID[]::new);
    String tokens = jsonObject(ids, i -> Long.toString(completions.get(i).claimToken()));
    String outputs = jsonObject(ids, i -> completions.get(i).outputJson());
    try (Connection c = StatementTimeoutLift.connection(dataSource);
        PreparedStatement ps =
            c.prepareStatement(lockWait == null ? succeedBatchSkipLocked : succeedBatch)) {
      int p = 1;
      ps.setArray(p++, c.createArrayOf("uuid", ids));
      ps.setString(p++, workerId);
      ps.setObject(p++, jsonb(tokens));
      if (lockWait != null) {
        ps.setString(p++, Math.max(1, lockWait.toMillis()) + "ms");
      }
      ps.setObject(p, jsonb(outputs));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  /**
   * What {@link #succeedHandingOff} did: how many successes it wrote, and the children it handed to the
   * worker, each now running under a claim of its own.
   */
  public record SuccessBatch(int written, List<ClaimedJob> handed) {}

  /**
   * {@link #succeed(String, List, Duration)} that also hands worker {@code workerId} up to {@code limit}
   * of the children these successes unblock, of the queues {@code queues} (see
   * {@link ExecutionSql#SUCCEED_BATCH_HANDING_OFF}). The children handed over are running under this
   * worker once the statement returns: the caller runs them or gives them back.
   */
  public SuccessBatch succeedHandingOff(
      String workerId, List<Completion> completions, Duration lockWait, String[] queues, int limit)
      throws SQLException {
    if (completions.isEmpty()) {
      return new SuccessBatch(0, List.of());
    }
    UUID[] ids = completions.stream().map(Completion::id).toArray(UUID[]::new);
    String tokens = jsonObject(ids, i -> Long.toString(completions.get(i).claimToken()));
    String outputs = jsonObject(ids, i -> completions.get(i).outputJson());
    try (Connection c = StatementTimeoutLift.connection(dataSource);
        PreparedStatement ps = c.prepareStatement(succeedBatchHandingOff)) {
      int p = 1;
      ps.setArray(p++, c.createArrayOf("uuid", ids));
      ps.setString(p++, workerId);
      ps.setObject(p++, jsonb(tokens));
      ps.setString(p++, Math.max(1, lockWait.toMillis()) + "ms");
      ps.setObject(p++, jsonb(outputs));
      ps.setString(p++, workerId);
      ps.setArray(p++, c.createArrayOf("text", queues));
      ps.setInt(p, Math.max(0, limit));
      int written = 0;
      List<ClaimedJob> handed = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          written = rs.getInt(17);
          if (rs.getObject(1) != null) {
            handed.add(readClaimedRow(rs, true));
          }
        }
      }
      return new SuccessBatch(written, handed);
    }
  }

  /**
   * Where each claim stands now (see {@link ExecutionSql#CLAIM_STATUS}): the job's state as left by
   * this claim ({@code running} if nothing was written yet), or absent from the map if the job is no
   * longer this claim's.
   */
  public Map<UUID, JobState> claimStatus(Map<UUID, Long> claims) throws SQLException {
    if (claims.isEmpty()) {
      return Map.of();
    }
    UUID[] ids = claims.keySet().toArray(UUID[]::new);
    Long[] tokens = new Long[ids.length];
    for (int i = 0; i < ids.length; i++) {
      tokens[i] = claims.get(ids[i]);
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = CustomPlan.apply(c.prepareStatement(claimStatus))) {
      ps.setArray(1, c.createArrayOf("uuid", ids));
      ps.setArray(2, c.createArrayOf("bigint", tokens));
      Map<UUID, JobState> status = new LinkedHashMap<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String state = rs.getString(2);
          if (state != null) {
            status.put(rs.getObject(1, UUID.class), JobState.parse(state));
          }
        }
      }
      return status;
    }
  }
  /** {@link #claimStatus(Map)} of the claims {@code jobs}. */
  public Map<UUID, JobState> claimStatus(Collection<ClaimedJob> jobs) throws SQLException {
    Map<UUID, Long> claims = new HashMap<>(jobs.size() * 2);
    for (ClaimedJob job : jobs) {
      claims.put(job.id(), job.claimToken());
    }
    return claimStatus(claims);
  }

  /**
   * Gives claimed jobs that never started back to their queue (see {@link ExecutionSql#UNCLAIM_BATCH}).
   *
   * @return each job written and the state it is in now ({@code queued}/{@code retrying}, or
   *     {@code cancelled} if its cancellation had been asked); a job missing from it was not written:
   *     its row was locked by another transaction (still this claim's: try again), or it is no longer
   *     this claim's ({@link #claimStatus} tells which)
   */
  public Map<UUID, JobState> unclaim(String workerId, Collection<ClaimedJob> jobs)
      throws SQLException {
    if (jobs.isEmpty()) {
      return Map.of();
    }
    List<ClaimedJob> list = List.copyOf(jobs);
    UUID[] ids = list.stream().map(ClaimedJob::id).toArray(UUID[]::new);
    PGobject tokens = jsonb(jsonObject(ids, i -> Long.toString(list.get(i).claimToken())));
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = CustomPlan.apply(c.prepareStatement(unclaimBatch))) {
      Array idArray = c.createArrayOf("uuid", ids);
      ps.setArray(1, idArray);
      ps.setString(2, workerId);
      ps.setObject(3, tokens);
      Map<UUID, JobState> written = new LinkedHashMap<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          written.put(rs.getObject(1, UUID.class), JobState.parse(rs.getString(2)));
        }
      }
      return written;
    }
  }

  /**
   * Running jobs of {@code queue} that the database says {@code workerId} holds but that are not among
   * {@code known}: claims whose reply never arrived. Call it only while no claim of that queue is in
   * flight. Each is returned as a {@link ClaimedJob} carrying only its id, queue and claim token, enough
   * for {@link #unclaim}.
   */
  public List<ClaimedJob> unknownClaims(String workerId, String queue, Collection<UUID> known)
      throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = CustomPlan.apply(c.prepareStatement(unknownClaims))) {
      ps.setString(1, workerId);
      ps.setString(2, queue);
      ps.setArray(3, c.createArrayOf("uuid", known.toArray()));
      List<ClaimedJob> unknown = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          unknown.add(new ClaimedJob(
              rs.getObject(1, UUID.class),
              null,
              queue,
              null,
              0,
              0,
              0,
              null,
              null,
              null,
              null,
              rs.getLong(2)));
        }
      }
      return unknown;
    }
  }

  /** Success of one claim in the caller's transaction; false if the job no longer runs that claim. */
  public boolean succeed(Connection connection, UUID id, long claimToken, String outputJson)
      throws SQLException {
    try (PreparedStatement ps = CustomPlan.apply(connection.prepareStatement(succeedOne))) {
      ps.setObject(1, id);
      ps.setLong(2, claimToken);
      ps.setString(3, outputJson);
      return ps.executeUpdate() == 1;
    }
  }
  /** {@link #succeed(Connection, UUID, long, String)} of the claim {@code job}. */
  public boolean succeed(Connection connection, ClaimedJob job, String outputJson)
      throws SQLException {
    return succeed(connection, job.id(), job.claimToken(), outputJson);
  }

  /**
   * Ends a running claim for good as {@code failed} or {@code cancelled}, appending {@code errorJson}
   * (a JSON array of error objects, possibly empty).
   *
   * @return the state written, or null if the job no longer runs that claim
   */
  public JobState finish(UUID id, long claimToken, JobState terminal, String errorJson)
      throws SQLException {
    if (terminal != JobState.FAILED && terminal != JobState.CANCELLED) {
      throw new IllegalArgumentException("finish() ends jobs failed or cancelled, not " + terminal);
    }
    return writeState(finishUnsuccessful, id, claimToken, terminal.value(), errorJson);
  }
  /** {@link #finish(UUID, long, JobState, String)} of the claim {@code job}. */
  public JobState finish(ClaimedJob job, JobState terminal, String errorJson) throws SQLException {
    return finish(job.id(), job.claimToken(), terminal, errorJson);
  }

  /**
   * Schedules the next attempt after a failure, appending {@code errorJson}; a job whose cancellation was
   * asked ends cancelled instead.
   *
   * @return the state written ({@code retrying} or {@code cancelled}), or null if the job no longer runs
   *     that claim
   */
  public JobState retryLater(UUID id, long claimToken, long delayMs, String errorJson)
      throws SQLException {
    return writeState(retryLater, id, claimToken, errorJson, delayMs, errorJson);
  }
  /** {@link #retryLater(UUID, long, long, String)} of the claim {@code job}. */
  public JobState retryLater(ClaimedJob job, long delayMs, String errorJson) throws SQLException {
    return retryLater(job.id(), job.claimToken(), delayMs, errorJson);
  }

  /**
   * Puts a running job back in the queue for {@code delayMs} without spending the attempt.
   *
   * @return the state written ({@code queued} or {@code cancelled}), or null if the job no longer runs
   *     that claim
   */
  public JobState snooze(UUID id, long claimToken, long delayMs) throws SQLException {
    if (delayMs < 0) {
      return writeState(snoozeBlocked, id, claimToken);
    }
    return writeState(snooze, id, claimToken, delayMs);
  }
  /** {@link #snooze(UUID, long, long)} of the claim {@code job}. */
  public JobState snooze(ClaimedJob job, long delayMs) throws SQLException {
    return snooze(job.id(), job.claimToken(), delayMs);
  }

  /**
   * Gives a running job back to the queue, due now, recording {@code errorJson} (see
   * {@link ExecutionSql#RELEASE}).
   *
   * @return the state written ({@code retrying} or {@code cancelled}), or null if the job no longer runs
   *     that claim
   */
  public JobState release(UUID id, long claimToken, String errorJson) throws SQLException {
    return writeState(release, id, claimToken, errorJson, errorJson);
  }
  /** {@link #release(UUID, long, String)} of the claim {@code job}. */
  public JobState release(ClaimedJob job, String errorJson) throws SQLException {
    return release(job.id(), job.claimToken(), errorJson);
  }

  /** Records progress of a running claim (and counts as a heartbeat); false if it no longer runs. */
  public boolean progress(UUID id, long claimToken, int percent, String message)
      throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = CustomPlan.apply(c.prepareStatement(progress))) {
      ps.setInt(1, percent);
      ps.setString(2, message);
      ps.setObject(3, id);
      ps.setLong(4, claimToken);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }
  /** {@link #progress(UUID, long, int, String)} of the claim {@code job}. */
  public boolean progress(ClaimedJob job, int percent, String message) throws SQLException {
    return progress(job.id(), job.claimToken(), percent, message);
  }

  /** Records a heartbeat of a running claim; false if it no longer runs. */
  public boolean heartbeat(UUID id, long claimToken) throws SQLException {
    return updatesOne(heartbeat, id, claimToken);
  }
  /** {@link #heartbeat(UUID, long)} of the claim {@code job}. */
  public boolean heartbeat(ClaimedJob job) throws SQLException {
    return heartbeat(job.id(), job.claimToken());
  }

  /**
   * Clears the {@code prefetched} mark of claims that start now, in one statement; returns the ids of
   * those still running under that claim (a job missing from it is no longer the worker's: not run).
   */
  public Set<UUID> clearPrefetched(Collection<ClaimedJob> jobs) throws SQLException {
    if (jobs.isEmpty()) {
      return Set.of();
    }
    List<ClaimedJob> list = List.copyOf(jobs);
    UUID[] ids = list.stream().map(ClaimedJob::id).toArray(UUID[]::new);
    PGobject tokens = jsonb(jsonObject(ids, i -> Long.toString(list.get(i).claimToken())));
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = CustomPlan.apply(c.prepareStatement(clearPrefetched))) {
      ps.setArray(1, c.createArrayOf("uuid", ids));
      ps.setObject(2, tokens);
      Set<UUID> cleared = new HashSet<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          cleared.add(rs.getObject(1, UUID.class));
        }
      }
      return cleared;
    }
  }

  /** Runs an UPDATE of one running claim, {@code (id, claim_token)}; true if it matched. */
  private boolean updatesOne(String sql, UUID id, long claimToken) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = CustomPlan.apply(c.prepareStatement(sql))) {
      ps.setObject(1, id);
      ps.setLong(2, claimToken);
      return ps.executeUpdate() == 1;
    }
  }

  /** True if the job is still running that claim. */
  public boolean isRunning(UUID id, long claimToken) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = CustomPlan.apply(c.prepareStatement(isRunning))) {
      ps.setObject(1, id);
      ps.setLong(2, claimToken);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }
  /** {@link #isRunning(UUID, long)} of the claim {@code job}. */
  public boolean isRunning(ClaimedJob job) throws SQLException {
    return isRunning(job.id(), job.claimToken());
  }

  /**
   * How long ago a running claim's job was created, by the database's clock (see
   * {@link ExecutionSql#CREATED_AGO}), or null if the job no longer runs that claim.
   */
  public Duration createdAgo(UUID id, long claimToken) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = CustomPlan.apply(c.prepareStatement(createdAgo))) {
      ps.setObject(1, id);
      ps.setLong(2, claimToken);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Duration.ofMillis(rs.getLong(1)) : null;
      }
    }
  }
  /** {@link #createdAgo(UUID, long)} of the claim {@code job}. */
  public Duration createdAgo(ClaimedJob job) throws SQLException {
    return createdAgo(job.id(), job.claimToken());
  }

  /**
   * Runs a single-job write whose statement returns the state it wrote (no row: it matched nothing).
   * Parameters are bound in order (uuid, bigint and text, as their Java types say).
   */
  private JobState writeState(String sql, Object... params) throws SQLException {
    try (Connection c = StatementTimeoutLift.connection(dataSource);
        PreparedStatement ps = CustomPlan.apply(c.prepareStatement(sql))) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? JobState.parse(rs.getString(1)) : null;
      }
    }
  }

  /**
   * A JSON object text mapping each id (as PostgreSQL prints a uuid) to {@code rawJson.apply(index)}, a
   * JSON value written as is; ids whose value is null are left out.
   */
  static String jsonObject(UUID[] ids, IntFunction<String> rawJson) {
    StringBuilder out = new StringBuilder(ids.length * 48).append('{');
    for (int i = 0; i < ids.length; i++) {
      String value = rawJson.apply(i);
      if (value != null) {
        out.append(out.length() > 1 ? "," : "")
            .append('"')
            .append(ids[i])
            .append("\":")
            .append(value);
      }
    }
    return out.append('}').toString();
  }

  /** A parameter typed jsonb, so the statement parses it once rather than casting text per row. */
  static PGobject jsonb(String json) throws SQLException {
    PGobject value = new PGobject();
    value.setType("jsonb");
    value.setValue(json);
    return value;
  }
}
