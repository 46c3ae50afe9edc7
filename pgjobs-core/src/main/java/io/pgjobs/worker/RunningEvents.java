package io.pgjobs.worker;

import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Announces the jobs of each claim as {@code running} on the job events channel, from the worker and
 * after the claim, instead of from the claim statement.
 *
 * <p>Why: the claim is on the path from enqueue to handler. Announced by the statement-level trigger on
 * {@code jobs} (schema versions 3–19), every claim paid for the trigger with its transition tables and
 * committed a {@code NOTIFY}, which takes a lock every notifying commit of the whole server queues for:
 * W4 measured 0.3–0.5 ms of a ~3.5 ms pickup for it (docs/BENCHMARKS.md). Since schema version 20 the
 * trigger skips the claim statements (they set {@code pgjobs.claim} for their transaction), and the
 * worker sends their event itself, in the same format (one notification per claim: the true count and
 * the first jobs that fit), on a pooled connection while the handlers already run.
 *
 * <p>One writer (a virtual thread started while announcements wait, gone when none do) sends every claim
 * announced since its last statement in one statement, so announcements cost at most one statement per
 * claim, and fewer under load. The event stream promises a job's events in order (queued, running,
 * progress, its outcome): every write that would announce something later about a job first waits,
 * {@link #awaitAnnounced}, until its claim was announced — almost always long done, since the
 * announcement leaves as the handler starts. A failed announcement is logged and not retried (events
 * are hints for live views; the job's state is in the table); it releases the writes waiting for it.
 */
final class RunningEvents {
  private static final Logger log = LoggerFactory.getLogger(RunningEvents.class);
  /** How long a write waits for the announcement of its claim before it goes ahead without it. */
  static final long ANNOUNCE_WAIT_MILLIS = 5_000;

  private final ExecutionStore store;
  private final ReentrantLock lock = new ReentrantLock();
  /** Jobs announced and not yet taken by the writer; guarded by {@link #lock}. */
  private List<ClaimedJob> waiting = new ArrayList<>();
  /** True while a writer runs; guarded by {@link #lock}. */
  private boolean writing;
  /** Claims (by token) announced and not yet sent, each with what completes once it is. */
  private final Map<Long, CompletableFuture<Void>> unsent = new ConcurrentHashMap<>();
  private volatile boolean failureLogged;

  RunningEvents(ExecutionStore store) {
    this.store = store;
  }

  /** Announces the jobs of a claim (in claim order) as running; returns at once. */
  void announce(List<ClaimedJob> jobs) {
    add(jobs);
    send();
  }

  /**
   * Records the jobs of a claim to announce; from now on {@link #awaitAnnounced} waits for them. Call it
   * before the jobs can start, and {@link #send} once they did: the writer's thread then queues behind the
   * lanes instead of ahead of them.
   */
  void add(List<ClaimedJob> jobs) {
    if (jobs.isEmpty()) {
      return;
    }
    for (ClaimedJob job : jobs) {
      unsent.computeIfAbsent(job.claimToken(), token -> new CompletableFuture<>());
    }
    lock.lock();
    try {
      waiting.addAll(jobs);
    } finally {
      lock.unlock();
    }
  }

  /** Starts the writer if announcements wait and none runs; returns at once. */
  void send() {
    boolean startWriter;
    lock.lock();
    try {
      startWriter = !writing && !waiting.isEmpty();
      writing |= startWriter;
    } finally {
      lock.unlock();
    }
    if (startWriter) {
      Thread.ofVirtual().name("pgjobs-running-events").start(this::writeWhileWaiting);
    }
  }

  /**
   * Returns once the claims of {@code jobs} were announced (or their announcement failed), or after
   * {@link #ANNOUNCE_WAIT_MILLIS}: a write that tells of a job's next step must not overtake it.
   */
  void awaitAnnounced(Collection<ClaimedJob> jobs) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ANNOUNCE_WAIT_MILLIS);
    for (ClaimedJob job : jobs) {
      CompletableFuture<Void> sent = unsent.get(job.claimToken());
      if (sent == null) {
        continue; // the common case: announced long ago
      }
      try {
        sent.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        log.debug("the running event of job {} is not out after {} ms; writing its next step anyway",
            job.id(), ANNOUNCE_WAIT_MILLIS);
        return;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (ExecutionException e) {
        // not completed exceptionally (see writeWhileWaiting); nothing to wait for
      }
    }
  }

  /** Claims announced and not yet sent (tests). */
  int unsent() {
    return unsent.size();
  }

  /** The writer: one statement per round, for every job announced when the round starts. */
  private void writeWhileWaiting() {
    while (true) {
      List<ClaimedJob> batch;
      lock.lock();
      try {
        if (waiting.isEmpty()) {
          writing = false;
          return;
        }
        batch = waiting;
        waiting = new ArrayList<>();
      } finally {
        lock.unlock();
      }
      try {
        store.announceRunning(batch);
        failureLogged = false;
      } catch (Throwable e) {
        if (!failureLogged) {
          failureLogged = true;
          log.warn("could not announce {} claimed jobs as running on the job events channel ({}); live views"
              + " see them at their next event", batch.size(), e.getMessage());
        }
      }
      Map<Long, Boolean> tokens = new HashMap<>();
      for (ClaimedJob job : batch) {
        if (tokens.putIfAbsent(job.claimToken(), Boolean.TRUE) == null) {
          CompletableFuture<Void> sent = unsent.remove(job.claimToken());
          if (sent != null) {
            sent.complete(null);
          }
        }
      }
    }
  }
}
