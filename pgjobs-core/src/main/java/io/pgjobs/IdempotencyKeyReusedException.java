package io.pgjobs;

import java.util.UUID;

/**
 * An enqueue gave an idempotency key that an earlier, different request already used (another type,
 * payload or options: see the fingerprint in docs/API.md). Nothing was stored. An identical request
 * under the key is not an error: it returns the original job.
 */
public class IdempotencyKeyReusedException extends InvalidJobException {
  private final String key;
  private final UUID jobId;

  /** @param jobId the job the key names */
  public IdempotencyKeyReusedException(String key, UUID jobId) {
    super(
        "idempotencyKey",
        "'" + key + "' was already used for job " + jobId + " with a different type, payload"
            + " or options; use a new key for a new job, or repeat the original request exactly");
    this.key = key;
    this.jobId = jobId;
  }

  /** The key that was reused. */
  public String key() {
    return key;
  }

  /** The job the key already names. */
  public UUID jobId() {
    return jobId;
  }
}
