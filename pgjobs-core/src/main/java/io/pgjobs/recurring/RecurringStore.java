package io.pgjobs.recurring;

import io.pgjobs.EnqueueOptions;
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
import javax.sql.DataSource;

/**
 * The recurring schedules in the database and the firing of their slots. SQL in {@link RecurringSql}.
 */
public final class RecurringStore {
  private final DataSource dataSource;
  private final String schema;
  private final PayloadCodec codec = new PayloadCodec(PayloadCodec.DEFAULT_MAPPER);
  private final JobClient client;

  /** A store over {@code schema}. */
  public RecurringStore(DataSource dataSource, String schema) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.schema = requireSchema(schema);
    this.client = JobClient.builder(dataSource).schema(schema).build();
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
  public record Stored(Recurring recurring, boolean paused, String source, boolean disabled, Instant lastSlot,
      Instant createdAt) {}

  /**
   * Declares schedules from code: inserted, or updated where they exist (their pause and last slot kept).
   * Then every code schedule of one of {@code ownTypes} that is not among them is disabled (a schedule
   * removed from the code stops firing) and returned.
   */
  public List<String> declare(Collection<Recurring> declared, Collection<String> ownTypes) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        for (Recurring r : declared) {
          try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.UPSERT_FROM_CODE))) {
            int i = 1;
            ps.setString(i++, r.name());
            ps.setString(i++, r.schedule().expression());
            ps.setString(i++, r.schedule().zone().getId());
            ps.setString(i++, r.jobType());
            ps.setString(i++, r.queue());
            ps.setString(i++, r.payloadJson());
            ps.setInt(i++, r.priority());
            ps.setInt(i++, r.maxAttempts());
            ps.setString(i++, r.missed().policy());
            ps.setInt(i, r.missed().catchUp());
            ps.executeUpdate();
          }
        }
        List<String> disabled = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.DISABLE_UNDECLARED))) {
          ps.setArray(1, c.createArrayOf("text", ownTypes.toArray()));
          ps.setArray(2, c.createArrayOf("text", declared.stream().map(Recurring::name).toArray()));
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
    Recurring r = new Recurring(rs.getString("name"), CronSchedule.parse(rs.getString("cron"), rs.getString("zone")),
        rs.getString("job_type"), rs.getString("queue"), rs.getString("payload"), rs.getInt("priority"),
        rs.getInt("max_attempts"), new MissedSlots(rs.getString("missed"), rs.getInt("catch_up")));
    Timestamp last = rs.getTimestamp("last_slot");
    return new Stored(r, rs.getBoolean("paused"), rs.getString("source"), rs.getBoolean("disabled"),
        last == null ? null : last.toInstant(), rs.getTimestamp("created_at").toInstant());
  }

  /** What one firing of a schedule did. */
  public record Fired(int enqueued, int skipped) {}

  /**
   * Fires the slots of schedule {@code name} that are due at {@code now}, in one transaction that locks
   * the schedule's row (a concurrent pass skips it): each slot after the last one handled enqueues one
   * job with the slot's idempotency key; slots older than {@code missedAfter} are missed and follow the
   * schedule's policy; the newest slot becomes the last one handled. Nothing for a paused or disabled
   * schedule.
   */
  public Fired fire(String name, Instant now, Duration missedAfter) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        Stored s;
        try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.LOCK))) {
          ps.setString(1, name);
          try (ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
              c.rollback();
              return new Fired(0, 0);
            }
            s = read(rs);
          }
        }
        if (s.paused() || s.disabled()) {
          c.rollback();
          return new Fired(0, 0);
        }
        Instant after = s.lastSlot() != null ? s.lastSlot() : s.createdAt();
        List<Instant> due = s.recurring().schedule().slots(after, now, 100_000);
        if (due.isEmpty()) {
          c.rollback();
          return new Fired(0, 0);
        }
        List<Instant> missed = new ArrayList<>();
        List<Instant> firing = new ArrayList<>();
        for (Instant slot : due) {
          (Duration.between(slot, now).compareTo(missedAfter) > 0 ? missed : firing).add(slot);
        }
        int keep = Math.min(missed.size(), s.recurring().missed().firing());
        List<Instant> enqueue = new ArrayList<>(missed.subList(missed.size() - keep, missed.size()));
        enqueue.addAll(firing);
        Recurring r = s.recurring();
        java.util.UUID lastJob = null;
        for (Instant slot : enqueue) {
          lastJob = client.enqueue(c, r.jobType(), codec.tree(r.payloadJson()),
              EnqueueOptions.builder()
                  .queue(r.queue())
                  .priority(r.priority())
                  .maxAttempts(r.maxAttempts())
                  .idempotencyKey(Recurring.slotKey(name, slot))
                  .context(Recurring.slotContext(name, slot))
                  .build()).job().id();
        }
        try (PreparedStatement ps = c.prepareStatement(sql(RecurringSql.SET_LAST_SLOT))) {
          ps.setTimestamp(1, Timestamp.from(due.get(due.size() - 1)));
          ps.setObject(2, lastJob);
          ps.setString(3, name);
          ps.executeUpdate();
        }
        c.commit();
        return new Fired(enqueue.size(), due.size() - enqueue.size());
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
}
