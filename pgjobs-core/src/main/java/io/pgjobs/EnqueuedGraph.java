package io.pgjobs;

import java.util.Map;
import java.util.UUID;

/**
 * What {@link JobClient#enqueueGraph} did.
 *
 * @param ids each job's id by its name in the graph, in the order the jobs were added
 * @param replayed true when the graph's idempotency key had already enqueued it: nothing new was stored
 *     and {@code ids} are the jobs that first enqueue made
 */
public record EnqueuedGraph(Map<String, UUID> ids, boolean replayed) {
  /** The id of the job named {@code name} in the graph. */
  public UUID id(String name) {
    UUID id = ids.get(name);
    if (id == null) {
      throw new IllegalArgumentException("the graph has no job named '" + name + "'");
    }
    return id;
  }
}
