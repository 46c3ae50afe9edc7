package io.pgjobs.recurring;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.JobClient;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.AutoCommitDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The recurring schedules in the database: their declaration from code, the firing of their slots, and
 * the reads and changes {@link RecurringSchedules} makes at run time. Every statement of the area runs
 * here; their text is in {@link RecurringSql}.
 */
public final class RecurringStore {
  private final DataSource dataSource;
  private final String schema;
  private final PayloadCodec codec = new PayloadCodec(PayloadCodec.DEFAULT_MAPPER);
  private final ScheduleClient client;

  /**
   * A store over {@code schema} that fires slots through a client of its own (for tools and tests; an
   * application passes the client it has, {@link #RecurringStore(DataSource, String, ScheduleClient)}).
   */
  public RecurringStore(DataSource dataSource, String schema) {
    this(dataSource, schema, JobClient.builder(dataSource).schema(schema).build());
  }

  /** A store over {@code schema} that fires slots through {@code client} (the composition root's). */
  public RecurringStore(DataSource dataSource, String schema, ScheduleClient client) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.schema = requireSchema(schema);
    this.client = client;
  }

  /** The store of {@code client}'s database and schema, enqueueing through that client. */
  RecurringStore(ScheduleClient client) {
    this(client.dataSource(), client.schema(), client);
  }

  private static String requireSchema(String schema) {
    if (schema == null || !schema.matches("[a-z_][a-z0-9_]{0,50}")) {
      throw new IllegalArgumentException("invalid schema name '" + schema + "'");
    }
    return schema;
  }

  private String sql(String template) {
    return template.replace("{schema}", schema);
  }

  /** A stored schedule and where it stands. */
  public record Stored(
      Recurring recurring,
      boolean paused,
      String source,
      boolean disabled,
      Instant lastSlot,
      Instant createdAt) {}

  /**
   * Declares schedules from code: inserted, or updated where they exist (their pause and last slot kept).
   * Then every code schedule of one of {@code ownTypes} that is not among them is disabled (a schedule
   * removed from the code stops firing) and returned.
   */
  public List<String> declare(Collection<Recurring> declared, Collection<String> ownTypes)
      throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        for (Recurring r : declared) {
          try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.UPSERT_FROM_CODE))) {
            bind(ps, 1, r, true);
            ps.executeUpdate();
          }
        }
        List<String> disabled = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.DISABLE_UNDECLARED))) {
          ps.setArray(1, c.createArrayOf("text", ownTypes.toArray()));
          ps.setArray(
              2, c.createArrayOf("text", declared.stream().map(Recurring::name).toArray()));
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              disabled.add(rs.getString(1));
            }
          }
        }
        c.commit();
        return disabled;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  /** Every schedule, by name. */
  public List<Stored> list() throws SQLException {
    List<Stored> all = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql(RecurringSql.LIST));
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        all.add(read(rs));
      }
    }
    return all;
  }

  private static Stored read(ResultSet rs) throws SQLException {
    Recurring r = new Recurring(
        rs.getString("name"),
        CronSchedule.parse(rs.getString("cron"), rs.getString("zone")),
        rs.getString("job_type"),
        rs.getString("queue"),
        rs.getString("payload"),
        rs.getInt("priority"),
        rs.getInt("max_attempts"),
        new MissedSlots(rs.getString("missed"), rs.getInt("catch_up")));
    Timestamp last = rs.getTimestamp("last_slot");
    return new Stored(
        r,
        rs.getBoolean("paused"),
        rs.getString("source"),
        rs.getBoolean("disabled"),
        last == null ? null : last.toInstant(),
        rs.getTimestamp("created_at").toInstant());
  }

  /**
   * What one firing of a schedule did.
   *
   * @param enqueued the slots that enqueued a job
   * @param skipped the missed slots skipped; a lower bound if {@code moreSkipped}
   * @param moreSkipped more slots than {@code skipped} were missed and skipped: beyond
   *     {@link #MISSED_COUNTED} missed slots they are not read one by one (see {@link CronSchedule#catchUp})
   */
  public record Fired(int enqueued, int skipped, boolean moreSkipped) {
    /** A firing whose skipped slots were all counted. */
    public Fired(int enqueued, int skipped) {
      this(enqueued, skipped, false);
    }
  }

  /**
   * How many of the slots that are not yet missed (within missedAfter) a firing enqueues at most: the
   * newest ones.
   */
  private static final int SLOTS_KEPT = 100_000;

  /** Up to how many missed slots a firing counts exactly (see {@link Fired#moreSkipped}). */
  public static final int MISSED_COUNTED = 1_000;

  /**
   * Fires the slots of schedule {@code name} that are due by the database's clock ({@code now()} of the
   * firing's transaction), as {@link #fire(String, Instant, Duration)} does: what is due and what was
   * missed is decided on the clock every job's {@code run_at} and {@code created_at} are written with,
   * so a leader whose own clock runs ahead neither fires future slots nor skips due ones as missed.
   */
  public Fired fire(String name, Duration missedAfter) throws SQLException {
    return fire(name, null, missedAfter);
  }

  /**
   * Fires the slots of schedule {@code name} that are due at {@code now} (null: the database's
   * {@code now()}), in one transaction that locks the schedule's row (a concurrent pass skips it): each
   * slot after the last one handled enqueues one job with the slot's idempotency key; slots older than
   * {@code missedAfter} are missed and follow the schedule's policy; the newest slot becomes the last one
   * handled. Nothing for a paused or disabled schedule. The work is bounded whatever the time since the
   * last slot handled: missed slots beyond the newest {@link #MISSED_COUNTED} are not read one by one
   * ({@link CronSchedule#catchUp(Instant, Instant, int, long)}).
   */
  public Fired fire(String name, Instant now, Duration missedAfter) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        Stored s;
        Instant at;
        try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.LOCK))) {
          ps.setString(1, name);
          try (ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
              c.rollback();
              return new Fired(0, 0);
            }
            s = read(rs);
            at = now != null ? now : rs.getTimestamp("database_now").toInstant();
          }
        }
        if (s.paused() || s.disabled()) {
          c.rollback();
          return new Fired(0, 0);
        }
        Instant after = s.lastSlot() != null ? s.lastSlot() : s.createdAt();
        CronSchedule schedule = s.recurring().schedule();
        // A slot is missed when older than missedAfter: before 'boundary'. Only the newest missed
        // slots
        // the policy fires are read, and the others counted up to a limit (CronSchedule.catchUp):
        // the
        // work no longer grows with how long the schedule did not fire.
        Instant boundary = at.minus(missedAfter).minusNanos(1);
        int firingMissed = s.recurring().missed().firing();
        int keepMissed = Math.max(
            1, firingMissed); // the newest missed slot is the last handled if none is on time
        CronSchedule.CatchUp missed = boundary.isAfter(after)
            ? schedule.catchUp(after, boundary, keepMissed, Math.max(keepMissed, MISSED_COUNTED))
            : new CronSchedule.CatchUp(0, true, List.of());
        CronSchedule.CatchUp onTime =
            schedule.catchUp(boundary.isAfter(after) ? boundary : after, at, SLOTS_KEPT);
        if (missed.count() == 0 && onTime.count() == 0) {
          c.rollback();
          return new Fired(0, 0);
        }
        List<Instant> newestMissed = missed.newest();
        Instant newest = onTime.newest().isEmpty()
            ? newestMissed.get(newestMissed.size() - 1)
            : onTime.newest().get(onTime.newest().size() - 1);
        List<Instant> enqueue;
        if (missed.count() > 0 && s.recurring().missed().latestOnly()) {
          // After a gap, "latest" is the latest due slot, whether it was missed or is on time: a
          // restart after 42 s of a per-5-seconds schedule enqueues one job, not the eight slots of
          // the gap.
          enqueue = new ArrayList<>(List.of(newest));
        } else {
          enqueue = new ArrayList<>(newestMissed.subList(
              Math.max(0, newestMissed.size() - firingMissed), newestMissed.size()));
          enqueue.addAll(onTime.newest());
        }
        Recurring r = s.recurring();
        UUID lastJob = null;
        for (Instant slot : enqueue) {
          lastJob = client
              .enqueue(
                  c,
                  r.jobType(),
                  codec.tree(r.payloadJson()),
                  EnqueueOptions.builder()
                      .queue(r.queue())
                      .priority(r.priority())
                      .maxAttempts(r.maxAttempts())
                      .idempotencyKey(Recurring.slotKey(name, slot))
                      .context(Recurring.slotContext(name, slot))
                      .build())
              .job()
              .id();
        }
        try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.SET_LAST_SLOT))) {
          ps.setTimestamp(1, Timestamp.from(newest));
          ps.setObject(2, lastJob);
          ps.setString(3, name);
          ps.executeUpdate();
        }
        c.commit();
        long skipped = missed.count() + onTime.count() - enqueue.size();
        return new Fired(
            enqueue.size(), (int) Math.min(Integer.MAX_VALUE, skipped), !missed.exact());
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  /** The names of schedules that may fire (not paused, not disabled). */
  public List<String> active() throws SQLException {
    List<String> names = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql(RecurringSql.ACTIVE));
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        names.add(rs.getString(1));
      }
    }
    return names;
  }

  // ---------------------------------------------------------------- run-time management
  // (RecurringSchedules: it validates and decides; these only read and write)

  /**
   * A schedule as the run-time view reads it, with its last job ({@link RecurringSql#VIEW}).
   *
   * @param lastJobId the last job enqueued, or null
   * @param lastState that job's state, or null when it is no longer kept
   */
  record Viewed(
      String name,
      String cron,
      String zone,
      String jobType,
      String queue,
      String payloadJson,
      int priority,
      int maxAttempts,
      String missed,
      int catchUp,
      boolean paused,
      String source,
      boolean disabled,
      Instant lastSlot,
      UUID lastJobId,
      String lastState,
      Instant lastCreatedAt,
      Instant lastFinishedAt,
      Instant createdAt,
      Instant updatedAt) {}

  /** Every schedule by name ({@code name} null), or the one named {@code name} (none or one). */
  List<Viewed> view(String name) throws SQLException {
    List<Viewed> all = new ArrayList<>();
    String where = name == null ? "" : "WHERE r.name = ?";
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(sql(RecurringSql.VIEW.replace("{where}", where)))) {
      if (name != null) {
        ps.setString(1, name);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          all.add(new Viewed(
              rs.getString("name"),
              rs.getString("cron"),
              rs.getString("zone"),
              rs.getString("job_type"),
              rs.getString("queue"),
              rs.getString("payload"),
              rs.getInt("priority"),
              rs.getInt("max_attempts"),
              rs.getString("missed"),
              rs.getInt("catch_up"),
              rs.getBoolean("paused"),
              rs.getString("source"),
              rs.getBoolean("disabled"),
              instant(rs, "last_slot"),
              rs.getObject("last_job_id", UUID.class),
              rs.getString("last_state"),
              instant(rs, "last_created_at"),
              instant(rs, "last_finished_at"),
              instant(rs, "created_at"),
              instant(rs, "updated_at")));
        }
      }
    }
    return all;
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    Timestamp t = rs.getTimestamp(column);
    return t == null ? null : t.toInstant();
  }

  /** Inserts a schedule added at run time (source {@code api}); false when the name exists. */
  boolean insertFromApi(Recurring r) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql(RecurringSql.INSERT_FROM_API))) {
      bind(ps, 1, r, true);
      return ps.executeUpdate() > 0;
    }
  }

  /**
   * Replaces the definition of a schedule added at run time, leaving a code schedule alone.
   *
   * @return the schedule's source ({@code api}: replaced; else untouched), or null when there is none
   */
  String updateFromApi(Recurring r) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql(RecurringSql.UPDATE_FROM_API))) {
      ps.setString(1, r.name());
      bind(ps, 2, r, false);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString("source") : null;
      }
    }
  }

  /**
   * Removes a schedule added at run time, leaving a code schedule alone.
   *
   * @return the schedule's source ({@code api}: removed; else untouched), or null when there is none
   */
  String deleteFromApi(String name) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql(RecurringSql.DELETE_FROM_API))) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString("source") : null;
      }
    }
  }

  /** Pauses or resumes a schedule of either source; false when there is none. */
  boolean setPaused(String name, boolean paused) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql(RecurringSql.SET_PAUSED))) {
      ps.setBoolean(1, paused);
      ps.setString(2, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /**
   * Enqueues one job of schedule {@code name} by hand, in one transaction that locks the schedule (so it
   * waits for a firing in progress) and makes the job the schedule's last one; the slots are not
   * touched. {@code options} gives the job's options from the schedule (the caller decides its key and
   * context).
   *
   * @return the job, or null when there is no such schedule
   * @throws io.pgjobs.InvalidPayloadException if the stored payload no longer fits the (known) type
   */
  EnqueuedJob runNow(String name, Function<Recurring, EnqueueOptions> options) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        Recurring r;
        try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.LOCK_FOR_RUN))) {
          ps.setString(1, name);
          try (ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
              c.rollback();
              return null;
            }
            r = read(rs).recurring();
          }
        }
        EnqueuedJob job = client.enqueue(
            c,
            r.jobType(),
            PayloadCodec.DEFAULT_MAPPER.readTree(r.payloadJson()),
            options.apply(r));
        try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.SET_LAST_JOB))) {
          ps.setObject(1, job.job().id());
          ps.setString(2, name);
          ps.executeUpdate();
        }
        c.commit();
        return job;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      }
    }
  }

  /** Binds a schedule's definition from parameter {@code first} on, in the columns' order. */
  private static void bind(PreparedStatement ps, int first, Recurring r, boolean withName)
      throws SQLException {
    int i = first;
    if (withName) {
      ps.setString(i++, r.name());
    }
    ps.setString(i++, r.schedule().expression());
    ps.setString(i++, r.schedule().zone().getId());
    ps.setString(i++, r.jobType());
    ps.setString(i++, r.queue());
    ps.setString(i++, r.payloadJson());
    ps.setInt(i++, r.priority());
    ps.setInt(i++, r.maxAttempts());
    ps.setString(i++, r.missed().policy());
    ps.setInt(i, r.missed().catchUp());
  }
}
