package io.pgjobs;

import io.pgjobs.events.JobEvent;
import io.pgjobs.events.JobEventListener;
import io.pgjobs.testkit.Await;
import io.pgjobs.testkit.TestDatabase;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * Base of core's database tests: one throw-away database per test class, a copy of the migrated template; job tables
 * emptied before each test; workers started by a test are closed after it.
 */
public abstract class PgJobsTestBase {
  protected static TestDatabase db;
  protected static JobClient client;
  private final List<JobWorker> workers = new ArrayList<>();

  /** A payload with one number, for tests. */
  public record Numbered(int n) {}

  /** The type most tests use. */
  public static final JobType<Numbered> NUMBERED = JobType.of("numbered", Numbered.class);

  @BeforeAll
  static void createDatabase() {
    db = MigratedDatabase.create();
    client = JobClient.builder(db.dataSource()).knownTypes(NUMBERED).build();
  }

  @AfterAll
  static void dropDatabase() {
    if (db != null) {
      db.close();
    }
  }

  @BeforeEach
  void emptyTables() {
    db.execute(
        "TRUNCATE pgjobs.jobs, pgjobs.finished_jobs, pgjobs.job_keys, pgjobs.workers, pgjobs.leases, pgjobs.unique_keys");
  }

  @AfterEach
  void closeWorkers() {
    workers.forEach(JobWorker::close);
    workers.clear();
  }

  /** A worker builder on the shared pool with short timings for tests. */
  protected JobWorker.Builder worker() {
    return JobWorker.builder(db.dataSource()).shutdownGrace(Duration.ofSeconds(2));
  }

  /** Builds, starts and remembers (for closing) a worker. */
  protected JobWorker start(JobWorker.Builder builder) {
    JobWorker worker = builder.build();
    workers.add(worker);
    return worker.start();
  }

  /** Waits (at most {@code timeout}) until the job is in {@code state}, and returns it ({@link Await}). */
  protected static Job awaitState(UUID id, JobState state, Duration timeout) {
    return Await.awaitState(client::get, id, Job::state, state, timeout);
  }

  /** Same with 20 s. */
  protected static Job awaitState(UUID id, JobState state) {
    return awaitState(id, state, Duration.ofSeconds(20));
  }

  /**
   * A started listener on the job events channel that adds every event to {@code events}; close it
   * (try-with-resources) when done.
   */
  protected static JobEventListener listeningToJobEvents(List<JobEvent> events) {
    JobEventListener listener = new JobEventListener(db.dataSource(), client.eventsChannel());
    listener.subscribe(batch -> events.addAll(batch.events()));
    listener.start();
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(listener::isListening);
    return listener;
  }

  /** The events of job {@code id} among {@code events}, in the order they came. */
  protected static List<JobEvent> jobEventsOf(List<JobEvent> events, UUID id) {
    return events.stream().filter(e -> e.jobId().equals(id)).toList();
  }

  /** The first column of the first row of {@code sql}, as text. */
  protected static String queryText(String sql) {
    try (java.sql.Connection c = db.dataSource().getConnection();
        java.sql.Statement st = c.createStatement();
        java.sql.ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  /** Counts rows of a table or any query returning one number. */
  protected static long count(String sqlOrTable) {
    String sql = sqlOrTable.trim().toLowerCase().startsWith("select")
        ? sqlOrTable
        : "SELECT count(*) FROM " + sqlOrTable;
    return db.queryLong(sql);
  }
}
