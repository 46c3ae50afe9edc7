package io.pgjobs.worker;

import io.pgjobs.replication.DatabaseRole;
import io.pgjobs.service.BackgroundService;
import io.pgjobs.store.ClaimCursor;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The claim loop of one queue.
 *
 * <p><b>Claim ahead, sized by the lanes' speed.</b> The poller claims the jobs its free slots can start
 * plus a <em>prefetch</em>: about {@link #PREFETCH_WINDOW_NANOS} worth of work at the speed its lanes
 * run this queue's jobs (its finish rate while they are all busy), at most the claim batch per
 * statement; it grows at each claim that finds the lanes short, so a worker meeting a backlog reaches
 * full claims within a few statements. Fast jobs therefore go through in claims of hundreds (one round trip and one commit for many jobs, and the next claim happens while the
 * prefetched jobs run); slow jobs get no prefetch at all, so they are not hoarded by one worker while
 * another is idle. Prefetched jobs are {@code running} in the database (claimed by this worker, their
 * heartbeat renewed); their timeout starts when their handler starts. Jobs that wait in the buffer
 * longer than the prefetch hold (default 1 s; the lanes are slower than the rate said) go back to the
 * queue at once, so claiming ahead never keeps jobs from another worker with free lanes; a shutdown gives
 * the rest back.
 *
 * <p><b>Claims reconcile.</b> A claim that fails may have committed without its reply arriving (socket
 * timeout, the connection dying mid-claim): its jobs are then {@code running} under this worker but
 * unknown to it. Before the next claim the poller gives back every job of its queue that the database
 * says this worker holds and {@link HeldJobs} does not know, attempt not counted.
 *
 * <p><b>Lanes.</b> Up to {@code concurrency} virtual threads ("lanes") each take the next job from the
 * local buffer and run it, then the next, until the buffer is empty; the poller starts lanes for new
 * jobs as slots free. A lane that finishes signals the poller, which claims again when the buffer runs
 * low. It waits otherwise: for a notification, a free slot, or the poll interval. A database error backs
 * off and tries again; the loop only ends on {@link #stop()}.
 */
final class QueuePoller implements BackgroundService {
  private static final Logger log = LoggerFactory.getLogger(QueuePoller.class);
  /** True after a claim failed because the database is read-only, until a claim succeeds (poller thread only). */
  private boolean waitingForWrites;

  private static final long MAX_ERROR_BACKOFF_MS = 5_000;
  /** Prefetch this much work, at the lanes' speed: enough to cover the next claim's round trip. */
  static final long PREFETCH_WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(25);
  /** A prefetched job not started within this time goes back to the queue. */
  private final long prefetchHoldNanos;
  /** The finish rate is measured over windows of this length. */
  private static final long RATE_WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final String queue;
  private final int concurrency;
  private final int claimBatch;
  private final Duration pollInterval;
  private final ExecutionStore store;
  private final JobRunner runner;
  private final JobCompleter completions;
  private final HeldJobs held;
  private final ExecutorService handlers;
  private final String workerId;
  private final Semaphore slots;
  private final Semaphore wakeUp = new Semaphore(0);
  /** Claimed jobs not yet started, in claim order. */
  private final ConcurrentLinkedQueue<HeldJob> buffer = new ConcurrentLinkedQueue<>();

  private final AtomicInteger buffered = new AtomicInteger();
  private final LongAdder finished = new LongAdder();
  /** Time the lanes have spent running jobs (handler and outcome), for the lanes' speed. */
  private final LongAdder busyNanos = new LongAdder();

  private volatile boolean moreExpected;
  private volatile boolean stopping;
  /** Where this queue's claims have got to (see ClaimCursor). Guarded by claimLock. */
  private final ClaimCursor cursor = new ClaimCursor();
  /** Set while the worker cannot heartbeat: it may be presumed dead any moment, so it claims nothing. */
  private volatile boolean suspended;
  /**
   * A claim (or a success handing jobs over) failed and may have committed: reconcile before the next
   * claim. Written without the claim lock by {@link #reconcileLater}, read under it.
   */
  private volatile boolean reconcileNeeded;

  private volatile long claims; // written under claimLock
  /** Null unless the worker was given one; set before the poller starts. */
  private PickupListener pickup;

  private Thread thread;

  // Rate estimate: written by the poller thread only (read by the listener's claims too).
  private volatile long windowStart = System.nanoTime();
  private volatile long finishedAtWindowStart;
  private volatile long busyAtWindowStart;
  /** What the lanes could run in a prefetch window at their speed in the last window with finishes. */
  private volatile int lastLanesCanRun;

  private volatile int prefetch;
  /** One claim at a time per queue: the poller's, or one made on a notification by the listener. */
  private final ReentrantLock claimLock = new ReentrantLock();
  /** Which queues have limits (null: none has). */
  private LimitedQueues limitedQueues;
  /**
   * After a limited claim that got fewer jobs than lanes were free, look again this soon: the limits
   * held jobs back (or none waited), and a slot freed by another worker or the rate's next start sends
   * no notification.
   */
  static final long LIMITED_RECHECK_MS = 100;
  // Guarded by claimLock.
  /** The partition the last limited claim ended at: the round-robin goes on after it. */
  private String lastPartition;
  /** The last claim was a limited one that got fewer jobs than free lanes. */
  private volatile boolean limitedShort;

  private long lastClaimAt;
  private boolean lastClaimFull;
  private int lastClaimSize;

  QueuePoller(
      String queue,
      int concurrency,
      int claimBatch,
      Duration pollInterval,
      ExecutionStore store,
      JobRunner runner,
      JobCompleter completions,
      HeldJobs held,
      ExecutorService handlers,
      String workerId,
      Duration prefetchHold) {
    this.queue = queue;
    this.concurrency = concurrency;
    this.claimBatch = claimBatch;
    this.pollInterval = pollInterval;
    this.store = store;
    this.runner = runner;
    this.completions = completions;
    this.held = held;
    this.handlers = handlers;
    this.workerId = workerId;
    this.prefetchHoldNanos = prefetchHold.toNanos();
    this.slots = new Semaphore(concurrency);
  }

  String queue() {
    return queue;
  }

  /** Sets the worker's view of which queues have limits (null: none has); before {@link #start}. */
  void limitedQueues(LimitedQueues view) {
    this.limitedQueues = view;
  }

  /** Sets the worker's {@link PickupListener} (null: none); before {@link #start}. */
  void pickupListener(PickupListener listener) {
    this.pickup = listener;
  }

  /** Claim statements run so far (for tests and diagnostics). */
  long claims() {
    return claims;
  }

  /** Lanes running now (each runs one job at a time). */
  int running() {
    return concurrency - slots.availablePermits();
  }

  /** Stops or resumes claiming (the worker's liveness is in doubt, or restored). */
  void suspend(boolean suspended) {
    this.suspended = suspended;
    if (!suspended) {
      signal();
    }
  }

  @Override
  public synchronized QueuePoller start() {
    if (thread == null && !stopping) {
      thread = Thread.ofPlatform().daemon().name("pgjobs-poller-" + queue).start(this::run);
    }
    return this;
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

  /** Stops claiming and starting buffered jobs; running jobs are not touched. */
  @Override
  public void stop() {
    stopping = true;
    signal();
  }

  /** Waits for the poller's thread to end; running jobs are not waited for. */
  @Override
  public boolean awaitStopped(Duration timeout) {
    Thread t;
    synchronized (this) {
      t = thread;
    }
    return BackgroundService.join(t, timeout);
  }

  /**
   * After {@link #stop()} and the poller thread has ended: the claimed jobs that never started. The
   * caller gives them back to the queue.
   */
  List<ClaimedJob> drainBuffer() {
    claimLock.lock();
    try {
      List<ClaimedJob> left = new ArrayList<>();
      HeldJob job;
      while ((job = buffer.poll()) != null) {
        buffered.decrementAndGet();
        left.add(job.job());
      }
      return left;
    } finally {
      claimLock.unlock();
    }
  }

  private void run() {
    long errorBackoffMs = 100;
    while (!stopping) {
      startLanes();
      updatePrefetch();
      giveBackHeldTooLong();
      if (completions.isBacklogged() || suspended) {
        await(pollInterval.toMillis());
        continue;
      }
      if (!isLimited() || resumesAtCursor()) {
        probeIfDue(); // a limited queue's claim may resume at the cursor as well
      }
      ClaimOutcome outcome = null;
      Exception failure = null;
      claimLock.lock();
      try {
        outcome = claimIfDue(null);
      } catch (SQLException | RuntimeException e) {
        failure = e;
        reconcileNeeded = true;
      } finally {
        claimLock.unlock();
      }
      if (failure != null) {
        // Back off without holding the claim lock (a shutdown's drain must not wait for it).
        if (DatabaseRole.isReadOnlyError(failure)) {
          // A standby (or read-only sessions): every claim fails alike until a promotion, or until
          // new connections reach the new primary. Say so once, not at every retry.
          if (!waitingForWrites) {
            waitingForWrites = true;
            log.warn(
                "queue '{}': the database is read-only (a standby in recovery, or default_transaction_read_only"
                    + " is on); the worker claims nothing and waits, trying again every {} ms at most, until it is"
                    + " promoted or the database URL reaches the primary",
                queue,
                MAX_ERROR_BACKOFF_MS);
          } else {
            log.debug(
                "queue '{}': the database is still read-only; claiming again in {} ms",
                queue,
                errorBackoffMs);
          }
        } else {
          log.warn(
              "claiming from queue '{}' failed ({}); retrying in {} ms",
              queue,
              failure.getMessage(),
              errorBackoffMs);
        }
        await(errorBackoffMs);
        errorBackoffMs = Math.min(errorBackoffMs * 2, MAX_ERROR_BACKOFF_MS);
        continue;
      }
      if (waitingForWrites) {
        waitingForWrites = false;
        log.info("queue '{}': the database accepts writes again; claiming resumes", queue);
      }
      errorBackoffMs = 100;
      if (outcome != ClaimOutcome.FULL) {
        // Not due (no free slot, enough buffered), or the queue is drained for now: the lanes
        // finish the buffer; a free slot, a notification or the poll interval brings the next
        // claim. While jobs wait in the buffer, look again soon enough to give back those held too
        // long.
        long waitMs = pollInterval.toMillis();
        if (limitedShort) {
          waitMs = Math.min(waitMs, LIMITED_RECHECK_MS);
        }
        if (buffered.get() > 0) {
          waitMs = Math.min(waitMs, TimeUnit.NANOSECONDS.toMillis(prefetchHoldNanos) / 2);
        }
        await(waitMs);
      }
    }
  }

  private enum ClaimOutcome {
    NOT_DUE,
    /** Fewer jobs than asked for: the queue is drained for now. */
    PARTIAL,
    /** As many as asked for: more are probably waiting. */
    FULL
  }

  /**
   * A notification says jobs are ready. If this poller is idle (not claiming right now), claim at once
   * on the listener's connection, from the listener's thread: the backend that just delivered the
   * notification is awake, while waking this poller's thread and another backend would add a
   * millisecond or more to the job's start on an idle machine. Otherwise just wake the poller.
   */
  void notified(Connection listenerConnection) {
    moreExpected = true;
    if (completions.isBacklogged() || suspended || !claimLock.tryLock()) {
      signal();
      return;
    }
    try {
      // Checked under the lock that drainBuffer() takes too: a claim either lands in the buffer
      // before the stopping worker drains it, or does not happen.
      if (stopping) {
        return;
      }
      ClaimOutcome outcome = claimIfDue(listenerConnection);
      if (outcome == ClaimOutcome.FULL) {
        signal(); // more may be waiting: the poller goes on
      }
    } catch (SQLException | RuntimeException e) {
      log.debug(
          "claim on notification for queue '{}' failed ({}); the poller claims",
          queue,
          e.getMessage());
      reconcileNeeded = true;
      signal();
    } finally {
      claimLock.unlock();
    }
  }

  /** How many jobs this poller claims when idle: as many as it has lanes (or the claim batch, if smaller). */
  int idleClaimSize() {
    return claimSize(Math.min(claimBatch, concurrency));
  }

  /**
   * Readies the claim statements for {@link #idleClaimSize()} jobs on the listener's {@code connection},
   * on which {@link #notified} claims ({@link ExecutionStore#prepareClaims}; nothing is claimed), for
   * every queue whose idle claim is that size. A failure is logged and otherwise ignored: the claims then
   * ready themselves as they run.
   */
  void prepareClaims(Connection connection) {
    try {
      store.prepareClaims(connection, idleClaimSize(), workerId);
    } catch (SQLException | RuntimeException e) {
      log.debug(
          "readying the claims of queue '{}' on the listener's connection failed ({})",
          queue,
          e.getMessage());
    }
  }

  /**
   * Gives back the jobs of this queue that the database says this worker holds and that it does not
   * know: the jobs of a claim that committed while its reply was lost. Runs under the claim lock, so no
   * claim of this queue is in flight, and every job a claim returned is in {@link HeldJobs} already.
   */
  private void reconcile() throws SQLException {
    // Not while a success batch may be handing jobs over: a child it handed a moment ago may not be
    // in HeldJobs yet, and would be given back while the worker runs it.
    completions.whileNoHandOffIsUnderWay(() -> {
      List<ClaimedJob> unknown = store.unknownClaims(workerId, queue, held.idsOf(queue));
      reconcileNeeded = false;
      if (!unknown.isEmpty()) {
        cursor.rewind(unknown); // given back behind the cursor
        int back = completions.unclaim(unknown);
        log.warn(
            "queue '{}': a claim (or a success handing jobs over) whose reply was lost had taken {}"
                + " jobs; {} given back to the queue",
            queue,
            unknown.size(),
            back);
      }
      return null;
    });
  }

  /**
   * Runs the cursor's probe when due (see {@link ClaimCursor}): the first claimable job of every level,
   * read without the claim lock, so that claims on notifications go on meanwhile however long the probe
   * takes (it steps over the dead entries a long transaction elsewhere keeps). Its result is applied
   * under the lock. A failed probe is retried at the next interval; claims do not depend on it.
   */
  private void probeIfDue() {
    long start = System.nanoTime();
    ClaimCursor.ProbeStart probeStart;
    claimLock.lock();
    try {
      if (!cursor.probeDue(start)) {
        return;
      }
      probeStart = cursor.probeStart(start);
    } finally {
      claimLock.unlock();
    }
    List<ClaimCursor.LevelStart> firsts;
    try {
      firsts = store.firstClaimable(queue);
    } catch (SQLException | RuntimeException e) {
      log.debug(
          "probing queue '{}' for jobs behind the claim cursor failed ({})", queue, e.getMessage());
      firsts = List.of();
    }
    long took = System.nanoTime() - start;
    claimLock.lock();
    try {
      cursor.probed(probeStart, firsts, took);
    } finally {
      claimLock.unlock();
    }
  }

  /**
   * Jobs that have waited in the buffer longer than the prefetch hold: the lanes are slower
   * than the rate that sized the prefetch. They go back to the queue (another worker may have free
   * lanes), and this poller stops claiming ahead until the rate says otherwise.
   */
  private void giveBackHeldTooLong() {
    HeldJob head = buffer.peek();
    if (head == null || System.nanoTime() - head.claimedAtNanos() < prefetchHoldNanos) {
      return;
    }
    List<ClaimedJob> back = new ArrayList<>();
    long now = System.nanoTime();
    HeldJob job;
    while ((job = buffer.peek()) != null && now - job.claimedAtNanos() >= prefetchHoldNanos) {
      if (buffer.remove(job)) { // a lane may have taken it meanwhile
        buffered.decrementAndGet();
        back.add(job.job());
      }
    }
    prefetch = 0;
    if (!back.isEmpty()) {
      claimLock.lock();
      try {
        cursor.rewind(back); // given back behind the cursor: the next claim starts with them
      } finally {
        claimLock.unlock();
      }
      int given = completions.unclaim(back);
      log.debug(
          "queue '{}': {} prefetched jobs waited over {} ms for a lane; {} given back",
          queue,
          back.size(),
          TimeUnit.NANOSECONDS.toMillis(prefetchHoldNanos),
          given);
    }
  }

  /** Claims if slots or the prefetch need jobs; on {@code connection}, or one from the pool if null. */
  private ClaimOutcome claimIfDue(Connection connection) throws SQLException {
    if (reconcileNeeded) {
      reconcile();
    }
    int free = slots.availablePermits();
    int inBuffer = buffered.get();

    // Claim when slots are free and nothing waits for them, or when the prefetch runs low.
    boolean due = (free > 0 && inBuffer == 0) || (prefetch > 0 && inBuffer * 2 < prefetch);
    if (!due) {
      return ClaimOutcome.NOT_DUE;
    }
    long now = System.nanoTime();
    if (lastClaimFull && inBuffer == 0 && now - lastClaimAt < RATE_WINDOW_NANOS) {
      // The lanes took every job of the last (full) claim within a rate window, and more waits:
      // the prefetch did not cover the time to this claim, so the lanes went short. Grow it now,
      // doubling per claim, not at the window's end: a worker meeting a backlog reaches full claims
      // in a few statements, not after a second of windows whose rate the small claims themselves
      // held down (W3's drain began with claims of 1 to 64 jobs for ~1 s). Capped by what the lanes
      // can run in a prefetch window at the speed they run jobs: slow jobs still get none ahead.
      prefetch =
          Math.max(prefetch, Math.min(lanesCanRun(), Math.max(concurrency, lastClaimSize * 2)));
    }
    int limit = claimSize(Math.min(claimBatch, Math.max(1, free + prefetch - inBuffer)));
    lastClaimAt = now;
    moreExpected = false;
    boolean limited = isLimited();
    List<ClaimedJob> jobs;
    if (limited) {
      // The limited claim (claim_limited): as many as the limits allow of what this poller wants.
      // Jobs it claims ahead count toward the limits until they end, as every claimed job does.
      ExecutionStore.LimitedClaim claim = store.claimLimited(
          connection, queue, limit, workerId, lastPartition, resumesAtCursor() ? cursor : null);
      lastPartition = claim.lastPartition();
      jobs = claim.jobs();
    } else {
      jobs = connection == null
          ? store.claim(queue, limit, workerId, cursor)
          : store.claim(connection, queue, limit, workerId, cursor);
    }
    limitedShort = limited && jobs.size() < limit;
    claims++;
    PickupListener probe = pickup;
    if (probe != null) {
      // Stamped before the ids are gathered, and without a stream: the bench's probe must not add
      // its own cost (a stream pipeline run cold is tens of µs) to the stage it measures.
      long returnedAt = System.nanoTime();
      List<UUID> ids = new ArrayList<>(jobs.size());
      for (ClaimedJob job : jobs) {
        ids.add(job.id());
      }
      probe.claimed(ids, returnedAt, connection != null);
    }
    boolean full = jobs.size() == limit;
    if (log.isDebugEnabled()) {
      log.debug(
          "queue '{}': claimed {} of {} (free slots {}, prefetch {}, buffered {}{})",
          queue,
          jobs.size(),
          limit,
          free,
          prefetch,
          inBuffer,
          connection == null ? "" : ", on notification");
    }
    // A full batch means more is probably waiting: from now on a finishing lane wakes the poller.
    // Set before the jobs start, or a fast job could finish before anyone listens for it.
    moreExpected = full;
    lastClaimFull = full;
    lastClaimSize = jobs.size();
    List<HeldJob> claimed = held.add(jobs);
    buffered.addAndGet(claimed.size());
    buffer.addAll(claimed);
    startLanes();
    return full ? ClaimOutcome.FULL : ClaimOutcome.PARTIAL;
  }

  /**
   * How many children handed over by a success batch (ExecutionSql.SUCCEED_BATCH_HANDING_OFF) this
   * queue takes now: what a claim would take (free lanes and the prefetch, less what waits in the
   * buffer), and at least one per job of the batch that ran in this queue ({@code justFinished}: their
   * lanes are free, or about to be, once the success is handed to the completer). None while stopping
   * or fenced, and none for a limited queue (the hand-off does not count limits).
   */
  int handOffRoom(int justFinished) {
    if (stopping || suspended || isLimited()) {
      return 0;
    }
    return Math.max(justFinished, slots.availablePermits() + prefetch - buffered.get());
  }

  /**
   * Takes children a success batch handed to this worker (already running under its claims in the
   * database, and in {@link HeldJobs}) into the lanes, as a claim's jobs are taken. Returns false,
   * taking none, if the poller is stopping or fenced: the caller gives them back.
   */
  boolean accept(List<HeldJob> jobs) {
    claimLock.lock();
    try {
      if (stopping || suspended) {
        return false;
      }
      buffered.addAndGet(jobs.size());
      buffer.addAll(jobs);
      moreExpected = true;
      startLanes();
      return true;
    } finally {
      claimLock.unlock();
    }
  }

  /**
   * A statement that may have handed this worker jobs of this queue failed, its outcome unknown: look
   * for jobs the database says this worker holds and it does not know before the next claim.
   */
  void reconcileLater() {
    // Not under the claim lock: the completer calls this while it holds its hand-off lock, which a
    // reconcile takes under the claim lock.
    reconcileNeeded = true;
    signal();
  }

  private boolean isLimited() {
    LimitedQueues view = limitedQueues;
    return view != null && view.isLimited(queue);
  }

  private boolean resumesAtCursor() {
    LimitedQueues view = limitedQueues;
    return view != null && view.resumesAtCursor(queue);
  }

  /**
   * The most jobs one claim takes when {@code wanted} (at least 1, at most the claim batch) are wanted:
   * the claim batch if that many are wanted (a busy poller's claim), else the largest of the concurrency
   * (an idle poller's claim) and the sizes of a quarter-octave grid ({@code round(2^(k/4))}: 1, 2, 3, 4,
   * 5, 6, 7, 8, 10, 11, 13, 16, 19, … 512, 609, 724, 861) that is not more than {@code wanted}: never more than
   * wanted, and never less than 84 % of it. Each claim size is a statement of its own, which PostgreSQL
   * plans once per connection only after five executions of it (see {@code ExecutionSql.CLAIM}): some
   * thirty sizes, each run often, keep claims from being planned one by one. A claim a little smaller than
   * wanted costs little: a full claim makes the poller claim again at once. (Powers of two, tried first,
   * could halve a drain's claims.)
   */
  private int claimSize(int wanted) {
    return claimSize(wanted, concurrency, claimBatch);
  }

  /** {@link #claimSize(int)} of a poller with {@code concurrency} lanes and {@code claimBatch}. */
  static int claimSize(int wanted, int concurrency, int claimBatch) {
    if (wanted >= claimBatch) {
      return claimBatch;
    }
    if (wanted == concurrency) {
      return concurrency;
    }
    // The grid's largest size not above wanted (floating point only picks the step; the test checks
    // it).
    int k = (int) Math.floor(4 * Math.log(wanted) / Math.log(2)) + 1;
    int size;
    do {
      size = (int) Math.round(Math.pow(2, k-- / 4.0));
    } while (size > wanted);
    return concurrency < wanted ? Math.max(concurrency, size) : size;
  }

  /**
   * Starts a lane per free slot while jobs wait in the buffer (running lanes take the rest). Not once
   * the poller stops: a claim made on a notification can return after the worker began to shut down
   * its lanes; its jobs stay in the buffer and are given back with the rest.
   */
  private void startLanes() {
    if (stopping || suspended) {
      return; // a fenced worker starts nothing: its claims may be rescued by now
    }
    int wanted = Math.min(slots.availablePermits(), buffered.get());
    for (int i = 0; i < wanted && slots.tryAcquire(); i++) {
      try {
        handlers.execute(this::lane);
      } catch (RejectedExecutionException e) {
        // The executor is shutting down (a stop raced with this claim): the buffered jobs are given
        // back on close.
        slots.release();
        log.debug("not starting a job on queue '{}': the worker is stopping", queue);
        return;
      }
    }
  }

  /** One lane: runs buffered jobs one after another until none is left (or the worker stops). */
  private void lane() {
    try {
      HeldJob job;
      while (!stopping && !suspended && (job = buffer.poll()) != null) {
        if (buffered.decrementAndGet() * 2 < prefetch && moreExpected) {
          signal(); // the prefetch runs low: claim the next batch while this one runs
        }
        PickupListener probe = pickup;
        if (probe != null) {
          probe.started(job.job().id(), System.nanoTime());
        }
        long runFrom = System.nanoTime();
        runner.run(job);
        busyNanos.add(System.nanoTime() - runFrom);
        finished.increment();
      }
    } finally {
      slots.release();
      if (moreExpected || buffered.get() > 0) {
        signal();
      }
    }
  }

  /** Recomputes the prefetch from the lanes' speed in the last window. */
  private void updatePrefetch() {
    long now = System.nanoTime();
    long elapsed = now - windowStart;
    if (elapsed < RATE_WINDOW_NANOS) {
      return;
    }
    long done = finished.sum();
    long busy = busyNanos.sum();
    long n = done - finishedAtWindowStart;
    // What the lanes can run in a prefetch window: the window's finish rate if the lanes were busy
    // all along; more if they stood idle for want of claimed jobs (the rate then says how fast the
    // claims came, not how fast the lanes run).
    int byLanes = n == 0 ? 0 : lanesCanRun(n, busy - busyAtWindowStart);
    // Follow it down at once (slow jobs must not be hoarded), up at most by doubling.
    prefetch = Math.min(byLanes, Math.max(prefetch * 2, concurrency));
    if (n > 0) {
      lastLanesCanRun = byLanes;
    }
    windowStart = now;
    finishedAtWindowStart = done;
    busyAtWindowStart = busy;
  }

  /**
   * How many jobs the lanes can run in {@link #PREFETCH_WINDOW_NANOS}, at most the claim batch: from
   * the jobs finished since the current window began, else from the last window with finishes.
   */
  private int lanesCanRun() {
    long n = finished.sum() - finishedAtWindowStart;
    return n > 0 ? lanesCanRun(n, busyNanos.sum() - busyAtWindowStart) : lastLanesCanRun;
  }

  /** {@code concurrency} lanes, each running {@code n / busy} jobs a nanosecond, for a prefetch window. */
  private int lanesCanRun(long n, long busy) {
    double perNano = (double) n * concurrency / Math.max(1, busy);
    return (int) Math.min(claimBatch, perNano * PREFETCH_WINDOW_NANOS);
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
