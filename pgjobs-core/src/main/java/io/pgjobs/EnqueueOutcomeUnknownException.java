package io.pgjobs;

/**
 * An enqueue that commits by itself ({@link JobClient#enqueue(JobType, Object, EnqueueOptions)},
 * {@link JobClient#enqueueAll(JobType, java.util.Collection, EnqueueOptions)}) lost its connection while
 * its commit was under way: the COMMIT (or the single statement that commits on its own) had been sent,
 * and the answer never came. The database may have stored the jobs or not; nobody can tell from here
 * (what JDBC drivers and payment APIs call an indeterminate result). A bulk enqueue stored all of its
 * jobs or none, never some.
 *
 * <p>Any other failure of an enqueue means that nothing was stored. This one means: ask again with the
 * same idempotency keys. Jobs with keys ({@link EnqueueOptions.Builder#idempotencyKey}, or
 * {@link JobType#withIdempotencyKeyFrom} for single and bulk enqueues) are then stored exactly once: a
 * job the first call stored comes back as a replay, a job it did not store is stored now. Without keys
 * a retry may store the jobs twice (docs/guarantees.md, "When an enqueue fails").
 *
 * <p>The cause is the driver's error (SQLState class 08, or 57P01 to 57P03 when the server ended the
 * session).
 */
public class EnqueueOutcomeUnknownException extends PgJobsException {
  /** Creates the exception for the lost answer {@code cause}. */
  public EnqueueOutcomeUnknownException(String message, Throwable cause) {
    super(message, cause);
  }
}
