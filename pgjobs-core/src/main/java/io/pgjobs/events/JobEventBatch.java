package io.pgjobs.events;

import java.util.List;

/**
 * The events of one statement.
 *
 * @param events up to 50 of them
 * @param total how many jobs the statement changed; more than {@code events.size()} means some were
 *     left out and a listener that must see every job should re-read
 */
public record JobEventBatch(List<JobEvent> events, long total) {
  /** True when jobs were left out of {@link #events()}. */
  public boolean truncated() {
    return total > events.size();
  }
}
