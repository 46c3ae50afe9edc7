package io.pgjobs.store;

import java.util.UUID;

/** A successful attempt waiting to be written: job id, the claim that ran it, output JSON or null. */
public record Completion(UUID id, long claimToken, String outputJson) {
  /** The success of the claim {@code job}. */
  public static Completion of(ClaimedJob job, String outputJson) {
    return new Completion(job.id(), job.claimToken(), outputJson);
  }
}
