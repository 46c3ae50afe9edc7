package io.pgjobs.bench;

import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

/**
 * The same work as {@link PgJobsWorkloads} done with the least SQL that can do it, over plain JDBC on one
 * connection: what PostgreSQL itself manages on this machine. The table has the columns a queue needs
 * (queue, payload, priority, run_at, state) and the same kind of partial index.
 */
final class RawSqlWorkloads {
  private final DataSource dataSource;
  private final String schema;

  RawSqlWorkloads(DataSource dataSource, String schema) throws SQLException {
    this.dataSource = dataSource;
    this.schema = schema;
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      st.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
      st.execute("CREATE TABLE " + schema
          + ".raw_jobs (id bigserial PRIMARY KEY, queue text NOT NULL DEFAULT 'default',"
          + " payload jsonb NOT NULL, priority int NOT NULL DEFAULT 50, run_at timestamptz NOT NULL DEFAULT now(),"
          + " state text NOT NULL DEFAULT 'queued', attempts int NOT NULL DEFAULT 0)");
      st.execute("CREATE INDEX ON " + schema
          + ".raw_jobs (queue, priority DESC, run_at) WHERE state = 'queued'");
      st.execute("CREATE TABLE " + schema + ".raw_finished (LIKE " + schema
          + ".raw_jobs, finished_at timestamptz NOT NULL)");
    }
  }

  void truncate() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      st.execute("TRUNCATE " + schema + ".raw_jobs, " + schema + ".raw_finished");
    }
  }

  BenchResult w1Copy(int run, int jobs) throws SQLException {
    StringBuilder rows = new StringBuilder(jobs * 16);
    for (int i = 0; i < jobs; i++) {
      rows.append("{\"n\": ").append(i).append("}\n");
    }
    byte[] data = rows.toString().getBytes(StandardCharsets.UTF_8);
    try (Connection c = dataSource.getConnection()) {
      CopyManager copy = c.unwrap(PGConnection.class).getCopyAPI();
      long start = System.nanoTime();
      copy.copyIn(
          "COPY " + schema + ".raw_jobs (payload) FROM STDIN",
          new java.io.ByteArrayInputStream(data));
      return BenchResult.throughput(
          "raw", "COPY", Workload.W1, run, jobs, System.nanoTime() - start);
    } catch (java.io.IOException e) {
      throw new SQLException(e);
    }
  }

  BenchResult w1MultiRow(int run, int jobs) throws SQLException {
    int perStatement = 1000;
    StringBuilder sql = new StringBuilder("INSERT INTO " + schema + ".raw_jobs (payload) VALUES ");
    for (int i = 0; i < perStatement; i++) {
      sql.append(i == 0 ? "" : ",").append("(?::jsonb)");
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.toString())) {
      long start = System.nanoTime();
      for (int done = 0; done < jobs; done += perStatement) {
        for (int i = 0; i < perStatement; i++) {
          ps.setString(i + 1, "{\"n\": " + (done + i) + "}");
        }
        ps.executeUpdate();
      }
      return BenchResult.throughput(
          "raw", "multi-row INSERT x1000", Workload.W1, run, jobs, System.nanoTime() - start);
    }
  }

  BenchResult w2(int run, int jobs) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement("INSERT INTO " + schema + ".raw_jobs (payload) VALUES (?::jsonb)")) {
      long start = System.nanoTime();
      for (int i = 0; i < jobs; i++) {
        ps.setString(1, "{\"n\": " + i + "}");
        ps.executeUpdate();
      }
      return BenchResult.throughput(
          "raw",
          "single-row INSERT, autocommit",
          Workload.W2,
          run,
          jobs,
          System.nanoTime() - start);
    }
  }

  /** How a raw W3 finishes the jobs it claimed. */
  enum Finish {
    /** DELETE them (nothing kept). */
    DELETE,
    /** UPDATE them to done in place. */
    UPDATE_DONE,
    /** Move them to a finished table in one statement (pgjobs' design). */
    MOVE
  }

  BenchResult w3(int run, int jobs, int batch, Finish finish) throws SQLException {
    w1Copy(run, jobs); // fill, untimed
    String claim =
        "UPDATE " + schema + ".raw_jobs j SET state = 'running', attempts = j.attempts + 1 FROM ("
            + "SELECT id FROM " + schema
            + ".raw_jobs WHERE state = 'queued' AND queue = 'default' AND run_at <= now()"
            + " ORDER BY priority DESC, run_at LIMIT ? FOR UPDATE SKIP LOCKED) c WHERE j.id = c.id RETURNING j.id, j.payload::text";
    String done = switch (finish) {
      case DELETE -> "DELETE FROM " + schema + ".raw_jobs WHERE id = ANY(?)";
      case UPDATE_DONE -> "UPDATE " + schema + ".raw_jobs SET state = 'done' WHERE id = ANY(?)";
      case MOVE ->
        "WITH d AS (DELETE FROM " + schema + ".raw_jobs WHERE id = ANY(?) RETURNING *) INSERT INTO "
            + schema + ".raw_finished SELECT *, now() FROM d";
    };
    try (Connection c = dataSource.getConnection();
        PreparedStatement claimPs = c.prepareStatement(claim);
        PreparedStatement donePs = c.prepareStatement(done)) {
      DrainProfile profile =
          DrainProfile.enabled() ? DrainProfile.start(dataSource, List.of()) : null;
      long start = System.nanoTime();
      int total = 0;
      while (true) {
        claimPs.setInt(1, batch);
        List<Long> ids = new ArrayList<>(batch);
        try (ResultSet rs = claimPs.executeQuery()) {
          while (rs.next()) {
            ids.add(rs.getLong(1));
            rs.getString(2);
          }
        }
        if (ids.isEmpty()) {
          break;
        }
        Array array = c.createArrayOf("bigint", ids.toArray());
        donePs.setArray(1, array);
        donePs.executeUpdate();
        total += ids.size();
      }
      String label = "claim " + batch + " + "
          + switch (finish) {
            case DELETE -> "DELETE";
            case UPDATE_DONE -> "UPDATE to done";
            case MOVE -> "move to finished table";
          };
      long nanos = System.nanoTime() - start;
      if (profile != null) {
        profile.finish("raw " + label, total, System.err);
      }
      return BenchResult.throughput("raw", label, Workload.W3, run, total, nanos);
    }
  }

  /** W4 of the reference: as pgjobs' ({@link PgJobsWorkloads#w4}), the claim its end. */
  BenchResult w4(int run, int jobs, int warmup) throws Exception {
    String channel = schema + "_raw_ready";
    ConcurrentHashMap<Long, Long> claimedAt = new ConcurrentHashMap<>();
    ConcurrentHashMap<Long, Long> notifiedAt =
        new ConcurrentHashMap<>(); // the notification that led to the claim
    CountDownLatch listening = new CountDownLatch(1);
    CountDownLatch all = new CountDownLatch(warmup + jobs);
    Thread consumer = Thread.ofPlatform().daemon().start(() -> {
      try (Connection c = dataSource.getConnection();
          Statement st = c.createStatement();
          PreparedStatement claim =
              c.prepareStatement("UPDATE " + schema + ".raw_jobs j SET state = 'running' FROM ("
                  + "SELECT id FROM " + schema
                  + ".raw_jobs WHERE state = 'queued' ORDER BY priority DESC, run_at"
                  + " LIMIT 10 FOR UPDATE SKIP LOCKED) x WHERE j.id = x.id RETURNING j.id")) {
        st.execute("LISTEN " + channel);
        listening.countDown();
        // Not getNotifications(timeout), which waits 1 ms after every notification (see
        // RawNotificationReader): the reference is the floor of a Java LISTEN/NOTIFY claimer.
        RawNotificationReader reader = RawNotificationReader.of(c);
        while (all.getCount() > 0) {
          if (!reader.await(200)) {
            continue;
          }
          long notified = System.nanoTime();
          try (ResultSet rs = claim.executeQuery()) {
            long now = System.nanoTime();
            while (rs.next()) {
              notifiedAt.put(rs.getLong(1), notified);
              claimedAt.put(rs.getLong(1), now);
              all.countDown();
            }
          }
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    });
    listening.await(10, TimeUnit.SECONDS);
    List<Double> fromReturn = new ArrayList<>();
    List<Double> fromCall = new ArrayList<>();
    ConcurrentHashMap<Long, long[]> enqueuedAt =
        new ConcurrentHashMap<>(); // call started, call returned
    try (Connection c = dataSource.getConnection();
        PreparedStatement insert = c.prepareStatement("WITH i AS (INSERT INTO " + schema
            + ".raw_jobs (payload) VALUES ('{}') RETURNING id) SELECT id, pg_notify('" + channel
            + "', '') FROM i")) {
      for (int i = 0; i < warmup; i++) { // untimed, as pgjobs' (see PgJobsWorkloads.w4)
        try (ResultSet rs = insert.executeQuery()) {
          rs.next();
        }
        LockSupport.parkNanos(Duration.ofMillis(2).toNanos());
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (all.getCount() > jobs && System.nanoTime() < deadline) {
        LockSupport.parkNanos(1_000_000);
      }
      if (all.getCount() > jobs) {
        throw new IllegalStateException("W4 raw: " + (warmup + jobs - all.getCount()) + " of "
            + warmup + " warm-up jobs claimed in 120 s");
      }
      if (warmup > 0) {
        // The reference keeps its claimed rows (as running), which its claim would step over: start
        // the timed jobs on an empty table, as the cold run does.
        try (Statement st = c.createStatement()) {
          st.execute("TRUNCATE " + schema + ".raw_jobs");
        }
      }
      LockSupport.parkNanos(Duration.ofMillis(500).toNanos());
      for (int i = 0; i < jobs; i++) {
        long t0 = System.nanoTime();
        try (ResultSet rs = insert.executeQuery()) {
          rs.next();
          enqueuedAt.put(rs.getLong(1), new long[] {t0, System.nanoTime()});
        }
        LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
      }
    }
    all.await(30, TimeUnit.SECONDS);
    consumer.join(5_000);
    // The same stages as pgjobs' up to the claim (the raw reference has no handler: the claim is
    // its end).
    Map<String, List<Double>> stages = new LinkedHashMap<>();
    stages.put("return_to_notification", new ArrayList<>());
    stages.put("notification_to_claim", new ArrayList<>());
    enqueuedAt.forEach((id, t) -> {
      Long claimed = claimedAt.get(id);
      if (claimed != null) {
        fromReturn.add((claimed - t[1]) / 1e6);
        fromCall.add((claimed - t[0]) / 1e6);
        long notified = notifiedAt.get(id);
        stages.get("return_to_notification").add((notified - t[1]) / 1e6);
        stages.get("notification_to_claim").add((claimed - notified) / 1e6);
      }
    });
    return Percentiles.w4(
        "raw",
        Percentiles.w4Variant("LISTEN/NOTIFY + claim", warmup),
        run,
        jobs,
        fromReturn,
        fromCall,
        stages);
  }
}
