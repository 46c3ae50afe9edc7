package io.pgjobs;

/**
 * User code that runs one job. Return normally for success (the returned value, if not null, is stored
 * as the job's JSON output); throw to fail the attempt (the retry policy decides what happens next);
 * throw {@link DiscardJobException} to fail with no retry, or {@link SnoozeJobException} to run again
 * later without spending an attempt.
 *
 * <p>Handlers run on virtual threads and may block. A job can run more than once (a worker may die
 * after the work but before the success is recorded): make external effects idempotent, or do database
 * effects and {@link JobContext#complete(java.sql.Connection, Object) complete the job} in one transaction.
 *
 * @param <P> the payload type
 */
@FunctionalInterface
public interface JobHandler<P> {
  /**
   * Runs the job.
   *
   * @param context the running job: attempt, progress, cancellation, database access
   * @param payload the payload, read from JSON into the type's payload class
   * @return the job's output, or {@code null} for none
   * @throws Exception to fail this attempt
   */
  Object run(JobContext context, P payload) throws Exception;
}
