package io.pgjobs.worker;

import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.JobStore;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The claim loop of one queue. It claims as many jobs as it has free slots (at most the claim batch),
 * hands each to a virtual thread, and then waits: for a free slot when the last claim was full (more
 * work is likely waiting), else for a notification or the poll interval. A database error backs off
 * and tries again; the loop only ends on {@link #stop()}.
 */
final class QueuePoller {
  private static final Logger log = LoggerFactory.getLogger(QueuePoller.class);
  private static final long MAX_ERROR_BACKOFF_MS = 5_000;

  private final String queue;
  private final int concurrency;
  private final int claimBatch;
  private final Duration pollInterval;
  private final JobStore store;
  private final JobRunner runner;
  private final CompletionBatcher completions;
  private final ExecutorService handlers;
  private final String workerId;
  private final Semaphore slots;
  private final Semaphore wakeUp = new Semaphore(0);
  private volatile boolean moreExpected;
  private volatile boolean stopping;
  private volatile long claims;
  private Thread thread;

  QueuePoller(
      String queue,
      int concurrency,
      int claimBatch,
      Duration pollInterval,
      JobStore store,
      JobRunner runner,
      CompletionBatcher completions,
      ExecutorService handlers,
      String workerId) {
    this.queue = queue;
    this.concurrency = concurrency;
    this.claimBatch = claimBatch;
    this.pollInterval = pollInterval;
    this.store = store;
    this.runner = runner;
    this.completions = completions;
    this.handlers = handlers;
    this.workerId = workerId;
    this.slots = new Semaphore(concurrency);
  }

  String queue() {
    return queue;
  }

  /** Claim statements run so far (for tests and diagnostics). */
  long claims() {
    return claims;
  }

  /** Jobs of this queue running now. */
  int running() {
    return concurrency - slots.availablePermits();
  }

  void start() {
    thread = Thread.ofPlatform().daemon().name("pgjobs-poller-" + queue).start(this::run);
  }

  /** Work may be waiting (a notification arrived, or the listener reconnected): claim soon. */
  void wake() {
    moreExpected = true;
    signal();
  }

  private void signal() {
    if (wakeUp.availablePermits() == 0) {
      wakeUp.release();
    }
  }

  /** Stops claiming; running jobs are not touched. */
  void stop() {
    stopping = true;
    signal();
  }

  void awaitStopped(Duration timeout) throws InterruptedException {
    if (thread != null) {
      thread.join(timeout);
    }
  }

  private void run() {
    long errorBackoffMs = 100;
    while (!stopping) {
      int free = slots.availablePermits();
      if (free == 0 || completions.isBacklogged()) {
        await(pollInterval.toMillis());
        continue;
      }
      int limit = Math.min(free, claimBatch);
      moreExpected = false;
      List<ClaimedJob> jobs;
      try {
        jobs = store.claim(queue, limit, workerId);
        claims++;
        errorBackoffMs = 100;
      } catch (SQLException | RuntimeException e) {
        log.warn("claiming from queue '{}' failed ({}); retrying in {} ms", queue, e.getMessage(), errorBackoffMs);
        await(errorBackoffMs);
        errorBackoffMs = Math.min(errorBackoffMs * 2, MAX_ERROR_BACKOFF_MS);
        continue;
      }
      // A full batch means more is probably waiting: from now on a finishing job wakes this loop.
      // Set before the jobs start, or a fast job could finish before anyone listens for it.
      boolean full = jobs.size() == limit;
      moreExpected = full;
      for (ClaimedJob job : jobs) {
        slots.acquireUninterruptibly(); // never blocks: only this thread takes slots, and it counted them
        try {
          handlers.execute(() -> {
            try {
              runner.run(job);
            } finally {
              slots.release();
              if (moreExpected) {
                signal();
              }
            }
          });
        } catch (RuntimeException e) {
          // The executor refused (it is shutting down): the job stays claimed and will be rescued.
          slots.release();
          log.warn("could not start job {}: {}", job.id(), e.toString());
        }
      }
      if (!full) {
        await(pollInterval.toMillis());
      }
    }
  }

  private void await(long millis) {
    try {
      if (wakeUp.tryAcquire(millis, TimeUnit.MILLISECONDS)) {
        wakeUp.drainPermits();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stopping = true;
    }
  }
}
