package io.pgjobs.worker;

import io.pgjobs.store.LimitsStore;
import java.sql.SQLException;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which queues have limits, as a worker's pollers choose their claim by: the limited claim
 * ({@code claim_limited}) for those, the unlimited claim statements for the rest. Read from the database at
 * every {@link #REFRESH_INTERVAL} by the worker's timer thread, never on a claim's path (a read there cost
 * W4's pickups a round trip each time it fell due).
 *
 * <p>Correctness does not depend on how fresh this is: the unlimited claim skips a limited queue in the
 * statement itself (its paused check), and the limited claim reads the limits afresh in its own
 * transaction. A stale view only delays the switch from one claim to the other by up to that age.
 */
final class LimitedQueues {
  private static final Logger log = LoggerFactory.getLogger(LimitedQueues.class);
  /** How often the view is read again: 500 ms. */
  static final java.time.Duration REFRESH_INTERVAL = java.time.Duration.ofMillis(500);

  private final LimitsStore store;
  private volatile Set<String> limited = Set.of();
  private volatile Set<String> resuming = Set.of();

  LimitedQueues(LimitsStore store) {
    this.store = store;
  }

  /** True if {@code queue} had limits when last read. */
  boolean isLimited(String queue) {
    return limited.contains(queue);
  }

  /**
   * True if {@code queue}'s limited claim, when last read, could resume at the poller's claim cursor: a
   * queue without partitions, or a partitioned queue whose partitions may run more than one job at a time
   * (claim_limited's fast path). The claims of a queue whose partitions run one job at a time go by its
   * partitions' heads whatever the cursor says; the poller then passes none, so that a claim that found
   * nothing is not made a second time as a full pass.
   */
  boolean resumesAtCursor(String queue) {
    return resuming.contains(queue);
  }

  /** Reads the view again; a failed read keeps the last one. */
  void refresh() {
    try {
      java.util.Map<String, io.pgjobs.QueueLimits> all = store.all();
      resuming = all.entrySet().stream()
          .filter(e -> e.getValue().partitionBy() == null
              || !Integer.valueOf(1).equals(e.getValue().partitionConcurrency()))
          .map(java.util.Map.Entry::getKey)
          .collect(java.util.stream.Collectors.toUnmodifiableSet());
      limited = Set.copyOf(all.keySet());
    } catch (SQLException | RuntimeException e) {
      log.debug(
          "reading which queues have limits failed ({}); using the last view", e.getMessage());
    }
  }
}
