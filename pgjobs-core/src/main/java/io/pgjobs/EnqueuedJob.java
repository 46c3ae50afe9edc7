package io.pgjobs;

/**
 * The result of an enqueue.
 *
 * @param job the job as stored
 * @param replayed true if the idempotency key already named a job: {@code job} is that original job and
 *     nothing new was stored
 * @param duplicate true if the job is unique ({@link UniqueOptions}) and a job with the same unique key
 *     already existed in one of the rule's states (by default: not finished): {@code job} is that job (with
 *     {@code run_at}/payload replaced if asked and it was waiting), and nothing new was stored
 */
public record EnqueuedJob(Job job, boolean replayed, boolean duplicate) {
  /** A result that is no unique-job duplicate. */
  public EnqueuedJob(Job job, boolean replayed) {
    this(job, replayed, false);
  }

  /** True if this enqueue stored a new job (neither replayed nor a duplicate). */
  public boolean created() {
    return !replayed && !duplicate;
  }
}
