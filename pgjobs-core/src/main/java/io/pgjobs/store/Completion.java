package io.pgjobs.store;

import java.util.UUID;

/** A successful attempt waiting to be written: job id, the claim that ran it, output JSON or null. */
public record Completion(UUID id, long claimToken, String outputJson) {}
