package io.pgjobs.store;

import java.util.UUID;

/** A successful attempt waiting to be written: job id, the attempt that succeeded, output JSON or null. */
public record Completion(UUID id, int attempt, String outputJson) {}
