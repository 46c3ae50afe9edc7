package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.Job;
import io.pgjobs.JobError;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.testkit.JobRows;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.function.ToLongFunction;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Base of the lifecycle (fault-tolerance) tests: the per-class database of {@link PgJobsTestBase}, the
 * {@code effects} table emptied before each test, worker JVMs killed after it, and row-level helpers.
 */
abstract class LifecycleTestBase extends PgJobsTestBase {
  @RegisterExtension
  final WorkerProcesses processes = new WorkerProcesses();

  @BeforeEach
  void emptyEffects() {
    db.execute(Lifecycle.EFFECTS_DDL, Lifecycle.STARTS_DDL, "TRUNCATE effects, starts");
  }

  /** The job's state as stored: from {@code pgjobs.jobs} or {@code pgjobs.finished_jobs}; null if in neither. */
  static String storedState(UUID id) {
    return queryString(
        "SELECT state FROM pgjobs.jobs WHERE id = ? UNION ALL SELECT state FROM pgjobs.finished_jobs WHERE id = ?",
        id,
        id);
  }

  /** Which table holds the job: {@code jobs}, {@code finished_jobs}, or null. */
  static String tableOf(UUID id) {
    return queryString(
        "SELECT 'jobs' FROM pgjobs.jobs WHERE id = ? UNION ALL SELECT 'finished_jobs' FROM pgjobs.finished_jobs WHERE id = ?",
        id,
        id);
  }

  /** {@code cancel_requested} of a job in {@code pgjobs.jobs}; null if it is not there. */
  static Boolean cancelRequested(UUID id) {
    String value = queryString("SELECT cancel_requested::text FROM pgjobs.jobs WHERE id = ?", id);
    return value == null ? null : Boolean.valueOf(value);
  }

  /** The kinds of the job's error entries, oldest first. */
  static List<String> errorKinds(UUID id) {
    return errors(id).stream().map(JobError::kind).toList();
  }

  static List<JobError> errors(UUID id) {
    return client.get(id).map(Job::errors).orElseThrow(() -> new AssertionError("no job " + id));
  }

  static Job job(UUID id) {
    return client.get(id).orElseThrow(() -> new AssertionError("no job " + id));
  }

  /**
   * Inserts a job as a worker that died would have left it: running, locked by {@code lockedBy}, its
   * last heartbeat a minute ago, on attempt 1 of 3.
   */
  static UUID plantStaleRunningJob(String lockedBy) {
    Instant aMinuteAgo = Instant.now().minus(Duration.ofMinutes(1));
    return JobRows.in(db)
        .payload("{\"n\":1}")
        .state("running")
        .lockedBy(lockedBy)
        .column("attempted_at", aMinuteAgo)
        .heartbeatAt(aMinuteAgo)
        .claimToken(db.queryLong("SELECT nextval('pgjobs.claim_tokens')"))
        .insert();
  }

  /**
   * The end state of a run of {@code jobs} {@link Lifecycle#WORK} jobs through crashes or outages: all
   * succeeded, none left in {@code pgjobs.jobs}, each ran its effect at least once and at most once per
   * attempt, and no attempt ran twice. {@code count} runs a query returning one number.
   */
  static void assertCompleteRun(ToLongFunction<String> count, long jobs) {
    assertThat(count.applyAsLong("SELECT count(*) FROM pgjobs.finished_jobs"))
        .as("finished jobs (each exactly once: id is the primary key)")
        .isEqualTo(jobs);
    assertThat(count.applyAsLong("SELECT count(*) FROM pgjobs.jobs"))
        .as("nothing stuck running or waiting")
        .isZero();
    assertThat(count.applyAsLong(
            "SELECT count(*) FROM pgjobs.finished_jobs WHERE state <> 'succeeded'"))
        .as("jobs not succeeded")
        .isZero();
    assertThat(count.applyAsLong("""
        SELECT count(*) FROM pgjobs.finished_jobs f
         WHERE NOT EXISTS (SELECT 1 FROM effects e WHERE e.job_id = f.id)"""))
        .as("jobs whose handler never got to its effect")
        .isZero();
    assertThat(count.applyAsLong("""
        SELECT count(*) FROM pgjobs.finished_jobs f
          JOIN (SELECT job_id, count(*) AS runs FROM effects GROUP BY job_id) e ON e.job_id = f.id
         WHERE e.runs > f.attempts"""))
        .as("jobs with more effects than attempts")
        .isZero();
    assertThat(count.applyAsLong("""
        SELECT count(*) FROM (SELECT job_id, attempt FROM effects GROUP BY job_id, attempt HAVING count(*) > 1) d"""))
        .as("attempts that ran their effect twice")
        .isZero();
    assertThat(count.applyAsLong("""
        SELECT count(*) FROM effects e WHERE NOT EXISTS (SELECT 1 FROM pgjobs.finished_jobs f WHERE f.id = e.job_id)""")).as("effects of unknown jobs").isZero();
  }

  static String queryString(String sql, Object... params) {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }
}
