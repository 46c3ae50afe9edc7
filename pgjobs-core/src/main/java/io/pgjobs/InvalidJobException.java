package io.pgjobs;

/**
 * A job or an option was rejected before anything was stored: the message says which field was wrong
 * and what is allowed.
 */
public class InvalidJobException extends PgJobsException {
  private final String field;

  /**
   * @param field the offending field ({@code maxAttempts}, {@code payload}, ...)
   * @param message what was wrong and what is allowed
   */
  public InvalidJobException(String field, String message) {
    super(field + ": " + message);
    this.field = field;
  }

  /** Same, keeping the cause (for example Jackson's serialization error). */
  public InvalidJobException(String field, String message, Throwable cause) {
    super(field + ": " + message, cause);
    this.field = field;
  }

  /** The name of the field that was rejected. */
  public String field() {
    return field;
  }
}
