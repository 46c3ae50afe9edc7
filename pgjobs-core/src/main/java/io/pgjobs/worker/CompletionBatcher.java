package io.pgjobs.worker;

import io.pgjobs.store.Completion;
import io.pgjobs.store.JobStore;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes successes in batches: one statement for everything that finished while the previous write was
 * in flight. There is no timer: an idle worker writes each success at once, a busy one writes hundreds
 * per round trip.
 *
 * <p>A success that is not yet written is not lost if the process dies: the job is still {@code running}
 * in the database and will be rescued and run again (at-least-once). While the database is away the
 * batcher keeps retrying; {@link #isBacklogged()} tells the pollers to stop claiming meanwhile.
 */
final class CompletionBatcher {
  private static final Logger log = LoggerFactory.getLogger(CompletionBatcher.class);

  private final JobStore store;
  private final int maxBatch;
  private final int backlogLimit;
  private final LinkedBlockingQueue<Completion> queue = new LinkedBlockingQueue<>();
  private final AtomicInteger pending = new AtomicInteger();
  private volatile boolean stopping;
  private volatile long stopDeadline;
  private volatile String workerId;
  private Thread thread;

  CompletionBatcher(JobStore store, int maxBatch, int backlogLimit) {
    this.store = store;
    this.maxBatch = maxBatch;
    this.backlogLimit = backlogLimit;
  }

  void start(String workerId) {
    this.workerId = workerId;
    thread = Thread.ofPlatform().daemon().name("pgjobs-completions-" + workerId).start(this::run);
  }

  void submit(Completion completion) {
    pending.incrementAndGet();
    queue.add(completion);
  }

  /** Successes not yet written. */
  int pending() {
    return pending.get();
  }

  boolean isBacklogged() {
    return pending.get() >= backlogLimit;
  }

  private void run() {
    List<Completion> batch = new ArrayList<>(maxBatch);
    while (true) {
      Completion first;
      try {
        first = queue.poll(50, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (first == null) {
        if (stopping) {
          return;
        }
        continue;
      }
      batch.clear();
      batch.add(first);
      queue.drainTo(batch, maxBatch - 1);
      write(batch);
      pending.addAndGet(-batch.size());
    }
  }

  private void write(List<Completion> batch) {
    long backoffMs = 50;
    while (true) {
      try {
        store.succeed(workerId, batch);
        return;
      } catch (SQLException | RuntimeException e) {
        if (stopping && System.nanoTime() > stopDeadline) {
          log.error(
              "could not record {} successes before shutdown ({}); those jobs stay running and will be"
                  + " rescued and run again",
              batch.size(),
              e.getMessage());
          return;
        }
        log.warn("recording {} successes failed ({}); retrying in {} ms", batch.size(), e.getMessage(), backoffMs);
        try {
          Thread.sleep(backoffMs);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        }
        backoffMs = Math.min(backoffMs * 2, 2_000);
      }
    }
  }

  /** Writes what is queued, trying for at most {@code timeout} if the database fails, then stops. */
  void close(Duration timeout) {
    stopDeadline = System.nanoTime() + timeout.toNanos();
    stopping = true;
    if (thread != null) {
      try {
        thread.join(timeout.plusSeconds(1));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
