package io.pgjobs.maintenance;

import io.pgjobs.replication.DatabaseRole;
import io.pgjobs.store.WorkerStore;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds the {@value #LEASE} lease while it can. A leader renews every third of the lease's time to
 * live; when it dies or loses the database, its lease expires and the next node to ask takes it, so a
 * new leader is in place within one time to live.
 */
final class LeaderElector {
  private static final Logger log = LoggerFactory.getLogger(LeaderElector.class);
  static final String LEASE = "maintenance";

  private final WorkerStore store;
  private final String holder;
  private final Duration ttl;
  private volatile boolean leader;
  /** True once a read-only refusal of the lease was logged, until a renewal succeeds. */
  private volatile boolean readOnlyReported;

  LeaderElector(WorkerStore store, String holder, Duration ttl) {
    this.store = store;
    this.holder = holder;
    this.ttl = ttl;
  }

  /** How often to call {@link #renew()}. */
  Duration renewInterval() {
    return ttl.dividedBy(3);
  }

  boolean isLeader() {
    return leader;
  }

  /** Takes or renews the lease; on a database error this node stops acting as leader. */
  boolean renew() {
    boolean was = leader;
    try {
      leader = store.acquireLease(LEASE, holder, ttl);
      readOnlyReported = false;
    } catch (SQLException | RuntimeException e) {
      leader = false;
      if (!DatabaseRole.isReadOnlyError(e)) {
        log.warn(
            "could not renew the maintenance lease ({}); not leading until it can", e.getMessage());
      } else if (!readOnlyReported) {
        // A standby refuses the lease at every renewal until it is promoted: say so once.
        readOnlyReported = true;
        log.warn(
            "could not take the maintenance lease: the database is read-only ({}); not leading until it is"
                + " promoted or the database URL reaches the primary",
            e.getMessage());
      } else {
        log.debug("the maintenance lease is still refused: the database is read-only");
      }
    }
    if (leader != was) {
      log.info(
          leader ? "{} is now the maintenance leader" : "{} is no longer the maintenance leader",
          holder);
    }
    return leader;
  }

  /** Gives the lease up so another node can take it at once. */
  void resign() {
    if (leader) {
      leader = false;
      try {
        store.releaseLease(LEASE, holder);
      } catch (SQLException | RuntimeException e) {
        log.warn(
            "could not release the maintenance lease ({}); it expires by itself", e.getMessage());
      }
    }
  }
}
