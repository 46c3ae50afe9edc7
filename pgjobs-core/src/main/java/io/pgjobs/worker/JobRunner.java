package io.pgjobs.worker;

import io.pgjobs.DiscardJobException;
import io.pgjobs.JobType;
import io.pgjobs.SnoozeJobException;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.random.RandomGenerator;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;
import tools.jackson.core.JacksonException;

/**
 * The executor: runs one claimed job on the calling (virtual) thread under its timeout, keeps the
 * registry of running handlers that timeouts, cancellations and shutdown stop, decides how each attempt
 * ends and hands that {@link Outcome} to the {@link JobCompleter}, which alone writes it. The runner
 * writes nothing to a job itself: it reads (a job's age, through the store) and decides.
 *
 * <p><b>Stuck handlers are let go.</b> A handler asked to stop (timeout, cancellation, shutdown) that is
 * still running {@code stuckGrace} later ignores interrupts. The watchdog then records the outcome the
 * stop called for without it (a timeout is a failed attempt, retried per policy), stops heartbeating the
 * job, and reports the lane as stuck (log, {@link #stuckLanes()}, the worker's row) instead of hiding
 * it; whatever the handler does when it finally returns is not recorded.
 */
final class JobRunner {
  private static final Logger log = LoggerFactory.getLogger(JobRunner.class);
  /** How often the watchdog looks for handlers past their timeout. */
  static final long WATCHDOG_PERIOD_MS = 20;

  /** For reads only (the codec, a job's age): every write goes through {@link #completer}. */
  private final ExecutionStore store;

  private final Map<String, HandlerRegistration<?>> handlers;
  private final JobCompleter completer;
  private final HeldJobs held;
  private final ScheduledExecutorService timers;
  private final JobMetrics metrics;
  private final String workerId;
  private final Duration unknownTypeGrace;
  private final long progressThrottleNanos;
  private final long stuckGraceNanos;
  private final RandomGenerator random;
  private final HttpSupport http;
  private final io.pgjobs.JobClient children;
  private final io.pgjobs.tracing.JobTracing tracing;
  private final Set<RunningJob> running = ConcurrentHashMap.newKeySet();
  private final AtomicInteger stuckLanes = new AtomicInteger();
  /** The threads writing the outcomes of let-go handlers, until each has written (see awaitLetGoWrites). */
  private final Set<Thread> letGoWrites = ConcurrentHashMap.newKeySet();
  /** Once set, every handler that registers is stopped for this reason at once (shutdown). */
  private volatile StopReason stopAll;

  JobRunner(
      ExecutionStore store,
      Map<String, HandlerRegistration<?>> handlers,
      JobCompleter completer,
      HeldJobs held,
      ScheduledExecutorService timers,
      JobMetrics metrics,
      String workerId,
      Duration unknownTypeGrace,
      Duration progressThrottle,
      Duration stuckGrace,
      RandomGenerator random,
      HttpSupport http,
      io.pgjobs.JobClient children,
      io.pgjobs.tracing.JobTracing tracing) {
    this.store = store;
    this.handlers = handlers;
    this.completer = completer;
    this.held = held;
    this.timers = timers;
    this.metrics = metrics;
    this.workerId = workerId;
    this.unknownTypeGrace = unknownTypeGrace;
    this.progressThrottleNanos = progressThrottle.toNanos();
    this.stuckGraceNanos = stuckGrace.toNanos();
    this.random = random;
    this.http = http;
    this.children = children;
    this.tracing = tracing;
  }

  /**
   * Starts the watchdog: one periodic task that stops handlers past their deadline and lets go of those
   * that ignore the stop. One scheduled task per job (and its cancellation) would cost a lock and often
   * a thread wake-up per job, which at tens of thousands of jobs a second is a large part of the
   * runtime's own cost; the price is that a timeout fires up to {@link #WATCHDOG_PERIOD_MS} ms late.
   */
  void startWatchdog() {
    timers.scheduleWithFixedDelay(
        this::watch, WATCHDOG_PERIOD_MS, WATCHDOG_PERIOD_MS, TimeUnit.MILLISECONDS);
  }

  private void watch() {
    long now = System.nanoTime();
    for (RunningJob job : running) {
      if (job.isOverdue(now)) {
        job.stop(StopReason.TIMEOUT);
      } else if (job.isStuck(now, stuckGraceNanos) && job.takeOutcome()) {
        letGo(job);
      }
    }
  }

  /** Records the outcome of a handler that ignores its stop, without waiting for it. */
  private void letGo(RunningJob attempt) {
    ClaimedJob job = attempt.job();
    attempt.markLetGo();
    running.remove(attempt);
    int stuck = stuckLanes.incrementAndGet();
    StopReason reason = attempt.stopReason();
    log.error(
        "job {} (type {}) ignored its stop ({}) for {}; recording its outcome without it and letting it go"
            + " ({} stuck lanes on this worker)",
        job.id(),
        job.type(),
        reason,
        Duration.ofNanos(stuckGraceNanos),
        stuck);
    Thread writer = Thread.ofVirtual().name("pgjobs-let-go-" + job.id()).unstarted(() -> {
      try {
        Outcome outcome = switch (reason) {
          case TIMEOUT ->
            failed(
                attempt,
                null,
                new IllegalStateException(
                    "the handler ignored the interrupt at its timeout and was let go"),
                "timeout");
          case CANCEL ->
            new Outcome.Cancelled(
                job,
                error(
                    job,
                    "cancelled",
                    null,
                    "cancelled while running; the handler ignored the interrupt"));
          case SHUTDOWN, LOST, CLAIM_LOST -> release(job, reason, null);
        };
        metrics.completed(job.type(), completer.record(outcome), Duration.ZERO);
      } finally {
        letGoWrites.remove(Thread.currentThread());
      }
    });
    letGoWrites.add(writer);
    writer.start();
  }

  /**
   * Waits until every let-go handler's outcome has been written, or until {@code deadlineNanos}
   * ({@link System#nanoTime()}). A shutdown calls it before closing the completer: the write runs on a
   * thread of its own, and a process that exits while it is in flight would leave the job running until
   * rescue instead of released at once.
   */
  void awaitLetGoWrites(long deadlineNanos) throws InterruptedException {
    for (Thread writer : List.copyOf(letGoWrites)) {
      long left = deadlineNanos - System.nanoTime();
      if (left <= 0 || !writer.join(Duration.ofNanos(left))) {
        return;
      }
    }
  }

  /** The job types this runner has handlers for. */
  java.util.Set<String> handlerTypes() {
    return handlers.keySet();
  }

  /**
   * Builds every registered handler's payload reader now (see {@link io.pgjobs.json.PayloadCodec#prepare}),
   * so that a worker's first job of each type is not the one that waits for it.
   */
  void prepareHandlers() {
    for (HandlerRegistration<?> registration : handlers.values()) {
      store.codec().prepare(registration.type().payloadClass());
    }
  }

  /** Handlers that ignored their stop and still occupy their lane. */
  int stuckLanes() {
    return stuckLanes.get();
  }

  /** The jobs running now. */
  Set<RunningJob> running() {
    return running;
  }

  /**
   * Stops every running handler for {@code reason}, and every handler that starts from now on: a lane
   * that took its job just before this call registers it afterwards and is stopped then.
   */
  void stopAll(StopReason reason) {
    stopAll = reason;
    running.forEach(job -> job.stop(reason));
  }

  /** Lets handlers start normally again (liveness restored after {@link StopReason#LOST}). */
  void resume() {
    if (stopAll == StopReason.LOST) {
      stopAll = null;
    }
  }

  /**
   * Stops the handler of job {@code id} if it runs here: its cancellation was asked. A job this worker
   * holds but has not started yet is marked, and stopped as soon as it starts. Ids of jobs this worker
   * does not hold are ignored (most cancel notifications are about other workers' jobs); should a
   * notification overtake the claim's reply, the heartbeat's reply carries the flag.
   */
  void cancel(UUID id) {
    for (RunningJob job : running) {
      if (job.job().id().equals(id)) {
        log.info("job {} cancelled while running; stopping its handler", id);
        job.stop(StopReason.CANCEL);
        return;
      }
    }
    HeldJob h = held.get(id);
    if (h != null) {
      h.requestCancel();
    }
  }

  /**
   * Stops the handlers of jobs that are no longer this worker's claim ({@link StopReason#CLAIM_LOST}): each
   * given with the claim token the worker held it by, so that a later claim of the same job, running here
   * meanwhile, is left alone. Jobs not running here are ignored (a lane that starts one finds its claim
   * gone when it clears the job's prefetched mark).
   */
  void abandon(Map<UUID, Long> lost) {
    for (RunningJob job : running) {
      Long token = lost.get(job.job().id());
      if (token != null && token == job.job().claimToken()) {
        log.warn(
            "job {} attempt {} is no longer this worker's claim (it was rescued while the worker was"
                + " silent past the dead-worker threshold: a paused process?); stopping its handler",
            job.job().id(),
            job.job().attempt());
        job.stop(StopReason.CLAIM_LOST);
      }
    }
  }

  /** Runs {@code job} to its outcome. Never throws. */
  void run(HeldJob heldJob) {
    ClaimedJob job = heldJob.job();
    if (!heldJob.startUnmarked() && !clearPrefetchedMark(heldJob)) {
      return;
    }
    RunningJob attempt = new RunningJob(
        job,
        completer,
        store.codec(),
        store.dataSource(),
        workerId,
        progressThrottleNanos,
        http,
        children);
    attempt.bindThread(Thread.currentThread());
    running.add(attempt);
    StopReason all = stopAll;
    if (all != null) {
      attempt.stop(all); // registered after stopAll() looked: stop it here
    }
    if (heldJob.cancelRequested()) {
      attempt.stop(StopReason.CANCEL);
    }
    MDC.put("job_id", job.id().toString());
    MDC.put("job_type", job.type());
    MDC.put("attempt", Integer.toString(job.attempt()));
    MDC.put("worker_id", workerId);
    try {
      HandlerRegistration<?> registration = handlers.get(job.type());
      if (registration == null) {
        attempt.takeOutcome();
        unknownType(job);
        return;
      }
      runHandler(attempt, registration);
    } finally {
      running.remove(attempt);
      if (attempt.letGo()) {
        int stuck = stuckLanes.decrementAndGet();
        log.warn(
            "the handler of job {} that was let go has returned ({} stuck lanes left)",
            job.id(),
            stuck);
      }
      Thread.interrupted(); // a late timeout or stop interrupt must not leak into the next task
      MDC.clear();
    }
  }

  /**
   * The job waited long enough in the buffer for a heartbeat to mark it {@code prefetched} (rescue gives
   * such jobs back with their attempt if the worker dies). Clear the mark before the handler runs; if
   * that cannot be written, give the job back unstarted rather than run it under a wrong mark. The clears
   * of lanes starting marked jobs at the same time share one statement ({@link PrefetchMarks}).
   */
  private boolean clearPrefetchedMark(HeldJob heldJob) {
    ClaimedJob job = heldJob.job();
    held.startMarked(heldJob);
    try {
      if (completer.clearPrefetchedMark(job)) {
        return true;
      }
      log.warn("job {} was no longer this worker's claim when its lane took it; not run", job.id());
      held.remove(job);
      return false;
    } catch (SQLException | RuntimeException e) {
      log.warn(
          "could not mark job {} started ({}); giving it back unstarted", job.id(), e.getMessage());
      completer.unclaim(java.util.List.of(job));
      return false;
    }
  }

  private <P> void runHandler(RunningJob attempt, HandlerRegistration<P> registration) {
    ClaimedJob job = attempt.job();
    metrics.started(job.type());
    // One line per start and finish at debug (the CLI's --log-level debug); MDC holds the job's
    // fields.
    log.debug(
        "job {} ({}) attempt {}/{} started",
        job.id(),
        job.type(),
        job.attempt(),
        job.maxAttempts());
    long started = System.nanoTime();
    // The attempt's span is current from here to its outcome, so the handler's own spans nest under
    // it.
    io.pgjobs.tracing.JobTracing.Run span = tracing.startRun(job);
    String label = null;
    boolean returned = false;
    try {
      label = runAndRecord(attempt, registration, started, span);
      returned = true;
    } finally {
      // null: a batched success, or a handler the watchdog let go (it recorded the outcome itself).
      span.end(
          !returned ? "error" : label != null ? label : attempt.letGo() ? "let_go" : "succeeded");
    }
    long nanos = System.nanoTime() - started;
    if (label != null) {
      metrics.completed(job.type(), label, Duration.ofNanos(nanos));
    }
    if (log.isDebugEnabled()) {
      log.debug(
          "job {} ({}) attempt {}/{} finished in {} ms: {}",
          job.id(),
          job.type(),
          job.attempt(),
          job.maxAttempts(),
          nanos / 1_000_000,
          label == null ? "succeeded, written with a batch (or let go: see the warning)" : label);
    }
  }

  /**
   * Runs the handler under its timeout and hands the outcome to the completer. Returns the outcome's
   * metric label, or null when the completer counts it (a batched success) or the watchdog did (the
   * handler was let go).
   */
  private <P> String runAndRecord(
      RunningJob attempt,
      HandlerRegistration<P> registration,
      long started,
      io.pgjobs.tracing.JobTracing.Run span) {
    ClaimedJob job = attempt.job();
    JobType<P> type = registration.type();
    P payload;
    try {
      payload = store.codec().decode(job.payloadJson(), type.payloadClass());
    } catch (JacksonException e) {
      // A payload that does not fit its class never will: no point retrying.
      span.failure(e);
      attempt.takeOutcome();
      return completer.record(new Outcome.Failed(
          job,
          error(
              job,
              "invalid_payload",
              e,
              "payload does not fit " + type.payloadClass().getName() + ": "
                  + e.getOriginalMessage())));
    }
    attempt.setDeadline(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutOf(job, type)));
    Object output = null;
    Throwable failure = null;
    attempt.enterHandler();
    try {
      output = registration.handler().run(attempt, payload);
    } catch (Throwable t) {
      failure = t;
      if (!(t instanceof SnoozeJobException)) {
        span.failure(t); // a snooze is a request, not a failure
      }
    } finally {
      // From here on no stop request interrupts this thread: an interrupt during the runtime's own
      // writes would close their connection's socket and lose the outcome.
      attempt.leaveHandler();
    }
    if (!attempt.takeOutcome()) {
      log.warn(
          "job {}: the handler returned after it was let go; its outcome is not recorded",
          job.id());
      return null;
    }
    attempt.flushProgress();
    if (attempt.completedInTransaction()) {
      return completedInTransaction(attempt, failure);
    }
    return completer.record(outcome(attempt, type, output, failure, started));
  }

  /** How an attempt whose handler returned {@code output} or threw {@code failure} ends. */
  private Outcome outcome(
      RunningJob attempt, JobType<?> type, Object output, Throwable failure, long started) {
    ClaimedJob job = attempt.job();
    if (failure == null) {
      return succeeded(attempt, output, started);
    }
    if (failure instanceof SnoozeJobException snooze) {
      // -1: until the jobs it waits for end (ExecutionStore.snooze).
      return new Outcome.Snooze(
          job, snooze.waitsForDependencies() ? -1 : snooze.delay().toMillis());
    }
    if (failure instanceof DiscardJobException discard) {
      return new Outcome.Discarded(job, error(job, "discarded", discard, null));
    }
    return failed(attempt, type, failure);
  }

  /**
   * The handler recorded its success in its own transaction ({@code ctx.complete(connection, ...)}). If
   * that transaction committed, the job succeeded, whatever the handler did afterwards (even throw). If
   * it rolled back, the job still runs this claim here: its effects are gone too, so the attempt failed.
   */
  private String completedInTransaction(RunningJob attempt, Throwable failure) {
    return switch (completer.settleInTransaction(attempt.job())) {
      case COMMITTED -> "succeeded";
      case UNKNOWN -> "error";
      case ROLLED_BACK ->
        completer.record(
            failure != null
                ? failed(attempt, null, failure)
                : failed(
                    attempt,
                    null,
                    new IllegalStateException(
                        "the handler completed the job in a transaction that did not commit"),
                    "transaction_rolled_back"));
    };
  }

  private Outcome succeeded(RunningJob attempt, Object output, long started) {
    ClaimedJob job = attempt.job();
    if (attempt.stopReason() == StopReason.CANCEL) {
      // Cancellation was asked and the handler returned (a cooperative handler returns early): the
      // job ends cancelled, as asked, not succeeded.
      return new Outcome.Cancelled(job, error(job, "cancelled", null, "cancelled while running"));
    }
    String json;
    try {
      json = store.codec().encodeOutput(output);
    } catch (JacksonException e) {
      return failed(attempt, null, e, "invalid_output");
    }
    return new Outcome.Succeeded(job, json, System.nanoTime() - started);
  }

  private Outcome failed(RunningJob attempt, JobType<?> type, Throwable failure) {
    StopReason reason = attempt.stopReason();
    if (reason == StopReason.SHUTDOWN
        || reason == StopReason.LOST
        || reason == StopReason.CLAIM_LOST) {
      return release(attempt.job(), reason, failure);
    }
    if (reason == StopReason.CANCEL) {
      ClaimedJob job = attempt.job();
      return new Outcome.Cancelled(
          job, error(job, "cancelled", failure, "cancelled while running"));
    }
    if (reason == StopReason.TIMEOUT) {
      return failed(attempt, type, failure, "timeout");
    }
    return failed(attempt, type, failure, "error");
  }

  private Outcome release(ClaimedJob job, StopReason reason, Throwable failure) {
    String why = switch (reason) {
      case LOST ->
        "interrupted: the worker lost contact with the database for too long and stopped its jobs";
      case CLAIM_LOST ->
        "interrupted: the job was rescued while its worker was silent (no longer its claim)";
      default -> "interrupted: the worker shut down before the job finished";
    };
    log.info("job {} interrupted ({}); back to the queue", job.id(), reason);
    return new Outcome.Released(
        job, error(job, reason == StopReason.SHUTDOWN ? "shutdown" : "worker_lost", failure, why));
  }

  private Outcome failed(RunningJob attempt, JobType<?> type, Throwable failure, String kind) {
    ClaimedJob job = attempt.job();
    String message = "timeout".equals(kind)
        ? "timed out after " + Duration.ofMillis(timeoutOf(job, type)) + " (" + failure + ")"
        : null;
    String errorJson = error(job, kind, failure, message);
    if (job.attempt() >= job.maxAttempts()) {
      log.warn(
          "job {} failed on its last attempt ({}/{}): {}",
          job.id(),
          job.attempt(),
          job.maxAttempts(),
          failure.toString());
      return new Outcome.Failed(job, errorJson);
    }
    JobType<?> resolved = type != null ? type : handlers.get(job.type()).type();
    long delayMs = resolved.retryPolicy().delay(job.attempt(), random).toMillis();
    log.info(
        "job {} attempt {}/{} failed ({}); retrying in {} ms",
        job.id(),
        job.attempt(),
        job.maxAttempts(),
        failure.toString(),
        delayMs);
    return new Outcome.Retry(job, delayMs, errorJson);
  }

  private long timeoutOf(ClaimedJob job, JobType<?> type) {
    if (job.timeoutMs() != null) {
      return job.timeoutMs();
    }
    JobType<?> resolved = type != null ? type : handlers.get(job.type()).type();
    return resolved.timeout().toMillis();
  }

  /**
   * A claimed job this worker has no handler for. The worker's claims are filtered to its registered types
   * ({@code ExecutionStore}'s type filter), so this is a safety net for a store that claims every type: give
   * the job back within the grace, fail it after. Jobs no worker runs are failed by the maintenance leader
   * ({@code UnknownTypeFailer}) without being claimed.
   */
  private void unknownType(ClaimedJob job) {
    // The job's age by the database's clock, which wrote created_at: the worker's own clock may be
    // minutes off, and a job would then fail at once (clock ahead) or wait too long (behind).
    Duration age;
    try {
      age = store.createdAgo(job);
    } catch (SQLException | RuntimeException e) {
      age = Duration.ZERO; // cannot tell: look again later rather than fail a job that may be new
      log.debug(
          "could not read the age of job {} ({}); treating it as within the grace",
          job.id(),
          e.getMessage());
    }
    if (age == null) {
      log.warn(
          "job {} was no longer this worker's claim when its unknown type was handled", job.id());
      held.remove(job);
      return;
    }
    String known = handlers.keySet().stream().sorted().collect(Collectors.joining(", "));
    if (age.compareTo(unknownTypeGrace) < 0) {
      // Another worker may know this type: give it back without spending an attempt, and look again
      // later. After the grace period, fail it loudly rather than let it wait forever.
      long retryMs =
          Math.max(1_000, Math.min(30_000, unknownTypeGrace.minus(age).toMillis()));
      log.warn(
          "no handler for job type '{}' (job {}) on worker {}; known: {}; will look again in {} ms",
          job.type(),
          job.id(),
          workerId,
          known,
          retryMs);
      completer.record(new Outcome.Snooze(job, retryMs));
      return;
    }
    String message = "no handler registered for job type '" + job.type() + "' on worker " + workerId
        + " (known types: " + (known.isEmpty() ? "none" : known) + ") after a grace period of "
        + unknownTypeGrace;
    log.error(message + "; job {} failed", job.id());
    String label = completer.record(new Outcome.Failed(
        job,
        ErrorEntries.entry(
            store.codec(),
            job,
            workerId,
            "unknown_type",
            "io.pgjobs.UnknownJobType",
            message,
            null)));
    metrics.completed(job.type(), label, Duration.ZERO);
  }

  private String error(ClaimedJob job, String kind, Throwable failure, String message) {
    return ErrorEntries.of(store.codec(), job, workerId, kind, failure, message);
  }
}
