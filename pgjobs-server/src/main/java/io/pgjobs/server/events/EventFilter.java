package io.pgjobs.server.events;

import io.pgjobs.events.JobEvent;
import java.util.Set;
import java.util.UUID;

/**
 * Which job events a subscriber wants; an empty set or null id matches any.
 *
 * @param jobId one job, or null
 * @param types job types
 * @param queues queues
 */
public record EventFilter(UUID jobId, Set<String> types, Set<String> queues) {
  /** Copies the sets. */
  public EventFilter {
    types = types == null ? Set.of() : Set.copyOf(types);
    queues = queues == null ? Set.of() : Set.copyOf(queues);
  }

  /** True if {@code event} passes. */
  public boolean matches(JobEvent event) {
    return (jobId == null || jobId.equals(event.jobId()))
        && (types.isEmpty() || types.contains(event.type()))
        && (queues.isEmpty() || queues.contains(event.queue()));
  }
}
