package io.pgjobs.worker;

import io.pgjobs.replication.DatabaseRole;
import io.pgjobs.service.BackgroundService;
import io.pgjobs.store.AutoCommitDataSource;
import io.pgjobs.store.DependencyStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Unblocks the children of a large fan-out after its parent's commit, a chunk at a time, beside the
 * drain. A parent that succeeds with more children than a chunk (1,000) does not resolve its edges in the
 * statement that ends it: it leaves a row in {@code pending_edges} and a notification, and every worker
 * runs this loop, which resolves owed edges one chunk per transaction ({@link
 * DependencyStore#resolvePendingChunk}) until none is owed. Several workers share the work by parent
 * ({@code FOR UPDATE SKIP LOCKED} on the owed row); a worker killed between chunks leaves the rest to the
 * next look of any worker.
 *
 * <p>It looks when the listener hears {@code {schema}_edges_pending} ({@link #wake()}), and every second
 * without one (a notification missed while the listener reconnected, a worker killed mid-way).
 */
final class PendingEdgesResolver implements BackgroundService {
  private static final Logger log = LoggerFactory.getLogger(PendingEdgesResolver.class);
  /** The look without a notification: an owed parent waits at most this long after a lost one. */
  static final Duration POLL = Duration.ofSeconds(1);

  private final DataSource dataSource;
  private final DependencyStore store;
  private final String workerId;
  private final Semaphore wakeups = new Semaphore(0);
  private volatile boolean stopped;
  /** True once a failure was logged, until a look succeeds (loop thread only): one warning per outage. */
  private boolean failing;

  private Thread thread;

  PendingEdgesResolver(DataSource dataSource, String schema, String workerId) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.store = new DependencyStore(schema);
    this.workerId = workerId;
  }

  /** Looks for owed edges now (a notification said a parent owes some). */
  void wake() {
    wakeups.release();
  }

  @Override
  public synchronized BackgroundService start() {
    if (thread == null && !stopped) {
      thread =
          Thread.ofPlatform().daemon().name("pgjobs-dependents-" + workerId).start(this::run);
    }
    return this;
  }

  @Override
  public void stop() {
    stopped = true;
    wakeups.release();
  }

  @Override
  public boolean awaitStopped(Duration timeout) {
    Thread t;
    synchronized (this) {
      t = thread;
    }
    return BackgroundService.join(t, timeout);
  }

  private void run() {
    while (!stopped) {
      try {
        wakeups.tryAcquire(POLL.toMillis(), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        return;
      }
      wakeups.drainPermits();
      if (!stopped) {
        resolveOwed();
      }
    }
  }

  /** Resolves chunks, one transaction each, until no owed parent is free (or the worker stops). */
  private void resolveOwed() {
    try (Connection c = dataSource.getConnection()) {
      int resolved = 0;
      int n;
      while (!stopped && (n = store.resolvePendingChunk(c)) >= 0) {
        resolved += n;
      }
      if (resolved > 0) {
        log.debug("worker {}: resolved {} owed edges of large fan-outs", workerId, resolved);
      }
      failing = false;
    } catch (SQLException | RuntimeException e) {
      if (!failing) {
        failing = true;
        if (DatabaseRole.isReadOnlyError(e)) {
          log.info(
              "worker {}: owed edges of large fan-outs wait for a writable database ({})",
              workerId,
              e.getMessage());
        } else {
          log.warn(
              "worker {}: resolving owed edges of large fan-outs failed ({}); trying again every {} ms",
              workerId,
              e.getMessage(),
              POLL.toMillis());
        }
      }
    }
  }
}
