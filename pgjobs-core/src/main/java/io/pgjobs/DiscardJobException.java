package io.pgjobs;

/**
 * Thrown by a handler to fail the job at once, with no further attempts (for example a webhook that
 * answered 4xx). The job ends {@code failed} and the reason is recorded as its last error.
 *
 * <pre>{@code throw new DiscardJobException("recipient does not exist");}</pre>
 */
public class DiscardJobException extends RuntimeException {
  /** @param reason why the job can never succeed */
  public DiscardJobException(String reason) {
    super(reason);
  }

  /** @param reason why the job can never succeed; @param cause the error behind it */
  public DiscardJobException(String reason, Throwable cause) {
    super(reason, cause);
  }
}
