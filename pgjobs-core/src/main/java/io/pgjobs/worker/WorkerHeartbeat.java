package io.pgjobs.worker;

import io.pgjobs.store.WorkerStore;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registers the worker and, every heartbeat interval, renews its row and the heartbeat of every job it
 * is running, in one statement. A job whose heartbeat stops (because this process died or lost the
 * database) is rescued by the maintenance leader once the stale threshold passes. The reply also
 * carries each job's cancel flag: the fallback for a missed cancel notification.
 */
final class WorkerHeartbeat {
  private static final Logger log = LoggerFactory.getLogger(WorkerHeartbeat.class);

  private final WorkerStore store;
  private final WorkerStore.Registration registration;
  private final JobRunner runner;
  private final Supplier<List<UUID>> prefetched;
  private final Duration interval;
  private final Semaphore wake = new Semaphore(0);
  private volatile boolean stopping;
  private volatile long beats;
  private Thread thread;

  /**
   * @param prefetched the jobs claimed but not yet started (their heartbeat is renewed too, or a long
   *     wait for a free slot would get them rescued)
   */
  WorkerHeartbeat(
      WorkerStore store,
      WorkerStore.Registration registration,
      JobRunner runner,
      Supplier<List<UUID>> prefetched,
      Duration interval) {
    this.store = store;
    this.registration = registration;
    this.runner = runner;
    this.prefetched = prefetched;
    this.interval = interval;
  }

  /** Registers at once (so the worker is visible before it claims), then beats on its own thread. */
  void start() {
    beat();
    thread = Thread.ofPlatform().daemon().name("pgjobs-heartbeat-" + registration.id()).start(this::run);
  }

  /** Beats as soon as possible (after the listener reconnects: cancel notifications may have been missed). */
  void beatSoon() {
    wake.release();
  }

  /** Heartbeats written so far (a test hook). */
  long beats() {
    return beats;
  }

  private void run() {
    while (!stopping) {
      try {
        if (wake.tryAcquire(interval.toMillis(), TimeUnit.MILLISECONDS)) {
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

  private void beat() {
    List<RunningJob> running = List.copyOf(runner.running());
    try {
      List<UUID> ids = new ArrayList<>(prefetched.get());
      running.forEach(r -> ids.add(r.job().id()));
      Map<UUID, Boolean> cancelFlags = store.heartbeat(registration, ids);
      for (RunningJob job : running) {
        if (Boolean.TRUE.equals(cancelFlags.get(job.job().id()))) {
          job.stop(StopReason.CANCEL);
        }
      }
      beats++;
    } catch (SQLException | RuntimeException e) {
      log.warn("heartbeat of worker {} failed: {}", registration.id(), e.getMessage());
    }
  }

  /** Stops beating and removes the worker's row. */
  void stopAndDeregister() {
    stopping = true;
    wake.release();
    if (thread != null) {
      try {
        thread.join(Duration.ofSeconds(5));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    try {
      store.deregister(registration.id());
    } catch (SQLException | RuntimeException e) {
      log.warn("could not deregister worker {} ({}); maintenance removes it later", registration.id(), e.getMessage());
    }
  }
}
