package io.pgjobs;

import io.pgjobs.store.StatementDeadline;
import java.time.Duration;
import java.util.concurrent.Callable;

/**
 * A deadline for the SQL statements pgjobs runs on the calling thread: while {@link #call} runs its work,
 * every statement a {@link JobClient} prepares on this thread gets a JDBC query timeout of the whole seconds
 * left (at least 1), so PostgreSQL cancels it no later than the deadline. pgJDBC sends the cancel on a
 * connection of its own and changes no session setting. Deadlines nest: the earlier one wins.
 *
 * <p>The HTTP API sets one per request, equal to its request timeout; an application that answers its own
 * requests through a {@code JobClient} can do the same.
 */
public final class SqlDeadline {
  private SqlDeadline() {}

  /**
   * Runs {@code work} with pgjobs' statements cancelled once {@code timeout} has passed from now, and
   * returns its result.
   *
   * @throws Exception what {@code work} throws (a statement cancelled at the deadline fails with SQLState
   *     57014, wrapped in a {@link PgJobsException} by the client)
   */
  public static <T> T call(Duration timeout, Callable<T> work) throws Exception {
    return StatementDeadline.call(timeout, work);
  }
}
