package io.pgjobs.spring;

import io.pgjobs.replication.DatabaseRole;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.time.Duration;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * pgjobs' health (actuator's {@code /actuator/health/pgjobs}):
 *
 * <ul>
 *   <li>DOWN when the database does not answer (no connection, or it is not valid within
 *       {@value #VALIDATION_TIMEOUT_SECONDS} s);
 *   <li>DOWN when the database takes no writes (a standby in recovery, or read-only sessions):
 *       {@code database} is {@code read-only} and {@code reason} says why and what ends it;
 *   <li>DOWN when the worker is enabled but not running, or fenced (it could not heartbeat for nearly
 *       {@code pgjobs.worker.dead-after} and stopped its own handlers);
 *   <li>UP otherwise. Stuck lanes (handlers that ignored a stop and were let go) are reported as a
 *       detail, not as DOWN: the worker still runs the other lanes, and restarting the application would
 *       not release a handler the JVM cannot stop any better. Alert on {@code stuckLanes > 0} or on the
 *       {@code pgjobs_worker_stuck_lanes} gauge.
 * </ul>
 *
 * Details: {@code database}, {@code schema}, and for a worker {@code workerId}, {@code running},
 * {@code fenced}, {@code stuckLanes}, {@code runningJobs}, {@code heldJobs}, {@code queues},
 * {@code listening}.
 */
public final class PgJobsHealthIndicator implements HealthIndicator {
  /** How long the database gets to answer the validity check: {@value} s. */
  public static final int VALIDATION_TIMEOUT_SECONDS = 2;

  private final DataSource dataSource;
  private final String schema;
  private final PgJobsWorkerLifecycle worker;

  /**
   * @param worker the worker's lifecycle, or null when this application runs no worker
   */
  public PgJobsHealthIndicator(DataSource dataSource, String schema, PgJobsWorkerLifecycle worker) {
    this.dataSource = dataSource;
    this.schema = schema;
    this.worker = worker;
  }

  @Override
  public Health health() {
    Health.Builder health = Health.up().withDetail("schema", schema);
    long started = System.nanoTime();
    try (Connection c = dataSource.getConnection()) {
      if (!c.isValid(VALIDATION_TIMEOUT_SECONDS)) {
        health
            .down()
            .withDetail("database", "not valid within " + VALIDATION_TIMEOUT_SECONDS + " s");
      } else {
        Optional<String> readOnly = DatabaseRole.readOnlyReason(c);
        if (readOnly.isPresent()) {
          // A standby answers queries, yet nothing can be enqueued or claimed there.
          health.down().withDetail("database", "read-only").withDetail("reason", readOnly.get());
        } else {
          health.withDetail("database", "reachable");
        }
      }
    } catch (Exception e) {
      health.down().withDetail("database", "unreachable: " + e.getMessage());
    }
    health.withDetail(
        "databaseCheck", Duration.ofNanos(System.nanoTime() - started).toMillis() + " ms");
    if (worker != null) {
      JobWorker w = worker.worker();
      boolean running = worker.isRunning();
      boolean fenced = w.isFenced();
      health
          .withDetail("workerId", w.workerId())
          .withDetail("running", running)
          .withDetail("fenced", fenced)
          .withDetail("stuckLanes", w.stuckLanes())
          .withDetail("runningJobs", w.runningJobs())
          .withDetail("heldJobs", w.heldJobs())
          .withDetail("queues", w.queues())
          .withDetail("listening", w.isListening());
      if (!running || fenced) {
        health.down();
      }
    }
    return health.build();
  }
}
