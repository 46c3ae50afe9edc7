package io.pgjobs.worker;

import io.pgjobs.store.LimitsStore;
import java.sql.SQLException;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which queues have limits, as a worker's pollers choose their claim by: the limited claim
 * ({@code claim_limited}) for those, the unlimited claim statements for the rest. Read from the database at
 * most every {@link #MAX_AGE_NANOS}, by whichever poller asks first after that.
 *
 * <p>Correctness does not depend on how fresh this is: the unlimited claim skips a limited queue in the
 * statement itself (its paused check), and the limited claim reads the limits afresh in its own
 * transaction. A stale view only delays the switch from one claim to the other by up to that age.
 */
final class LimitedQueues {
  private static final Logger log = LoggerFactory.getLogger(LimitedQueues.class);
  /** How long the view is used before it is read again: 500 ms. */
  static final long MAX_AGE_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

  private final LimitsStore store;
  private volatile Set<String> limited = Set.of();
  private volatile long readAt;
  private volatile boolean read;

  LimitedQueues(LimitsStore store) {
    this.store = store;
  }

  /** True if {@code queue} had limits when last read. A failed read keeps the last view. */
  boolean isLimited(String queue) {
    long now = System.nanoTime();
    if (!read || now - readAt > MAX_AGE_NANOS) {
      refresh(now);
    }
    return limited.contains(queue);
  }

  private synchronized void refresh(long now) {
    if (read && now - readAt <= MAX_AGE_NANOS) {
      return; // another poller just read it
    }
    try {
      limited = Set.copyOf(store.all().keySet());
    } catch (SQLException | RuntimeException e) {
      log.debug(
          "reading which queues have limits failed ({}); using the last view", e.getMessage());
    }
    readAt = now;
    read = true;
  }
}
