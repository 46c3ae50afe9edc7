package io.pgjobs.worker;

import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Clears the {@code prefetched} marks of the jobs lanes start, many per statement.
 *
 * <p>A heartbeat marks every job that is claimed and still waits for a lane (should the worker die, such
 * jobs go back to the queue with their attempt given back). A lane that starts a marked job must clear
 * the mark before its handler runs, or a worker dying mid-run would have that attempt given back too.
 * Written one statement per job, each on a pooled connection with a commit of its own, that clearing was
 * a positive feedback under load: the slower the lanes, the more jobs wait in the buffer at a heartbeat,
 * the more marks, the more single-row writes queued on the pool ahead of the claims and the completer.
 * Measured in W5 at 5,000 jobs/s with an idle transaction open: ~30 lanes at once in that update, and
 * completions fell to ~1,100/s for 15 s before the backlog drained.
 *
 * <p>Now a lane asks, and one writer (a virtual thread started while requests wait, gone when none do)
 * clears every mark asked for since its last statement in one statement (group commit): the number of
 * statements no longer grows with the number of marked jobs. A lane waits for the statement that carries
 * its job, uninterruptibly, as it waited for its own statement before.
 */
final class PrefetchMarks {
  private final ExecutionStore store;
  private final ReentrantLock lock = new ReentrantLock();
  /** Requests not yet taken by the writer; guarded by {@link #lock}. */
  private List<Request> waiting = new ArrayList<>();
  /** True while a writer runs; guarded by {@link #lock}. */
  private boolean writing;

  private record Request(ClaimedJob job, CompletableFuture<Boolean> cleared) {}

  PrefetchMarks(ExecutionStore store) {
    this.store = store;
  }

  /**
   * Clears the mark of {@code job} in the database; true if the job is still running under its claim,
   * false if not (the worker no longer holds it: do not run it).
   *
   * @throws SQLException if the statement carrying the job failed (the caller gives the job back)
   */
  boolean clear(ClaimedJob job) throws SQLException {
    Request mine = new Request(job, new CompletableFuture<>());
    boolean startWriter;
    lock.lock();
    try {
      waiting.add(mine);
      startWriter = !writing;
      writing = true;
    } finally {
      lock.unlock();
    }
    if (startWriter) {
      Thread.ofVirtual().name("pgjobs-prefetch-marks").start(this::writeWhileWaiting);
    }
    try {
      return mine.cleared().join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof SQLException sql) {
        throw sql;
      }
      if (e.getCause() instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw e;
    }
  }

  /** Requests waiting for the writer's next statement (tests: to know the next one will carry them). */
  int waiting() {
    lock.lock();
    try {
      return waiting.size();
    } finally {
      lock.unlock();
    }
  }

  /** The writer: one statement per round, for every request waiting when the round starts. */
  private void writeWhileWaiting() {
    while (true) {
      List<Request> batch;
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
        Set<UUID> cleared =
            store.clearPrefetched(batch.stream().map(Request::job).toList());
        for (Request r : batch) {
          r.cleared().complete(cleared.contains(r.job().id()));
        }
      } catch (Throwable e) {
        // Every lane of the batch gets the failure (each gives its job back); the next round goes
        // on.
        for (Request r : batch) {
          r.cleared().completeExceptionally(e);
        }
      }
    }
  }
}
