package io.pgjobs;

/** Base class of the exceptions pgjobs throws; a database failure arrives as its cause. */
public class PgJobsException extends RuntimeException {
  /** Creates an exception with a message. */
  public PgJobsException(String message) {
    super(message);
  }

  /** Creates an exception with a message and the underlying cause. */
  public PgJobsException(String message, Throwable cause) {
    super(message, cause);
  }
}
