package io.pgjobs;

/** What {@link JobClient#retry} did. */
public enum RetryResult {
  /** The job was failed or cancelled and is queued again. */
  RETRIED,
  /** No job has that id (it may have been pruned). */
  NOT_FOUND,
  /** The job exists but is not failed or cancelled, so there is nothing to retry. */
  NOT_RETRYABLE
}
