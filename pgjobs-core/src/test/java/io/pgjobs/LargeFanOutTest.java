package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * A parent that succeeds with more children than a chunk ({@code pgjobs.unblock_chunk}, 1,000 unless a
 * session sets it) owes its edges: they are resolved after its commit, one chunk per transaction, by the
 * workers ({@code resolve_pending_edges()}, V10), not all in the statement that ends it. These tests end
 * parents by hand in a session with a chunk of 3, and call the function as a worker does.
 */
class LargeFanOutTest extends PgJobsTestBase {
  /** A step: its name. */
  public record Step(String name) {}

  static final JobType<Step> STEP = JobType.of("fan-out-step", Step.class).withMaxAttempts(1);

  /** A queue no worker of these tests serves: its jobs stay where the graph's ends leave them. */
  private static final EnqueueOptions UNSERVED =
      EnqueueOptions.builder().queue("fan-out-unserved").build();

  /** Root "r" with five children, "rx" waiting for r and x, "rOnly" to run only if r fails. */
  private static Map<String, UUID> rootWithSevenEdges() {
    JobGraph.Builder graph = JobGraph.builder()
        .add("r", STEP, new Step("r"), UNSERVED)
        .add("x", STEP, new Step("x"), UNSERVED);
    for (int i = 1; i <= 5; i++) {
      graph.add("c" + i, STEP, new Step("c" + i), UNSERVED, Dependency.on("r"));
    }
    graph.add("rx", STEP, new Step("rx"), UNSERVED, Dependency.on("r"), Dependency.on("x"));
    graph.add("rOnly", STEP, new Step("rOnly"), UNSERVED, Dependency.on("r").onlyIfItFails());
    return client.enqueueGraph(graph.build()).ids();
  }

  /**
   * A session of its own in which a chunk is 3 edges: a connection outside the shared pool, which would
   * hand the setting on to the workers' statements.
   */
  private static Connection chunkOfThree() throws SQLException {
    Connection c = DriverManager.getConnection(db.jdbcUrl());
    try (Statement st = c.createStatement()) {
      st.execute("SET pgjobs.unblock_chunk = 3");
    }
    return c;
  }

  /** Ends the job as succeeded in one statement, as a completion batch does (the trigger runs at its end). */
  private static void succeed(Connection c, UUID id) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("WITH done AS (DELETE FROM pgjobs.jobs WHERE id = ? RETURNING *)"
            + " INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts,"
            + " max_attempts, run_at, created_at, errors, finished_at)"
            + " SELECT id, type, queue, payload, priority, 'succeeded', 1, max_attempts, run_at,"
            + " created_at, errors, now() FROM done")) {
      ps.setObject(1, id);
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }

  private static int resolveChunk(Connection c) throws SQLException {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT pgjobs.resolve_pending_edges()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** "state:waiting_on" of a job in the hot table, or its final state. */
  private static String waiting(UUID id) {
    return queryText("SELECT coalesce((SELECT state || ':' || coalesce(waiting_on::text, '-')"
        + " FROM pgjobs.jobs WHERE id = '" + id + "'),"
        + " (SELECT state FROM pgjobs.finished_jobs WHERE id = '" + id + "'))");
  }

  private static long edgesResolved(UUID parent) {
    return count("SELECT count(*) FROM pgjobs.job_dependencies WHERE parent_id = '" + parent
        + "' AND parent_state IS NOT NULL");
  }

  @Test
  void aSuccessWithMoreChildrenThanAChunkOwesItsEdgesAndEachTransactionResolvesOneChunk()
      throws Exception {
    Map<String, UUID> ids = rootWithSevenEdges();
    UUID r = ids.get("r");
    try (Connection c = chunkOfThree();
        Connection other = chunkOfThree()) {
      succeed(c, r);
      // The root's own statement resolved none of its seven edges: it owes them.
      assertThat(edgesResolved(r)).isZero();
      assertThat(count("SELECT count(*) FROM pgjobs.pending_edges WHERE parent_id = '" + r
              + "' AND after_child IS NULL"))
          .isEqualTo(1);
      assertThat(waiting(ids.get("c1"))).isEqualTo("blocked:1");

      // One chunk in a transaction held open: another session finds no owed parent free.
      c.setAutoCommit(false);
      assertThat(resolveChunk(c)).isEqualTo(3);
      assertThat(resolveChunk(other)).isEqualTo(-1);
      c.commit();
      c.setAutoCommit(true);
      assertThat(edgesResolved(r)).isEqualTo(3);

      assertThat(resolveChunk(other)).isEqualTo(3);
      assertThat(edgesResolved(r)).isEqualTo(6);
      assertThat(count("SELECT count(*) FROM pgjobs.pending_edges")).isEqualTo(1);
      // The last chunk, shorter than a chunk, ends the debt.
      assertThat(resolveChunk(c)).isEqualTo(1);
      assertThat(count("SELECT count(*) FROM pgjobs.pending_edges")).isZero();
      assertThat(resolveChunk(c)).isEqualTo(-1);
    }
    for (int i = 1; i <= 5; i++) {
      assertThat(waiting(ids.get("c" + i))).as("c" + i).isEqualTo("queued:-");
    }
    // Counted down by the chunk like any other end: still waiting for x; and "only if r fails" is
    // cancelled as not needed.
    assertThat(waiting(ids.get("rx"))).isEqualTo("blocked:1");
    assertThat(waiting(ids.get("rOnly"))).isEqualTo("cancelled");
    assertThat(count("SELECT count(*) FROM pgjobs.job_dependencies WHERE parent_id = '" + r
            + "' AND parent_state = 'succeeded'"))
        .isEqualTo(7);
  }

  @Test
  void aChunkRolledBackResolvesNothingAndAWorkerStartedLaterResolvesTheRest() throws Exception {
    Map<String, UUID> ids = rootWithSevenEdges();
    UUID r = ids.get("r");
    try (Connection c = chunkOfThree()) {
      succeed(c, r);
      // As a worker killed mid-chunk: its transaction never commits.
      c.setAutoCommit(false);
      assertThat(resolveChunk(c)).isEqualTo(3);
      c.rollback();
      c.setAutoCommit(true);
      assertThat(edgesResolved(r)).isZero();
      assertThat(count("SELECT count(*) FROM pgjobs.pending_edges WHERE after_child IS NULL"))
          .isEqualTo(1);
      assertThat(resolveChunk(c)).isEqualTo(3);
    }
    // The notification went out before this worker listened: its look every second finds the debt.
    start(worker().queue("default", 1).register(STEP, (ctx, s) -> null));
    Awaitility.await("the owed edges resolved by the worker")
        .atMost(Duration.ofSeconds(20))
        .until(() -> count("SELECT count(*) FROM pgjobs.pending_edges") == 0);
    assertThat(edgesResolved(r)).isEqualTo(7);
    for (int i = 1; i <= 5; i++) {
      assertThat(waiting(ids.get("c" + i))).as("c" + i).isEqualTo("queued:-");
    }
    assertThat(waiting(ids.get("rx"))).isEqualTo("blocked:1");
    assertThat(waiting(ids.get("rOnly"))).isEqualTo("cancelled");
  }

  @Test
  void aParentThatDidNotSucceedResolvesEveryEdgeInItsOwnStatement() throws Exception {
    Map<String, UUID> ids = rootWithSevenEdges();
    UUID r = ids.get("r");
    try (Connection c = chunkOfThree();
        Statement st = c.createStatement()) {
      // Deleted without a finished row: it ended cancelled.
      assertThat(st.executeUpdate("DELETE FROM pgjobs.jobs WHERE id = '" + r + "'"))
          .isEqualTo(1);
    }
    assertThat(count("SELECT count(*) FROM pgjobs.pending_edges")).isZero();
    assertThat(edgesResolved(r)).isEqualTo(7);
    for (int i = 1; i <= 5; i++) {
      assertThat(waiting(ids.get("c" + i))).as("c" + i).isEqualTo("cancelled");
    }
    assertThat(waiting(ids.get("rx"))).isEqualTo("cancelled");
    assertThat(waiting(ids.get("rOnly"))).isEqualTo("queued:-");
  }

  @Test
  void everyChildOfAFanOutOfThreeChunksRunsOnceAfterItsRootOnAWorker() {
    int children = 2_500;
    JobGraph.Builder graph = JobGraph.builder().add("root", STEP, new Step("root"));
    for (int i = 0; i < children; i++) {
      graph.add("c" + i, STEP, new Step("c" + i), Dependency.on("root"));
    }
    Map<String, UUID> ids = client.enqueueGraph(graph.build()).ids();
    Map<String, List<Instant[]>> runs = new ConcurrentHashMap<>();
    JobWorker.Builder worker = worker().queue("default", 8).register(STEP, (ctx, s) -> {
      Instant start = Instant.now();
      runs.computeIfAbsent(s.name(), k -> java.util.Collections.synchronizedList(new ArrayList<>()))
          .add(new Instant[] {start, Instant.now()});
      return null;
    });
    start(worker);
    Awaitility.await("every child succeeded")
        .atMost(Duration.ofSeconds(60))
        .until(() -> count("SELECT count(*) FROM pgjobs.finished_jobs WHERE type = 'fan-out-step'"
                + " AND state = 'succeeded'")
            == children + 1);
    Instant rootEnd = runs.get("root").get(0)[1];
    assertThat(runs).hasSize(children + 1);
    runs.forEach((name, list) -> {
      assertThat(list).as("runs of %s", name).hasSize(1);
      if (!name.equals("root")) {
        assertThat(list.get(0)[0]).as("start of %s", name).isAfterOrEqualTo(rootEnd);
      }
    });
    assertThat(count("SELECT count(*) FROM pgjobs.pending_edges")).isZero();
    assertThat(edgesResolved(ids.get("root"))).isEqualTo(children);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE type = 'fan-out-step'"
            + " AND attempts <> 1"))
        .isZero();
  }
}
