package io.pgjobs.worker;

import io.pgjobs.JobState;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.Completion;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.store.StatementTimeoutLift;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one component that writes to a job this worker runs. {@link JobRunner} decides how an attempt ends
 * and hands over an {@link Outcome}; {@link #record} maps it to its statement (success, failure to
 * {@code retrying}/{@code failed}, discard, snooze, cancellation acknowledged, release at shutdown). The
 * completer also gives back jobs that never started ({@link #unclaim}), clears the {@code prefetched}
 * mark of a job a lane starts ({@link #clearPrefetchedMark}), and writes what a running handler asks
 * through its context: progress, {@code ctx.heartbeat()} and {@code ctx.complete(connection, output)}
 * (on the caller's thread, not queued: see {@link #progress}). Every write takes the job's claim as one
 * value, the {@link ClaimedJob} the claim returned, and is fenced by its claim token (see
 * {@code ExecutionSql}): a write from a claim that is no longer the job's changes nothing. Each returns
 * what it wrote; metrics are counted from that, and a job leaves the worker's {@link HeldJobs} only once
 * its write is confirmed (until then the heartbeat keeps it alive).
 *
 * <p><b>The writes to running jobs that are not the completer's</b>, all of them, and why:
 *
 * <ul>
 *   <li>{@code WorkerHeartbeat} renews the worker's row and the heartbeat of every job it holds (and
 *       marks the ones still waiting for a lane {@code prefetched}) in one statement on a connection of
 *       its own: liveness must not queue behind outcome writes or a pool the handlers have drained, and no
 *       row lock may block it. It changes no job's state.
 *   <li>Maintenance's rescue ends or requeues running jobs whose worker is presumed dead; by then they are
 *       no longer this worker's, and the claim token fences any late write of ours.
 *   <li>A cancellation ({@code JobClient.cancel}, the API, the CLI) sets a running job's
 *       {@code cancel_requested}: a request, which the completer's statements read and answer by ending
 *       the job {@code cancelled}.
 * </ul>
 *
 * <p><b>Successes</b> are written in batches on the completer's thread: one statement for everything
 * that finished while the previous write was in flight (no timer: an idle worker writes each success at
 * once, a busy one hundreds per round trip). Other outcomes are rarer and written at once, on the
 * lane's own thread, which then waits for them (natural back-pressure).
 *
 * <p><b>Bounded, with poison isolation.</b> An error is either <em>transient</em> (the connection, the
 * server going away, a lock or statement timeout, a serialization failure): the write is retried with
 * backoff while the worker runs, since giving up would run finished work again; or it is about the data
 * (a value jsonb cannot store, such as U+0000 in an output, or a constraint): such a batch is split in
 * halves until the job that cannot be written is found; that job is failed with an error that says why
 * and every other job is written. A worker never stops claiming because one job cannot be written.
 * While more than the backlog limit of successes wait, {@link #isBacklogged()} tells the pollers to stop
 * claiming; {@link #onBacklogCleared} wakes them as soon as the completer is below the limit again.
 */
final class JobCompleter {
  private static final Logger log = LoggerFactory.getLogger(JobCompleter.class);
  /** The metric outcome of a write that found the job no longer its claim's. */
  static final String NOT_RECORDED = "not_recorded";

  private static final long MAX_BACKOFF_MS = 2_000;
  /**
   * How often a write that matched nothing while its claim still holds the job is tried again before
   * the job is left to rescue (a fenced write matches its own claim's running job, so this is a guard).
   */
  private static final int STILL_OURS_TRIES = 3;
  /** How long a success batch waits for a row another transaction holds before it writes around it. */
  static final Duration LOCK_WAIT = Duration.ofSeconds(1);

  private final ExecutionStore store;
  private final HeldJobs held;
  private final JobMetrics metrics;
  private final int maxBatch;
  private final int backlogLimit;
  /** Clears the {@code prefetched} marks of jobs lanes start, many per statement. */
  private final PrefetchMarks prefetchMarks;

  private final LinkedBlockingQueue<Outcome.Succeeded> queue = new LinkedBlockingQueue<>();
  private final AtomicInteger pending = new AtomicInteger();
  /**
   * Told when the successes waiting fall below the backlog limit again: the pollers, which stop claiming
   * while it is reached and would otherwise sleep out their poll interval with their lanes idle.
   */
  private final List<Runnable> backlogCleared = new CopyOnWriteArrayList<>();
  /** Claimed jobs whose give-back is to be tried again on the completer's thread (see {@link #unclaim}). */
  private final ConcurrentLinkedQueue<ClaimedJob> giveBacks = new ConcurrentLinkedQueue<>();
  /** When the completer's thread tries {@link #giveBacks} next (System.nanoTime()), and its backoff. */
  private long nextGiveBackAt;

  private long giveBackBackoffMs;
  private volatile boolean stopping;
  private volatile long stopDeadline;
  /** Set when lane writes must give up at {@link #stopDeadline} (shutdown). */
  private volatile boolean writesBounded;

  private volatile String workerId;
  private Thread thread;
  /**
   * The pollers that take the children a success batch hands to this worker, by queue (see
   * {@link #handOffTo}); empty: successes hand nothing over.
   */
  private volatile Map<String, QueuePoller> handOffs = Map.of();
  /**
   * Held from before a success batch that may hand jobs over until those it handed are in
   * {@link HeldJobs}: a queue's reconcile ({@link #whileNoHandOffIsUnderWay}), which gives back the jobs
   * the database says this worker holds and {@link HeldJobs} does not know, must not take a child
   * handed over a moment ago for one whose reply was lost (it would run twice).
   */
  private final ReentrantLock handOffLock = new ReentrantLock();
  /** Children handed over and taken into a poller's lanes, since the worker started. */
  private final java.util.concurrent.atomic.AtomicLong handedOver =
      new java.util.concurrent.atomic.AtomicLong();

  /** The write an outcome asks for, and the metric label of the outcome written as meant. */
  enum Intent {
    RETRY("retrying"),
    FAIL("failed"),
    DISCARD("discarded"),
    CANCEL("cancelled"),
    SNOOZE("snoozed"),
    RELEASE("released");

    final String label;

    Intent(String label) {
      this.label = label;
    }
  }

  JobCompleter(
      ExecutionStore store, HeldJobs held, JobMetrics metrics, int maxBatch, int backlogLimit) {
    this.store = store;
    this.prefetchMarks = new PrefetchMarks(store);
    this.held = held;
    this.metrics = metrics;
    this.maxBatch = maxBatch;
    this.backlogLimit = backlogLimit;
  }

  void start(String workerId) {
    this.workerId = workerId;
    thread = Thread.ofPlatform().daemon().name("pgjobs-completer-" + workerId).start(this::run);
  }

  /**
   * Records how an attempt ended: the one way an outcome is written, and the one place that says which
   * statement writes each kind. A success is queued for the next batch and null returned (its metric is
   * counted when the batch tells what it wrote). Every other outcome is written at once, on the calling
   * thread, and its metric label returned (see {@link #write}). Never throws.
   */
  String record(Outcome outcome) {
    return switch (outcome) {
      case Outcome.Succeeded success -> {
        pending.incrementAndGet();
        queue.add(success);
        yield null;
      }
      case Outcome.Retry r ->
        write(r.job(), Intent.RETRY, () -> store.retryLater(r.job(), r.delayMs(), r.errorJson()));
      case Outcome.Snooze s ->
        write(s.job(), Intent.SNOOZE, () -> store.snooze(s.job(), s.delayMs()));
      case Outcome.Failed f ->
        write(f.job(), Intent.FAIL, () -> store.finish(f.job(), JobState.FAILED, f.errorJson()));
      case Outcome.Discarded d ->
        write(d.job(), Intent.DISCARD, () -> store.finish(d.job(), JobState.FAILED, d.errorJson()));
      case Outcome.Cancelled c ->
        write(
            c.job(), Intent.CANCEL, () -> store.finish(c.job(), JobState.CANCELLED, c.errorJson()));
      case Outcome.Released r ->
        write(r.job(), Intent.RELEASE, () -> store.release(r.job(), r.errorJson()));
    };
  }

  /**
   * Lets success batches hand this worker the children they unblock, into the pollers of their queues
   * ({@link ExecutionStore#succeedHandingOff}); set before the completer starts.
   */
  void handOffTo(Map<String, QueuePoller> pollersByQueue) {
    this.handOffs = Map.copyOf(pollersByQueue);
  }

  /** Children handed over to this worker and taken into its lanes so far. */
  long handOffs() {
    return handedOver.get();
  }

  /** Successes not yet written. */
  int pending() {
    return pending.get();
  }

  boolean isBacklogged() {
    return pending.get() >= backlogLimit;
  }

  /** Runs {@code listener} each time the backlog falls below its limit (on the completer's thread). */
  void onBacklogCleared(Runnable listener) {
    backlogCleared.add(listener);
  }

  /** Counts {@code written} successes as no longer pending; tells the listeners if the backlog cleared. */
  private void written(int written) {
    int left = pending.addAndGet(-written);
    if (left < backlogLimit && left + written >= backlogLimit) {
      backlogCleared.forEach(Runnable::run);
    }
  }

  // ---------------------------------------------------------------- successes, in batches

  private void run() {
    List<Outcome.Succeeded> batch = new ArrayList<>(maxBatch);
    List<Outcome.Succeeded> busy = new ArrayList<>();
    long busyBackoffMs = 0;
    while (true) {
      Outcome.Succeeded first;
      try {
        first = queue.poll(busy.isEmpty() ? 50 : Math.max(1, busyBackoffMs), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      retryGiveBacks();
      batch.clear();
      batch.addAll(busy);
      boolean retryingSkipped =
          !busy.isEmpty(); // their rows were locked a moment ago: write around them
      busy.clear();
      if (first != null) {
        batch.add(first);
      }
      if (batch.isEmpty()) {
        if (stopping && giveBacks.isEmpty()) {
          return;
        }
        continue;
      }
      queue.drainTo(batch, Math.max(0, maxBatch - batch.size()));
      int size = batch.size();
      writeSuccesses(batch, busy, retryingSkipped);
      if (stopping && System.nanoTime() > stopDeadline && !busy.isEmpty()) {
        log.error(
            "could not record {} successes before shutdown (their rows stay locked by other transactions);"
                + " those jobs stay running and will be rescued and run again",
            busy.size());
        busy.forEach(s -> held.remove(s.job()));
        busy.clear();
      }
      written(size - busy.size());
      busyBackoffMs = busy.isEmpty() ? 0 : Math.min(Math.max(busyBackoffMs * 2, 20), 1_000);
    }
  }

  /**
   * Writes {@code batch}; jobs whose rows another transaction holds are put in {@code busy} to be tried
   * again. Never throws. The fast statement waits at most {@link #LOCK_WAIT} for a locked row; if that
   * runs out the batch is written with the statement that skips locked rows (so do retries of skipped
   * jobs, which {@code skipLocked} says).
   */
  private void writeSuccesses(
      List<Outcome.Succeeded> batch, List<Outcome.Succeeded> busy, boolean skipLocked) {
    long backoffMs = 50;
    boolean lifted = false;
    while (true) {
      try {
        boolean skip = skipLocked;
        Map<String, Integer> room = skip ? Map.of() : handOffRoom(batch);
        String[] handOffQueues = room.keySet().toArray(NO_QUEUES);
        int handOffLimit = room.values().stream().mapToInt(Integer::intValue).sum();
        int written;
        if (handOffQueues.length == 0) {
          written = lifting(
              lifted, () -> store.succeed(workerId, completions(batch), skip ? null : LOCK_WAIT));
        } else {
          ExecutionStore.SuccessBatch result;
          List<HeldJob> handed;
          handOffLock.lock();
          try {
            result = lifting(
                lifted,
                () -> store.succeedHandingOff(
                    workerId, completions(batch), LOCK_WAIT, handOffQueues, handOffLimit));
            handed = held.add(result.handed());
          } catch (SQLException | RuntimeException e) {
            // It may have committed with children handed over whose rows never reached us: their
            // queues look for jobs this worker holds and does not know, before their next claim.
            for (String queue : handOffQueues) {
              handOffs.get(queue).reconcileLater();
            }
            throw e;
          } finally {
            handOffLock.unlock();
          }
          written = result.written();
          takeHandedOver(handed);
        }
        if (written == batch.size()) {
          batch.forEach(s -> done(s, "succeeded"));
        } else {
          classify(batch, busy); // which were written, skipped, or fenced
        }
        return;
      } catch (SQLException | RuntimeException e) {
        if (!skipLocked && e instanceof SQLException sql && "55P03".equals(sql.getSQLState())) {
          // Its lock timeout ran out: a row is locked by another transaction. Write around it.
          skipLocked = true;
          continue;
        }
        if (!lifted && StatementTimeoutLift.isCancel(e)) {
          lifted = true;
          log.warn(
              "recording {} successes was cancelled ({}): a statement timeout of the database or role?"
                  + " Written again with the timeout lifted for that one transaction",
              batch.size(),
              e.getMessage());
          continue;
        }
        if (!isTransient(e)) {
          isolate(batch, busy, e, skipLocked);
          return;
        }
        if (stopping && System.nanoTime() > stopDeadline) {
          log.error(
              "could not record {} successes before shutdown ({}); those jobs stay running and will be"
                  + " rescued and run again",
              batch.size(),
              e.getMessage());
          batch.forEach(s -> held.remove(s.job()));
          return;
        }
        log.warn(
            "recording {} successes failed ({}); retrying in {} ms",
            batch.size(),
            e.getMessage(),
            backoffMs);
        if (!pause(backoffMs)) {
          return;
        }
        backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
      }
    }
  }

  private static final String[] NO_QUEUES = new String[0];

  /**
   * The largest success batch that hands children over. A larger one means the worker drains a backlog:
   * there its poller's claims, running beside the completer's statements, keep both the worker and the
   * database busy, and a hand-off would put the claim's work on the completer's one thread instead
   * (W3G, 1,000 chains of 50 and 50 layers of 1,000: 12 % and 20 % slower when every batch handed
   * over). A small batch is a graph whose links wait on each other: there the hand-off saves each link
   * a claim and a commit (W3G, 10 chains of 5,000: 40 % faster).
   */
  static final int HAND_OFF_MAX_BATCH = 64;

  /**
   * The queues whose pollers take handed-over children now, with how many each takes, if a job of
   * {@code batch} has dependents (else none: the batch is written with the plain statement, and jobs
   * outside graphs pay nothing for the hand-off).
   */
  private Map<String, Integer> handOffRoom(List<Outcome.Succeeded> batch) {
    Map<String, QueuePoller> targets = handOffs;
    if (targets.isEmpty() || stopping || batch.size() > HAND_OFF_MAX_BATCH) {
      return Map.of();
    }
    // Every small batch passes here: jobs outside graphs stop at this look, before anything is
    // built.
    if (batch.stream().noneMatch(s -> s.job().hasDependents())) {
      return Map.of();
    }
    Map<String, Integer> finished = new HashMap<>();
    for (Outcome.Succeeded s : batch) {
      finished.merge(s.job().queue(), 1, Integer::sum);
    }
    Map<String, Integer> room = new LinkedHashMap<>();
    targets.forEach((queue, poller) -> {
      int n = poller.handOffRoom(finished.getOrDefault(queue, 0));
      if (n > 0) {
        room.put(queue, n);
      }
    });
    return room;
  }

  /**
   * Puts the children a success batch handed over (already in {@link HeldJobs}) into their queues'
   * lanes; those a poller no longer takes (it began to stop meanwhile) are given back to their queues at
   * once.
   */
  private void takeHandedOver(List<HeldJob> handed) {
    if (handed.isEmpty()) {
      return;
    }
    Map<String, List<HeldJob>> byQueue = new LinkedHashMap<>();
    for (HeldJob job : handed) {
      byQueue.computeIfAbsent(job.job().queue(), q -> new ArrayList<>()).add(job);
    }
    List<ClaimedJob> refused = new ArrayList<>();
    byQueue.forEach((queue, jobs) -> {
      QueuePoller poller = handOffs.get(queue);
      if (poller == null || !poller.accept(jobs)) {
        jobs.forEach(j -> refused.add(j.job()));
      } else {
        handedOver.addAndGet(jobs.size());
      }
    });
    if (!refused.isEmpty()) {
      unclaim(refused);
    }
  }

  /**
   * Runs {@code work} (a queue's reconcile) while no success batch that may hand jobs over is under way:
   * every job handed over so far is in {@link HeldJobs}. Called under the queue's claim lock; the
   * completer takes no claim lock while it holds the hand-off lock (it calls nothing of a poller then
   * but {@link QueuePoller#reconcileLater}, which takes no lock), so the two cannot wait on each other.
   */
  <T> T whileNoHandOffIsUnderWay(StatementTimeoutLift.SqlWork<T> work) throws SQLException {
    handOffLock.lock();
    try {
      return work.run();
    } finally {
      handOffLock.unlock();
    }
  }

  /**
   * After a success batch that wrote fewer jobs than it had, or whose earlier try may have committed:
   * each job is written (its row carries this claim's token and a final state), busy (still running: its
   * row was locked), or fenced (no longer this claim's).
   */
  private void classify(List<Outcome.Succeeded> missing, List<Outcome.Succeeded> busy) {
    List<ClaimedJob> claims = new ArrayList<>(missing.size());
    missing.forEach(s -> claims.add(s.job()));
    Map<UUID, JobState> status;
    try {
      status = store.claimStatus(claims);
    } catch (SQLException | RuntimeException e) {
      // Could not look: try them again (a fenced write matches nothing, a written one is found next
      // time).
      busy.addAll(missing);
      return;
    }
    for (Outcome.Succeeded s : missing) {
      JobState state = status.get(s.job().id());
      if (state == JobState.RUNNING) {
        busy.add(s); // skipped: another transaction holds the row
      } else if (state != null) {
        done(
            s,
            label(
                state,
                "succeeded")); // written (by this statement, or an earlier try whose reply was
        // lost)
      } else {
        log.warn(
            "job {} attempt {} was no longer this worker's claim; its success was not recorded",
            s.job().id(),
            s.job().attempt());
        done(s, NOT_RECORDED);
      }
    }
  }

  /**
   * A batch failed on its data: split it until the job that cannot be written is found, fail that job
   * with the reason, write the others.
   */
  private void isolate(
      List<Outcome.Succeeded> batch,
      List<Outcome.Succeeded> busy,
      Exception cause,
      boolean skipLocked) {
    if (batch.size() == 1) {
      Outcome.Succeeded poisoned = batch.get(0);
      ClaimedJob job = poisoned.job();
      String reason = "output is not storable: " + describe(cause);
      log.error("job {}: {}; failing it", job.id(), reason);
      String errorJson = ErrorEntries.entry(
          store.codec(),
          job,
          workerId,
          "unstorable_output",
          cause.getClass().getName(),
          reason,
          null);
      String label = record(new Outcome.Failed(job, errorJson));
      metrics.completed(job.type(), label, Duration.ofNanos(poisoned.durationNanos()));
      return;
    }
    int half = batch.size() / 2;
    List<Outcome.Succeeded> left = new ArrayList<>(batch.subList(0, half));
    List<Outcome.Succeeded> right = new ArrayList<>(batch.subList(half, batch.size()));
    writeSuccesses(left, busy, skipLocked);
    writeSuccesses(right, busy, skipLocked);
  }

  private void done(Outcome.Succeeded s, String label) {
    held.remove(s.job());
    metrics.completed(s.job().type(), label, Duration.ofNanos(s.durationNanos()));
  }

  private static List<Completion> completions(List<Outcome.Succeeded> batch) {
    List<Completion> list = new ArrayList<>(batch.size());
    for (Outcome.Succeeded s : batch) {
      list.add(Completion.of(s.job(), s.outputJson()));
    }
    return list;
  }

  // ---------------------------------------------------------------- other outcomes, one at a time

  /**
   * One fenced write to a running job; returns the state it wrote, or null if it matched nothing. Only
   * {@link #record} makes them (tests hand {@link #write} one that misbehaves on purpose).
   */
  @FunctionalInterface
  interface Write {
    JobState run() throws SQLException;
  }

  /**
   * Writes one outcome on the calling thread and returns its metric label, from what the statement
   * wrote: the intent's label, {@code cancelled} if the statement found the job's cancellation asked, or
   * {@link #NOT_RECORDED} if the job was no longer this claim's. Transient errors are retried with
   * backoff while the worker runs (the job stays held and heartbeated meanwhile); a write whose earlier
   * try may have committed is checked with the claim status. Other errors are not retried: the job is
   * left to rescue. Never throws; the job leaves {@link HeldJobs} once the write is settled.
   */
  String write(ClaimedJob job, Intent intent, Write write) {
    long backoffMs = 50;
    int stillOurs = 0;
    boolean ambiguous = false;
    boolean lifted = false;
    try {
      while (true) {
        try {
          JobState state = lifting(lifted, write::run);
          if (state == null) {
            // Matched nothing: the job is no longer this claim's, or an earlier try committed
            // and its reply was lost (the row carries our token), or the claim still holds it.
            // Only the first is "not recorded"; the last is tried again, never dropped while the
            // heartbeat could keep it.
            JobState now = store.claimStatus(List.of(job)).get(job.id());
            if (now == JobState.RUNNING) {
              if (++stillOurs > STILL_OURS_TRIES) {
                log.error(
                    "outcome '{}' of job {} matched nothing {} times although the claim still holds the"
                        + " job; the job is left to rescue",
                    intent.label,
                    job.id(),
                    STILL_OURS_TRIES);
                return "error";
              }
              log.warn(
                  "outcome '{}' of job {} matched nothing although the claim still holds the job; writing"
                      + " it again",
                  intent.label,
                  job.id());
              if (!pause(backoffMs)) {
                return "error";
              }
              backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
              continue;
            }
            state = ambiguous
                ? now
                : null; // a row left by this claim's own earlier try, if there was one
          }
          if (state == null) {
            log.warn(
                "job {} attempt {} was no longer this worker's claim; its outcome '{}' was not recorded",
                job.id(),
                job.attempt(),
                intent.label);
            return NOT_RECORDED;
          }
          return label(state, intent.label);
        } catch (SQLException | RuntimeException e) {
          if (!lifted && StatementTimeoutLift.isCancel(e)) {
            lifted = true;
            log.warn(
                "recording outcome '{}' of job {} was cancelled ({}): a statement timeout of the"
                    + " database or role? Written again with the timeout lifted for that one transaction",
                intent.label,
                job.id(),
                e.getMessage());
            continue;
          }
          if (!isTransient(e)) {
            log.error(
                "could not record outcome '{}' of job {} ({}); the job is left to rescue",
                intent.label,
                job.id(),
                describe(e));
            return "error";
          }
          ambiguous = true;
          if ((stopping || writesBounded) && System.nanoTime() > stopDeadline) {
            log.error(
                "could not record outcome '{}' of job {} before shutdown ({}); rescue returns it to the queue",
                intent.label,
                job.id(),
                e.getMessage());
            return "error";
          }
          log.warn(
              "recording outcome '{}' of job {} failed ({}); retrying in {} ms",
              intent.label,
              job.id(),
              e.getMessage(),
              backoffMs);
          if (!pause(backoffMs)) {
            return "error";
          }
          backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
        }
      }
    } finally {
      held.remove(job);
    }
  }

  /**
   * Gives claimed jobs that never started back to the queue (a prefetch held too long, the buffer at
   * shutdown, claims whose reply was lost). Returns how many were given back now. A job whose row another
   * transaction holds (the give-back skips locked rows, so one such row does not hold up the rest or the
   * caller), or whose give-back failed on a transient error, stays held (the heartbeat keeps it, marked
   * as not started) and is given back on the completer's thread once its row is free: never left running
   * for rescue to count an attempt it did not make. A job that is no longer this claim's is let go.
   */
  int unclaim(List<ClaimedJob> jobs) {
    if (jobs.isEmpty()) {
      return 0;
    }
    GiveBack result = giveBack(jobs);
    if (!result.again().isEmpty()) {
      for (ClaimedJob job : result.again()) {
        if (held.get(job.id()) == null) {
          held.add(
              List.of(job)); // a claim whose reply was lost was never held: hold it while it waits
        }
      }
      giveBacks.addAll(result.again());
      log.info(
          "{} of {} claimed jobs could not be given back yet (row held by another transaction); trying again",
          result.again().size(),
          jobs.size());
    }
    return result.given();
  }

  /** What one give-back did: how many jobs went back, and the jobs still this claim's to try again. */
  private record GiveBack(int given, List<ClaimedJob> again) {}

  /**
   * One give-back of {@code jobs}; every job it settles (given back, or no longer this claim's) leaves
   * {@link HeldJobs}. Never throws.
   */
  private GiveBack giveBack(List<ClaimedJob> jobs) {
    Map<UUID, JobState> written;
    try {
      written = store.unclaim(workerId, jobs);
    } catch (SQLException | RuntimeException e) {
      if (!isTransient(e)) {
        log.warn(
            "could not give {} claimed jobs back ({}); rescue returns them",
            jobs.size(),
            describe(e));
        jobs.forEach(held::remove);
        return new GiveBack(0, List.of());
      }
      log.warn(
          "giving {} claimed jobs back failed ({}); trying again", jobs.size(), e.getMessage());
      return new GiveBack(0, jobs);
    }
    int given = written.size();
    List<ClaimedJob> again = new ArrayList<>();
    List<ClaimedJob> missing = new ArrayList<>();
    for (ClaimedJob job : jobs) {
      if (!written.containsKey(job.id())) {
        missing.add(job);
      }
    }
    if (!missing.isEmpty()) {
      Map<UUID, JobState> status;
      try {
        status = store.claimStatus(missing);
      } catch (SQLException | RuntimeException e) {
        status =
            null; // could not look: try them all again (one already written then matches nothing)
      }
      for (ClaimedJob job : missing) {
        JobState state = status == null ? JobState.RUNNING : status.get(job.id());
        if (state == JobState.RUNNING) {
          again.add(job); // still this claim's: its row was locked
        } else if (state != null) {
          given++; // an earlier try's reply was lost: the row carries this claim's token
        } // else no longer this claim's (rescued, cancelled, claimed again): nothing to give back
      }
    }
    Set<UUID> keep = new HashSet<>();
    again.forEach(j -> keep.add(j.id()));
    for (ClaimedJob job : jobs) {
      if (!keep.contains(job.id())) {
        held.remove(job);
      }
    }
    return new GiveBack(given, again);
  }

  /**
   * On the completer's thread: tries the waiting give-backs again when their backoff is over. At
   * shutdown, past the deadline, the ones left are let go (rescue gives back a job the heartbeat last
   * marked as not started without counting an attempt).
   */
  private void retryGiveBacks() {
    if (giveBacks.isEmpty() || System.nanoTime() - nextGiveBackAt < 0) {
      return;
    }
    List<ClaimedJob> waiting = new ArrayList<>();
    for (ClaimedJob job; (job = giveBacks.poll()) != null; ) {
      waiting.add(job);
    }
    GiveBack result = giveBack(waiting);
    if (result.again().isEmpty()) {
      giveBackBackoffMs = 0;
      if (result.given() > 0) {
        log.info("{} claimed jobs given back once their rows were free", result.given());
      }
      return;
    }
    if (stopping && System.nanoTime() > stopDeadline) {
      log.error(
          "could not give {} claimed jobs back before shutdown (their rows stay locked by other transactions);"
              + " rescue returns them",
          result.again().size());
      result.again().forEach(held::remove);
      return;
    }
    giveBacks.addAll(result.again());
    giveBackBackoffMs = Math.min(Math.max(giveBackBackoffMs * 2, 20), 1_000);
    nextGiveBackAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(giveBackBackoffMs);
  }

  // ---------------------------------------------------------------- writes while a job runs

  /**
   * Clears the {@code prefetched} mark of {@code job}, which a lane is about to start (see
   * {@link PrefetchMarks}: lanes starting marked jobs at the same time share one statement). True if
   * the job still runs under its claim; false if not (the worker no longer holds it: do not run it).
   *
   * @throws SQLException if the statement carrying the job failed (the caller gives the job back)
   */
  boolean clearPrefetchedMark(ClaimedJob job) throws SQLException {
    return prefetchMarks.clear(job);
  }

  /**
   * Records a handler's progress (which also renews its job's heartbeat). Written at once on the
   * handler's thread, not queued for the completer's thread: {@link RunningJob} already throttles it,
   * the dashboard shows it live, and written before the handler returns it can never land after the
   * job's outcome. A write from a claim that is no longer the job's changes nothing. Never throws an
   * {@link SQLException}: progress is informational, a handler must not fail because it could not be
   * shown.
   */
  void progress(ClaimedJob job, int percent, String message) {
    try {
      store.progress(job, percent, message);
    } catch (SQLException e) {
      log.warn("could not record progress of job {}: {}", job.id(), e.getMessage());
    }
  }

  /** Renews the heartbeat of a running job ({@code ctx.heartbeat()}), at once on the caller's thread. */
  void heartbeat(ClaimedJob job) {
    try {
      store.heartbeat(job);
    } catch (SQLException e) {
      log.warn("could not record heartbeat of job {}: {}", job.id(), e.getMessage());
    }
  }

  /**
   * Writes the success of {@code job} in the handler's own {@code transaction}
   * ({@code ctx.complete(connection, output)}, {@code SUCCEED_ONE}), so that it commits or rolls back
   * with the handler's work; never batched, since the batch runs in a transaction of its own. The
   * lane settles it once the handler has returned ({@link #settleInTransaction}).
   *
   * @return false if the job no longer runs that claim (nothing was written)
   */
  boolean succeedInTransaction(Connection transaction, ClaimedJob job, String outputJson)
      throws SQLException {
    return store.succeed(transaction, job, outputJson);
  }

  /** Where a success written in the handler's own transaction stands once the handler has returned. */
  enum InTransaction {
    /** The transaction committed: the job succeeded, and has left {@link HeldJobs}. */
    COMMITTED,
    /** The claim still runs the job (the transaction rolled back): the caller records another outcome. */
    ROLLED_BACK,
    /** It could not be told; the job has left {@link HeldJobs}, and rescue settles it if need be. */
    UNKNOWN
  }

  /**
   * After a handler that completed its job in its own transaction has returned: did that transaction
   * commit? The claim token tells: if the job no longer runs this claim, the success was written.
   */
  InTransaction settleInTransaction(ClaimedJob job) {
    boolean stillRunning;
    try {
      stillRunning = store.isRunning(job);
    } catch (SQLException e) {
      log.warn(
          "could not check the in-transaction completion of job {}: {}", job.id(), e.getMessage());
      held.remove(job); // rescue settles it if it did not commit
      return InTransaction.UNKNOWN;
    }
    if (stillRunning) {
      return InTransaction.ROLLED_BACK;
    }
    held.remove(job);
    return InTransaction.COMMITTED;
  }

  /** The label of a write that left the job in {@code state}, meant as {@code intended}. */
  static String label(JobState state, String intended) {
    if (state == JobState.CANCELLED && !intended.equals("cancelled")) {
      return "cancelled";
    }
    return intended;
  }

  /** Runs {@code write}, free of the server's statement timeout if {@code lifted} ({@link StatementTimeoutLift}). */
  private static <T> T lifting(boolean lifted, StatementTimeoutLift.SqlWork<T> write)
      throws SQLException {
    return lifted ? StatementTimeoutLift.call(write) : write.run();
  }

  /**
   * Transient: worth trying the same write again. Connection errors (SQLState class 08, or none with an
   * I/O cause), the server shutting down (57P), lock and statement timeouts (55P03, 57014),
   * serialization failures and deadlocks (40001, 40P01), too many connections (53300), a read-only
   * server during a fail-over (25006), and the pool's
   * own time-outs.
   */
  static boolean isTransient(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLTransientException
          || t instanceof SQLRecoverableException
          || t instanceof java.io.IOException) {
        return true;
      }
      if (t instanceof SQLException sql) {
        String state = sql.getSQLState();
        if (state == null) {
          continue;
        }
        if (state.startsWith("08")
            || state.startsWith("57P")
            || state.startsWith("53")
            || state.startsWith("40")
            || state.equals("55P03")
            || state.equals("57014")
            || state.equals("25006")) {
          return true;
        }
        return false;
      }
    }
    return e instanceof SQLException sql && sql.getSQLState() == null;
  }

  private static String describe(Throwable e) {
    String message = String.valueOf(e.getMessage());
    if (e instanceof SQLException sql && sql.getSQLState() != null) {
      return message + " (SQLState " + sql.getSQLState() + ")";
    }
    return message;
  }

  private boolean pause(long millis) {
    try {
      Thread.sleep(millis);
      return true;
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * The worker is shutting down: outcome writes that fail from now on are retried until {@code deadline}
   * (System.nanoTime()) at most, so lanes end even when the database has gone away; the jobs are then
   * left to rescue. Successes keep being written until {@link #close}.
   */
  void stopRetryingAfter(long deadline) {
    stopDeadline = deadline;
    writesBounded = true;
  }

  /**
   * Writes what is queued, trying for at most {@code timeout} if the database fails, then stops; writes
   * still retrying on lanes give up at the same deadline.
   */
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
