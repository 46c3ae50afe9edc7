package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The worker's rarer lookups of running jobs by id are planned for the hot table as it is when they run
 * ({@link CustomPlan}): run often enough on a connection while the table was nearly empty, a
 * server-prepared statement keeps the generic plan made then — a sequential scan — as the table grows,
 * until a vacuum or analyze of the table (which a long transaction elsewhere can put off) makes the
 * session plan again. (PostgreSQL 15, 200,000 rows, measured by hand: that plan read 3,572 pages in
 * 19.7 ms; planned for the table as it was, 3 index pages in 0.07 ms. docs/bench-journal/w5-sustained-load.md.)
 *
 * <p>Each test runs the statement on a pool of one connection, so every execution is on the same
 * session, and reads that session's server-prepared statements ({@code pg_prepared_statements}).
 */
class CustomPlanTest extends PgJobsTestBase {
  private HikariDataSource oneSession;
  /** Enqueues on the same session, so that its scans are counted before the marker's (see below). */
  private JobClient sessionClient;

  private List<ClaimedJob> claimed;

  @BeforeEach
  void fiveRunningJobs() {
    oneSession = db.newDataSource(1);
    sessionClient = JobClient.builder(oneSession).knownTypes(NUMBERED).build();
    sessionClient.enqueueAll(
        NUMBERED, Collections.nCopies(5, new Numbered(1)), EnqueueOptions.DEFAULTS);
    try {
      claimed = execution().claim(JobType.DEFAULT_QUEUE, 5, "w");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    assertThat(claimed).hasSize(5);
  }

  @AfterEach
  void closeSession() {
    oneSession.close();
  }

  private ExecutionStore execution() {
    return new ExecutionStore(oneSession, "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
  }

  @Test
  void clearingPrefetchMarksIsPlannedForTheTableAsItIsAtEveryExecution() throws Exception {
    ExecutionStore store = execution();
    assertPlannedAtEveryExecution(
        "SET prefetched = false",
        () -> assertThat(store.clearPrefetched(claimed)).hasSize(5));
  }

  @Test
  void aHandlersHeartbeatIsPlannedForTheTableAsItIsAtEveryExecution() throws Exception {
    ExecutionStore store = execution();
    ClaimedJob job = claimed.get(0);
    assertPlannedAtEveryExecution(
        "SET heartbeat_at = now()\n",
        () -> assertThat(store.heartbeat(job.id(), job.claimToken())).isTrue());
  }

  @Test
  void theWorkersHeartbeatIsPlannedForTheTableAsItIsAtEveryExecution() throws Exception {
    WorkerStore store =
        new WorkerStore(oneSession, "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
    WorkerStore.Registration worker = new WorkerStore.Registration(
        "w", "host", 1, Map.of(JobType.DEFAULT_QUEUE, 10), List.of(NUMBERED.name()));
    Map<UUID, Long> held =
        claimed.stream().collect(Collectors.toMap(ClaimedJob::id, ClaimedJob::claimToken));
    assertPlannedAtEveryExecution("WITH worker AS", () -> {
      try (Connection c = oneSession.getConnection()) {
        assertThat(store
                .heartbeat(c, worker, held, List.of(), 0, Duration.ofSeconds(1))
                .cancelRequested())
            .hasSize(5);
      }
    });
  }

  @Test
  void anApiLookupOfOneJobIsPlannedForTheTableAsItIsAtEveryExecution() throws Exception {
    UUID id = claimed.get(0).id();
    assertPlannedAtEveryExecution(
        "WHERE id = $1\nUNION ALL", () -> assertThat(sessionClient.get(id)).isPresent());
  }

  @Test
  void anApiCancellationOfOneJobIsPlannedForTheTableAsItIsAtEveryExecution() throws Exception {
    UUID id = claimed.get(0).id();
    // The first asks the running job's worker to stop; the others find the flag already set. Each
    // runs the cancel statement and then reads the job.
    assertPlannedAtEveryExecution(
        "SET cancel_requested = true",
        () -> assertThat(sessionClient.cancel(id).state()).isEqualTo(io.pgjobs.JobState.RUNNING));
  }

  private interface Call {
    void run() throws Exception;
  }

  /**
   * Runs {@code call} ten times on the session while the table holds five jobs, then after 30,000 more
   * were enqueued; asserts that none of its statements was ever server-prepared on the session (so each
   * execution was planned for the table as it was, with the ids bound), while the claim, which ran six
   * times on it, was (so the session does server-prepare what is not a {@link CustomPlan}).
   */
  private void assertPlannedAtEveryExecution(String statementText, Call call) throws Exception {
    for (int i = 0; i < 10; i++) {
      call.run();
    }
    sessionClient.enqueueAll(
        NUMBERED, Collections.nCopies(30_000, new Numbered(2)), EnqueueOptions.DEFAULTS);
    call.run();
    for (int i = 0; i < 5; i++) {
      assertThat(execution().claim(JobType.DEFAULT_QUEUE, 1, "w")).hasSize(1);
    }
    try (Connection c = oneSession.getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")) {
      List<String> prepared = new java.util.ArrayList<>();
      while (rs.next()) {
        prepared.add(rs.getString(1));
      }
      assertThat(prepared)
          .as("statements server-prepared on the session")
          .anySatisfy(sql -> assertThat(sql).contains("claim_token = (SELECT nextval("))
          .noneSatisfy(sql -> assertThat(sql).contains(statementText));
    }
  }
}
