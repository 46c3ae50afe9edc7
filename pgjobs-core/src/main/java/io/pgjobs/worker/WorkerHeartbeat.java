package io.pgjobs.worker;

import io.pgjobs.replication.DatabaseRole;
import io.pgjobs.service.BackgroundService;
import io.pgjobs.store.WorkerStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Liveness. Registers the worker and, every heartbeat interval, renews its row and the heartbeat of every
 * job it holds ({@link HeldJobs}: running, waiting for a lane, or waiting for their outcome write) in one
 * statement. That statement cannot be blocked: it runs on a connection of its own, held for the worker's
 * life and opened again after a failure without waiting for the handlers' pool ({@link LivenessConnector});
 * it skips job rows another transaction holds, and bounds any other lock wait with a lock timeout. A beat
 * may be slow (a busy server, thousands of held jobs) and still count: it may take until the worker would
 * fence itself. But a beat whose connection is lost fails within about a second or the interval: a watch
 * asks the server whether the beat's session is running it, and drops the connection if it is not.
 *
 * <p>The worker claims nothing until its first heartbeat has registered it: rescue takes a running job
 * whose worker has no row for a dead worker's, so a job claimed before would be taken back while it runs.
 *
 * <p>A worker whose row is not renewed for the dead-worker threshold is presumed dead by maintenance and
 * its jobs are rescued. So a worker that has failed to heartbeat for nearly that long fences itself: it
 * stops claiming and stops its handlers (their jobs go back to the queue, if rescue has not taken them
 * already), rather than go on producing side effects next to the jobs' next runs. Once a heartbeat
 * succeeds again, it resumes. The reply also carries each job's cancel flag: the fallback for a missed
 * cancel notification.
 */
final class WorkerHeartbeat implements BackgroundService {
  private static final Logger log = LoggerFactory.getLogger(WorkerHeartbeat.class);

  /** What the worker does when its liveness is in doubt, and when it is restored. */
  interface Fence {
    void suspend();

    void resume();
  }

  private final LivenessConnector connector;
  private final WorkerStore store;
  private final WorkerStore.Registration registration;
  private final JobRunner runner;
  private final HeldJobs held;
  private final Duration interval;
  private final long fenceAfterNanos;
  private final Fence fence;
  private final Semaphore wake = new Semaphore(0);
  private volatile boolean stopping;
  private volatile long beats;
  private volatile long lastSuccessNanos = System.nanoTime();
  private volatile boolean fenced;
  private volatile long fences;
  /** The last beat failed because the database is read-only (reported once). */
  private boolean readOnly;

  private Connection connection;
  private Thread thread;

  /**
   * @param fenceAfter the time without a successful heartbeat after which the worker fences itself
   *     (somewhat less than the dead-worker threshold)
   */
  WorkerHeartbeat(
      DataSource dataSource,
      WorkerStore store,
      WorkerStore.Registration registration,
      JobRunner runner,
      HeldJobs held,
      Duration interval,
      Duration fenceAfter,
      Fence fence) {
    this.connector = LivenessConnector.of(dataSource);
    this.store = store;
    this.registration = registration;
    this.runner = runner;
    this.held = held;
    this.interval = interval;
    this.fenceAfterNanos = fenceAfter.toNanos();
    this.fence = fence;
  }

  /**
   * Registers at once, then beats on its own thread. If the registration fails (the database is away, or
   * the workers table locked), the worker starts fenced: it claims nothing until a beat succeeds.
   */
  @Override
  public WorkerHeartbeat start() {
    if (thread != null) {
      return this;
    }
    if (!beat()) {
      fenced = true;
      log.warn(
          "worker {}: could not register; it claims nothing until a heartbeat succeeds (tried again every"
              + " {} ms)",
          registration.id(),
          Math.max(100, interval.toMillis() / 4));
      fence.suspend();
    }
    thread = Thread.ofPlatform()
        .daemon()
        .name("pgjobs-heartbeat-" + registration.id())
        .start(this::run);
    return this;
  }

  /** Beats as soon as possible (after the listener reconnects: cancel notifications may have been missed). */
  void beatSoon() {
    wake.release();
  }

  /** Heartbeats written so far (a test hook). */
  long beats() {
    return beats;
  }

  /** Times the worker has fenced itself after its heartbeat went silent for the fence time. */
  long fences() {
    return fences;
  }

  /** True while the worker has fenced itself (no heartbeat for too long). */
  boolean isFenced() {
    return fenced;
  }

  private void run() {
    while (!stopping) {
      try {
        // While beats fail, try more often: the fence must be lifted as soon as the database is
        // back.
        long waitMs = System.nanoTime() - lastSuccessNanos > interval.toNanos() * 2
            ? Math.max(100, interval.toMillis() / 4)
            : interval.toMillis();
        if (wake.tryAcquire(waitMs, TimeUnit.MILLISECONDS)) {
          wake.drainPermits();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (!stopping) {
        beat();
      }
    }
  }

  /** One beat; true if it was written. */
  private boolean beat() {
    held.beatLock().lock();
    try {
      return beatLocked();
    } finally {
      held.beatLock().unlock();
    }
  }

  private boolean beatLocked() {
    HeldJobs.Snapshot snapshot = held.snapshot();
    long started = System.nanoTime();
    long replyWithinMs = Math.max(1_000, Math.min(10_000, interval.toMillis()));
    Thread watch = null;
    try {
      if (connection == null) {
        connection = connector.connect(Duration.ofMillis(replyWithinMs));
      }
      // A slow reply is not a lost one. Under load (thousands of held jobs, a busy server) a
      // beat can take longer than the interval; failing it then would fail every beat after it
      // the same way, until the worker fenced itself while alive. So the beat may take the whole
      // time left before the fence. A connection that hangs (a partition that drops packets
      // rather than resetting) must still fail the beat early, so that the next one can try a
      // new connection: the watch finds it.
      long leftMs = TimeUnit.NANOSECONDS.toMillis(fenceAfterNanos - (started - lastSuccessNanos));
      connection.setNetworkTimeout(
          Runnable::run, (int) Math.min(Integer.MAX_VALUE, Math.max(replyWithinMs, leftMs)));
      watch = watch(connection, replyWithinMs);
      // Bounded: a lock on the worker's own row must not stall the heartbeat for long.
      Duration lockTimeout =
          interval.compareTo(Duration.ofSeconds(2)) < 0 ? interval : Duration.ofSeconds(2);
      WorkerStore.Beat found = store.heartbeat(
          connection,
          registration,
          snapshot.tokens(),
          snapshot.waiting(),
          runner.stuckLanes(),
          lockTimeout);
      found.cancelRequested().forEach((id, cancel) -> {
        if (cancel) {
          runner.cancel(id);
        }
      });
      if (!found.lost().isEmpty()) {
        Map<UUID, Long> lost = new HashMap<>();
        found.lost().forEach(id -> lost.put(id, snapshot.tokens().get(id)));
        runner.abandon(lost);
      }
      lastSuccessNanos = System.nanoTime();
      beats++;
      long tookMs = TimeUnit.NANOSECONDS.toMillis(lastSuccessNanos - started);
      if (tookMs > interval.toMillis()) {
        log.warn(
            "heartbeat of worker {} took {} ms for {} jobs, longer than its {} ms interval",
            registration.id(),
            tookMs,
            snapshot.tokens().size(),
            interval.toMillis());
      }
      if (readOnly) {
        readOnly = false;
        log.info(
            "worker {}: the database accepts writes again (heartbeat written)", registration.id());
      }
      if (fenced) {
        fenced = false;
        log.warn(
            "worker {}: heartbeat succeeded{}; claiming resumes",
            registration.id(),
            beats == 1 ? "" : " again");
        fence.resume();
      }
      return true;
    } catch (SQLException | RuntimeException e) {
      if (DatabaseRole.isReadOnlyError(e)) {
        // A standby (before a failover completes, or a URL that reaches one): every beat fails
        // the same way until it is promoted; say so once, not at every retry.
        if (!readOnly) {
          readOnly = true;
          log.warn(
              "worker {}: the database is read-only (a standby, or read-only sessions): the worker cannot"
                  + " register or heartbeat, so it claims nothing and waits until the database is promoted or its"
                  + " URL reaches the primary; {}",
              registration.id(),
              e.getMessage());
        } else {
          log.debug(
              "heartbeat of worker {} failed: the database is still read-only", registration.id());
        }
      } else {
        log.warn(
            "heartbeat of worker {} failed after {} ms ({} jobs): {}",
            registration.id(),
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
            snapshot.tokens().size(),
            e.getMessage());
      }
      closeConnection();
      long silentFor = System.nanoTime() - lastSuccessNanos;
      if (!fenced && silentFor > fenceAfterNanos && !stopping) {
        fenced = true;
        fences++;
        log.error(
            "worker {}: no heartbeat for {} ms; it will be presumed dead, so it stops claiming and stops"
                + " its {} running jobs (they go back to the queue)",
            registration.id(),
            TimeUnit.NANOSECONDS.toMillis(silentFor),
            runner.running().size());
        fence.suspend();
      }
      return false;
    } finally {
      if (watch != null) {
        watch.interrupt();
      }
    }
  }

  /**
   * Watches the beat on {@code beat}: once it has waited {@code afterMs} for its reply, and then every half
   * of that, asks the server on a connection of its own whether the beat's session is running a statement.
   * A session that has been waiting for its client (running nothing) for half that time while the client
   * waits for it means the two have lost each other: the beat's connection is aborted, so the beat fails
   * now and the next one opens a new connection, rather than hang until the fence. A session that is
   * running the beat is left to finish it. Null (no watch) if the session cannot be named.
   */
  private Thread watch(Connection beat, long afterMs) {
    int pid;
    try {
      pid = beat.unwrap(PGConnection.class).getBackendPID();
    } catch (SQLException | RuntimeException e) {
      return null;
    }
    Duration idleFor = Duration.ofMillis(afterMs / 2);
    return Thread.ofVirtual().name("pgjobs-heartbeat-watch").start(() -> {
      try {
        Thread.sleep(afterMs);
        while (true) {
          boolean lost;
          try (Connection probe = connector.connect(Duration.ofMillis(afterMs))) {
            lost = store.sessionWaitsForClient(probe, pid, idleFor).orElse(false);
          } catch (SQLException | RuntimeException e) {
            // The server cannot be asked now: the beat's own network timeout decides.
            lost = false;
          }
          if (Thread.currentThread().isInterrupted()) {
            return;
          }
          if (lost) {
            log.warn(
                "worker {}: the heartbeat has had no reply for {} ms and its server session {} is not"
                    + " running it: the connection is lost; a new one is opened for the next beat",
                registration.id(),
                afterMs,
                pid);
            beat.abort(Runnable::run);
            return;
          }
          Thread.sleep(idleFor.toMillis());
        }
      } catch (InterruptedException e) {
        // the beat ended
      } catch (SQLException | RuntimeException e) {
        log.debug("heartbeat watch of worker {} ended: {}", registration.id(), e.toString());
      }
    });
  }

  private void closeConnection() {
    if (connection != null) {
      try {
        connection.close();
      } catch (SQLException | RuntimeException ignored) {
        // broken already
      }
      connection = null;
    }
  }

  /** Asks the heartbeat to stop beating. */
  @Override
  public void stop() {
    stopping = true;
    wake.release();
  }

  /**
   * Waits for the heartbeat's thread to end, then removes the worker's row (also when the thread is still
   * in a beat: maintenance would otherwise keep a stopped worker listed until it is presumed dead).
   */
  @Override
  public boolean awaitStopped(Duration timeout) {
    boolean ended = BackgroundService.join(thread, timeout);
    try {
      store.deregister(registration.id());
    } catch (SQLException | RuntimeException e) {
      log.warn(
          "could not deregister worker {} ({}); maintenance removes it later",
          registration.id(),
          e.getMessage());
    }
    if (thread == null || !thread.isAlive()) {
      closeConnection();
      connector.close();
    }
    return ended;
  }
}
