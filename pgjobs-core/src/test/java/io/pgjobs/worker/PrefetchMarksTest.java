package io.pgjobs.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The clearing of {@code prefetched} marks when lanes start marked jobs: lanes that ask while a clear is
 * in flight share the next statement (one statement per job had lanes queue on the pool under load), and
 * each lane learns whether its job is still the worker's claim.
 */
class PrefetchMarksTest extends PgJobsTestBase {
  /** A statement clearing marks that waits for a row lock. */
  private static final String CLEAR_WAITING =
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
          + " AND wait_event_type = 'Lock' AND query LIKE '%SET prefetched = false%'";

  private ExecutionStore store;
  private final ExecutorService lanes = Executors.newCachedThreadPool();

  @BeforeEach
  void logClearingStatements() throws Exception {
    store = new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
    // One row per statement that turned marks off, with how many it turned off (no heartbeat runs
    // here, so every such statement is PrefetchMarks').
    sql("CREATE TABLE IF NOT EXISTS public.clear_log (n serial, cleared int)");
    sql("""
        CREATE OR REPLACE FUNCTION public.log_clears() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE cleared int;
        BEGIN
          SELECT count(*) INTO cleared FROM old_rows o JOIN new_rows r USING (id) WHERE o.prefetched AND NOT r.prefetched;
          IF cleared > 0 THEN INSERT INTO public.clear_log (cleared) VALUES (cleared); END IF;
          RETURN NULL;
        END $$""");
    sql("DROP TRIGGER IF EXISTS log_clears ON pgjobs.jobs");
    sql("CREATE TRIGGER log_clears AFTER UPDATE ON pgjobs.jobs REFERENCING OLD TABLE AS old_rows"
        + " NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.log_clears()");
  }

  @AfterEach
  void dropTrigger() throws Exception {
    lanes.shutdownNow();
    sql("DROP TRIGGER IF EXISTS log_clears ON pgjobs.jobs");
  }

  @Test
  void lanesThatAskWhileAClearIsInFlightShareTheNextStatement() throws Exception {
    List<ClaimedJob> jobs = claimMarked(20);
    PrefetchMarks marks = new PrefetchMarks(store);
    List<CompletableFuture<Boolean>> started = new ArrayList<>();
    try (Connection locker = db.dataSource().getConnection()) {
      started.add(firstClearInFlight(marks, locker, jobs.get(0)));
      for (ClaimedJob job : jobs.subList(1, jobs.size())) {
        started.add(clearOnALane(marks, job));
      }
      await("19 lanes wait for the next statement")
          .atMost(Duration.ofSeconds(10))
          .until(() -> marks.waiting() == 19);
      assertThat(started).noneMatch(CompletableFuture::isDone);
      locker.rollback();
    }

    for (CompletableFuture<Boolean> lane : started) {
      assertThat(lane.get()).as("the job is still this worker's claim: it runs").isTrue();
    }
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE prefetched")).isZero();
    assertThat(clears()).as("marks cleared per statement").containsExactly(1, 19);
  }

  @Test
  void aJobNoLongerOfTheClaimIsReportedAndTheOthersOfItsStatementAreCleared() throws Exception {
    List<ClaimedJob> jobs = claimMarked(3);
    // Rescue took the second job from this claim meanwhile: its claim token moved on.
    sql("UPDATE pgjobs.jobs SET claim_token = claim_token + 1 WHERE id = '"
        + jobs.get(1).id() + "'");
    PrefetchMarks marks = new PrefetchMarks(store);
    List<CompletableFuture<Boolean>> started = new ArrayList<>();
    try (Connection locker = db.dataSource().getConnection()) {
      started.add(firstClearInFlight(marks, locker, jobs.get(0)));
      started.add(clearOnALane(marks, jobs.get(1)));
      started.add(clearOnALane(marks, jobs.get(2)));
      await().atMost(Duration.ofSeconds(10)).until(() -> marks.waiting() == 2);
      locker.rollback();
    }

    assertThat(started.get(0).get()).isTrue();
    assertThat(started.get(1).get()).as("no longer this claim's: not run").isFalse();
    assertThat(started.get(2).get()).isTrue();
    assertThat(clears()).as("marks cleared per statement").containsExactly(1, 1);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE prefetched"))
        .as("the other claim's mark stays")
        .isOne();
  }

  @Test
  void aFailedStatementFailsEveryLaneItCarriedAndTheNextOneIsWritten() throws Exception {
    List<ClaimedJob> jobs = claimMarked(3);
    PrefetchMarks marks = new PrefetchMarks(store);
    CompletableFuture<Boolean> first;
    List<CompletableFuture<Boolean>> carried = new ArrayList<>();
    try (Connection locker = db.dataSource().getConnection()) {
      first = firstClearInFlight(marks, locker, jobs.get(0));
      carried.add(clearOnALane(marks, jobs.get(1)));
      carried.add(clearOnALane(marks, jobs.get(2)));
      await().atMost(Duration.ofSeconds(10)).until(() -> marks.waiting() == 2);
      // The statement in flight fails (its backend is ended), as on a lost connection.
      sql(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
              + " AND wait_event_type = 'Lock' AND query LIKE '%SET prefetched = false%'");
      assertThat(first)
          .failsWithin(Duration.ofSeconds(10))
          .withThrowableThat()
          .havingCause()
          .isInstanceOf(SQLException.class);
      locker.rollback();
    }

    for (CompletableFuture<Boolean> lane : carried) {
      assertThat(lane.get()).isTrue();
    }
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE prefetched"))
        .as("the first job's mark stays")
        .isOne();
  }

  /** Claims {@code n} fresh jobs for worker "w" and marks them as a heartbeat would. */
  private List<ClaimedJob> claimMarked(int n) throws Exception {
    sql("DELETE FROM pgjobs.jobs");
    client.enqueueAll(NUMBERED, Collections.nCopies(n, new Numbered(1)), EnqueueOptions.DEFAULTS);
    List<ClaimedJob> jobs = store.claim(JobType.DEFAULT_QUEUE, n, "w");
    assertThat(jobs).hasSize(n);
    sql("UPDATE pgjobs.jobs SET prefetched = true WHERE locked_by = 'w'");
    sql("TRUNCATE public.clear_log");
    return jobs;
  }

  private CompletableFuture<Boolean> clearOnALane(PrefetchMarks marks, ClaimedJob job) {
    return CompletableFuture.supplyAsync(
        () -> {
          try {
            return marks.clear(job);
          } catch (SQLException e) {
            throw new java.util.concurrent.CompletionException(e);
          }
        },
        lanes);
  }

  /**
   * Holds {@code job}'s row on {@code locker} (in a transaction the caller ends) and starts its clear on a
   * lane: the statement carrying it waits for the lock, in flight, until the caller lets go.
   */
  private CompletableFuture<Boolean> firstClearInFlight(
      PrefetchMarks marks, Connection locker, ClaimedJob job) throws SQLException {
    locker.setAutoCommit(false);
    try (PreparedStatement ps =
        locker.prepareStatement("SELECT 1 FROM pgjobs.jobs WHERE id = ? FOR UPDATE")) {
      ps.setObject(1, job.id());
      ps.executeQuery().close();
    }
    CompletableFuture<Boolean> lane = clearOnALane(marks, job);
    await("the first clear waits for the row lock")
        .atMost(Duration.ofSeconds(10))
        .until(() -> count(CLEAR_WAITING) == 1);
    return lane;
  }

  private static List<Integer> clears() throws SQLException {
    List<Integer> rows = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT cleared FROM public.clear_log ORDER BY n")) {
      while (rs.next()) {
        rows.add(rs.getInt(1));
      }
    }
    return rows;
  }

  private static void sql(String statement) throws SQLException {
    try (Connection c = db.dataSource().getConnection();
        Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
