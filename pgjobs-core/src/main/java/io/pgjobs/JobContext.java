package io.pgjobs;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.UUID;
import javax.sql.DataSource;

/** What a running handler knows about its job and can do to it. One instance per attempt. */
public interface JobContext {
  /** The job's id. */
  UUID jobId();

  /** The job type's name. */
  String jobType();

  /** The queue it was claimed from. */
  String queue();

  /** The number of this attempt, starting at 1. */
  int attempt();

  /** The most attempts the job gets. */
  int maxAttempts();

  /**
   * How often this job was snoozed before this run ({@link SnoozeJobException}): 0 on its first run. A
   * snooze gives its attempt back, so {@link #attempt()} stays the same across snoozes; this is how a
   * handler that snoozes "once, then goes on" knows it already did.
   */
  default int snoozes() {
    return 0;
  }

  /** True if an earlier attempt ran ({@code attempt() > 1}). */
  default boolean isRetry() {
    return attempt() > 1;
  }

  /** True if a failure now would be final ({@code attempt() >= maxAttempts()}). */
  default boolean isLastAttempt() {
    return attempt() >= maxAttempts();
  }

  /** The context string given at enqueue time, or null. */
  String context();

  /** The id of the worker running this attempt. */
  String workerId();

  /**
   * Records progress (0 to 100) and a message on the job row. Writes are throttled; the last value
   * before the job ends is always written.
   *
   * @throws IllegalArgumentException if {@code percent} is outside 0..100
   */
  void progress(int percent, String message);

  /** Tells the runtime this job is alive during a long step. The runtime also does so by itself. */
  void heartbeat();

  /**
   * True once the job has been asked to stop: it was cancelled, or the worker is shutting down and the
   * grace period has run out. A long handler should check it between steps and return (or throw).
   */
  boolean isCancelled();

  /**
   * HTTP with the worker's shared client, its connect and request timeouts, a {@code User-Agent}, and the
   * job's id and attempt as headers ({@link JobHttp}).
   */
  JobHttp http();

  /**
   * Enqueues a child job at once (in a transaction of its own), recording this job as its parent. A
   * handler that records its success with {@link #complete(Connection, Object)} should enqueue children
   * with {@link #enqueue(Connection, JobType, Object, EnqueueOptions)} on the same transaction instead, so
   * that a rolled-back attempt leaves no child.
   */
  default <C> EnqueuedJob enqueue(JobType<C> type, C payload) {
    return enqueue(type, payload, EnqueueOptions.DEFAULTS);
  }

  /** {@link #enqueue(JobType, Object)} with options (the parent is set whatever they say). */
  <C> EnqueuedJob enqueue(JobType<C> type, C payload, EnqueueOptions options);

  /**
   * Enqueues a child job in {@code transaction}, recording this job as its parent: the child exists if
   * and only if the transaction commits — with {@link #complete(Connection, Object)} on the same
   * transaction, an attempt that rolls back leaves neither its success nor its children.
   */
  <C> EnqueuedJob enqueue(
      Connection transaction, JobType<C> type, C payload, EnqueueOptions options);

  /** The data source the worker uses; handlers may take connections from it. */
  DataSource dataSource();

  /**
   * Records this job's success <em>in the caller's transaction</em>: the job is marked succeeded if and
   * only if {@code transaction} commits. Use it to make a handler's database writes and the job's
   * completion one atomic unit (exactly-once for database effects):
   *
   * <pre>{@code
   * try (Connection c = ctx.dataSource().getConnection()) {
   *   c.setAutoCommit(false);
   *   insertInvoice(c, payload);
   *   ctx.complete(c, null);
   *   c.commit();
   * }
   * }</pre>
   *
   * If the transaction rolls back and the handler still returns normally, the attempt counts as failed.
   *
   * @param transaction an open connection with auto-commit off
   * @param output the job's output, or null
   * @throws SQLException if the statement fails, or {@link IllegalStateException} if the job is no
   *     longer running on this worker (it was rescued or cancelled meanwhile)
   */
  void complete(Connection transaction, Object output) throws SQLException;
}
