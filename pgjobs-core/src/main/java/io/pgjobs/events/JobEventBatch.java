package io.pgjobs.events;

import java.util.List;

/**
 * The events of one statement.
 *
 * @param events the first of them: at most 50, and only as many as fit in a notification (PostgreSQL's
 *     limit is 8,000 bytes; with 255-character type and queue names that is eleven); at least one
 * @param total how many jobs the statement changed; more than {@code events.size()} means some were
 *     left out (the notification says {@code "truncated": true}) and a listener that must see every
 *     job, or follows one that is not listed, should re-read
 */
public record JobEventBatch(List<JobEvent> events, long total) {
  /** True when jobs were left out of {@link #events()}. */
  public boolean truncated() {
    return total > events.size();
  }
}
