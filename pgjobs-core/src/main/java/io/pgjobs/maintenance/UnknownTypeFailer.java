package io.pgjobs.maintenance;

import io.pgjobs.store.WorkerStore;
import java.sql.SQLException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fails due jobs that no live worker will run: their queue is served, but none of the live workers serving
 * it has a handler for their type, and they were created longer than the unknown-type grace ago (see
 * {@code WorkerSql.FAIL_UNKNOWN_TYPES}). Workers claim only the types they run, so a job of a type nobody
 * runs (a typo, a handler removed, a service not deployed) would otherwise wait without a word; within the
 * grace it waits for a worker that runs it. Runs on the leader every quarter of the grace, between 1 s and
 * 1 min.
 */
final class UnknownTypeFailer implements MaintenanceTask {
  private static final Logger log = LoggerFactory.getLogger(UnknownTypeFailer.class);
  private static final int BATCH = 1_000;

  private final WorkerStore store;
  private final Duration grace;
  private final String leader;
  private final Duration interval;

  UnknownTypeFailer(WorkerStore store, Duration grace, String leader) {
    this.store = store;
    this.grace = grace;
    this.leader = leader;
    Duration quarter = grace.dividedBy(4);
    this.interval = quarter.compareTo(Duration.ofSeconds(1)) < 0
        ? Duration.ofSeconds(1)
        : quarter.compareTo(Duration.ofMinutes(1)) > 0 ? Duration.ofMinutes(1) : quarter;
  }

  @Override
  public String name() {
    return "unknown-types";
  }

  @Override
  public Duration interval() {
    return interval;
  }

  @Override
  public void run() throws SQLException {
    long failed;
    do {
      failed = store.failUnknownTypes(grace, leader, BATCH);
      if (failed > 0) {
        log.error(
            "failed {} due jobs whose type no live worker serving their queue has a handler for, after a grace"
                + " of {} (error kind unknown_type: see the dead letters)",
            failed,
            grace);
      }
    } while (failed >= BATCH);
  }
}
