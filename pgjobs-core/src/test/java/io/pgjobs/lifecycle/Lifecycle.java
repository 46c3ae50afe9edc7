package io.pgjobs.lifecycle;

import io.pgjobs.JobHandler;
import io.pgjobs.JobType;
import io.pgjobs.RetryPolicy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;

/**
 * What the lifecycle tests and their worker processes ({@link LifecycleWorkerMain}) share: the job type,
 * its handler, and the side-effect table the handler writes to.
 */
public final class Lifecycle {
  private Lifecycle() {}

  /**
   * The payload: the handler blocks (interruptibly) for {@code blockMillis} on attempts up to
   * {@code blockAttempts}, then records its effect and returns.
   */
  public record Work(long blockMillis, int blockAttempts) {
    /** Returns at once. */
    public static final Work QUICK = new Work(0, 0);

    /** Blocks for {@code duration} on the first attempt only. */
    public static Work blockingFirstAttempt(Duration duration) {
      return new Work(duration.toMillis(), 1);
    }
  }

  /** Many attempts, a short fixed retry delay: so repeated kills and outages cannot exhaust a job. */
  public static final JobType<Work> WORK = JobType.of("lifecycle_work", Work.class)
      .withMaxAttempts(25)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(200)));

  /** One row per handler run that got as far as its side effect. */
  public static final String EFFECTS_DDL =
      "CREATE TABLE IF NOT EXISTS effects (job_id uuid NOT NULL, attempt int NOT NULL, worker text NOT NULL,"
          + " at timestamptz NOT NULL DEFAULT clock_timestamp())";

  /**
   * One row per handler run that started: a worker claims jobs a little before it starts them, so a
   * test that needs handlers running (not just jobs claimed) waits for these rows.
   */
  public static final String STARTS_DDL =
      "CREATE TABLE IF NOT EXISTS starts (job_id uuid NOT NULL, attempt int NOT NULL, worker text NOT NULL)";

  /**
   * The handler of {@link #WORK}: blocks as the payload says (unless {@code honourBlocking} is false:
   * the "marker" of a worker that finishes everything at once), then inserts its effect row.
   */
  public static JobHandler<Work> handler(String worker, boolean honourBlocking) {
    return (ctx, work) -> {
      try (Connection c = ctx.dataSource().getConnection();
          PreparedStatement ps =
              c.prepareStatement("INSERT INTO starts (job_id, attempt, worker) VALUES (?, ?, ?)")) {
        ps.setObject(1, ctx.jobId());
        ps.setInt(2, ctx.attempt());
        ps.setString(3, worker);
        ps.executeUpdate();
      }
      if (honourBlocking && work.blockMillis() > 0 && ctx.attempt() <= work.blockAttempts()) {
        Thread.sleep(work.blockMillis());
      }
      try (Connection c = ctx.dataSource().getConnection();
          PreparedStatement ps = c.prepareStatement(
              "INSERT INTO effects (job_id, attempt, worker) VALUES (?, ?, ?)")) {
        ps.setObject(1, ctx.jobId());
        ps.setInt(2, ctx.attempt());
        ps.setString(3, worker);
        ps.executeUpdate();
      }
      return null;
    };
  }
}
