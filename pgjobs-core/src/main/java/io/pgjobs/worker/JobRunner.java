package io.pgjobs.worker;

import io.pgjobs.DiscardJobException;
import io.pgjobs.JobError;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.SnoozeJobException;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.Completion;
import io.pgjobs.store.JobStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.random.RandomGenerator;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;
import tools.jackson.core.JacksonException;

/**
 * Runs one claimed job on the calling (virtual) thread and records its outcome: success goes to the
 * {@link CompletionBatcher}; every other outcome is one guarded statement, written at once.
 */
final class JobRunner {
  private static final Logger log = LoggerFactory.getLogger(JobRunner.class);
  private static final int STACK_HEAD_LINES = 12;
  private static final int MAX_MESSAGE_CHARS = 4_000;
  private static final Duration OUTCOME_RETRY_WINDOW = Duration.ofSeconds(60);
  /**
   * The metric outcome of an attempt whose guarded write matched nothing: the job was no longer this
   * attempt's (rescued meanwhile, or finished by someone else).
   */
  static final String NOT_RECORDED = "not_recorded";
  /** How often the watchdog looks for handlers past their timeout. */
  static final long WATCHDOG_PERIOD_MS = 20;

  private final JobStore store;
  private final Map<String, HandlerRegistration<?>> handlers;
  private final CompletionBatcher completions;
  private final ScheduledExecutorService timers;
  private final JobMetrics metrics;
  private final String workerId;
  private final Duration unknownTypeGrace;
  private final long progressThrottleNanos;
  private final RandomGenerator random;
  private final Set<RunningJob> running = ConcurrentHashMap.newKeySet();
  private volatile boolean anyEarlyCancels;
  /** Cancel notifications for jobs not (yet) running here; bounded, oldest dropped first. */
  private final Map<UUID, Boolean> earlyCancels =
      new java.util.LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<UUID, Boolean> eldest) {
          return size() > 10_000;
        }
      };

  JobRunner(
      JobStore store,
      Map<String, HandlerRegistration<?>> handlers,
      CompletionBatcher completions,
      ScheduledExecutorService timers,
      JobMetrics metrics,
      String workerId,
      Duration unknownTypeGrace,
      Duration progressThrottle,
      RandomGenerator random) {
    this.store = store;
    this.handlers = handlers;
    this.completions = completions;
    this.timers = timers;
    this.metrics = metrics;
    this.workerId = workerId;
    this.unknownTypeGrace = unknownTypeGrace;
    this.progressThrottleNanos = progressThrottle.toNanos();
    this.random = random;
  }

  /**
   * Starts the timeout watchdog: one periodic task that stops handlers past their deadline. One
   * scheduled task per job (and its cancellation) would cost a lock and often a thread wake-up per
   * job, which at tens of thousands of jobs a second is a large part of the runtime's own cost; the
   * price is that a timeout fires up to {@link #WATCHDOG_PERIOD_MS} ms late.
   */
  void startWatchdog() {
    timers.scheduleWithFixedDelay(this::stopOverdue, WATCHDOG_PERIOD_MS, WATCHDOG_PERIOD_MS, TimeUnit.MILLISECONDS);
  }

  private void stopOverdue() {
    long now = System.nanoTime();
    for (RunningJob job : running) {
      if (job.isOverdue(now)) {
        job.stop(StopReason.TIMEOUT);
      }
    }
  }

  /** The jobs running now. */
  Set<RunningJob> running() {
    return running;
  }

  /**
   * Stops the handler of job {@code id} if it runs here: its cancellation was asked. A notification can
   * overtake the job it names (claimed, not yet started on its thread): such ids are remembered for a
   * while, and {@link #run} stops the job as soon as it starts.
   */
  void cancel(UUID id) {
    boolean found = false;
    for (RunningJob job : running) {
      if (job.job().id().equals(id)) {
        found = true;
        log.info("job {} cancelled while running; stopping its handler", id);
        job.stop(StopReason.CANCEL);
      }
    }
    if (!found) {
      synchronized (earlyCancels) {
        earlyCancels.put(id, Boolean.TRUE);
        anyEarlyCancels = true;
      }
    }
  }

  private boolean cancelledBeforeStart(UUID id) {
    if (!anyEarlyCancels) {
      return false; // the usual case, without taking a lock every job would contend for
    }
    synchronized (earlyCancels) {
      boolean found = earlyCancels.remove(id) != null;
      anyEarlyCancels = !earlyCancels.isEmpty();
      return found;
    }
  }

  /** Runs {@code job} to its outcome. Never throws. */
  void run(ClaimedJob job) {
    RunningJob attempt = new RunningJob(job, store, workerId, progressThrottleNanos);
    attempt.bindThread(Thread.currentThread());
    running.add(attempt);
    if (cancelledBeforeStart(job.id())) {
      attempt.stop(StopReason.CANCEL);
    }
    MDC.put("job_id", job.id().toString());
    MDC.put("job_type", job.type());
    MDC.put("attempt", Integer.toString(job.attempt()));
    MDC.put("worker_id", workerId);
    try {
      HandlerRegistration<?> registration = handlers.get(job.type());
      if (registration == null) {
        unknownType(job);
        return;
      }
      runHandler(attempt, registration);
    } finally {
      running.remove(attempt);
      Thread.interrupted(); // a late timeout or stop interrupt must not leak into the next task
      MDC.clear();
    }
  }

  private <P> void runHandler(RunningJob attempt, HandlerRegistration<P> registration) {
    ClaimedJob job = attempt.job();
    metrics.started(job.type());
    long started = System.nanoTime();
    String outcome = runAndRecord(attempt, registration);
    if (outcome.equals(NOT_RECORDED) && attempt.completedInTransaction()) {
      // The handler recorded its success in its own committed transaction and then failed: the failure
      // matched nothing, the job did succeed.
      outcome = "succeeded";
    }
    metrics.completed(job.type(), outcome, Duration.ofNanos(System.nanoTime() - started));
  }

  /** Runs the handler under its timeout and records the outcome; returns the outcome's metric label. */
  private <P> String runAndRecord(RunningJob attempt, HandlerRegistration<P> registration) {
    ClaimedJob job = attempt.job();
    JobType<P> type = registration.type();
    P payload;
    try {
      payload = store.codec().decode(job.payloadJson(), type.payloadClass());
    } catch (JacksonException e) {
      // A payload that does not fit its class never will: no point retrying.
      return finish(job, JobState.FAILED, error(job, "invalid_payload", e,
          "payload does not fit " + type.payloadClass().getName() + ": " + e.getOriginalMessage()));
    }
    attempt.setDeadline(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutOf(job, type)));
    Object output = null;
    Throwable failure = null;
    attempt.enterHandler();
    try {
      output = registration.handler().run(attempt, payload);
    } catch (Throwable t) {
      failure = t;
    } finally {
      // From here on no stop request interrupts this thread: an interrupt during the runtime's own
      // writes would close their connection's socket and lose the outcome.
      attempt.leaveHandler();
    }
    attempt.flushProgress();
    if (failure == null) {
      return succeeded(attempt, output);
    }
    if (failure instanceof SnoozeJobException snooze) {
      return write(() -> store.snooze(job.id(), job.attempt(), snooze.delay().toMillis()), job, "snoozed");
    }
    if (failure instanceof DiscardJobException discard) {
      String errorJson = error(job, "discarded", discard, null);
      return write(() -> store.finish(job.id(), job.attempt(), JobState.FAILED, errorJson), job, "discarded");
    }
    return failed(attempt, type, failure);
  }

  private String succeeded(RunningJob attempt, Object output) {
    ClaimedJob job = attempt.job();
    if (attempt.completedInTransaction()) {
      // The handler recorded its success in its own transaction. If that transaction rolled back the
      // job is still running here: its effects are gone too, so this attempt did not happen.
      boolean stillRunning;
      try {
        stillRunning = store.isRunning(job.id(), job.attempt());
      } catch (SQLException e) {
        log.warn("could not check the in-transaction completion of job {}: {}", job.id(), e.getMessage());
        return "error";
      }
      if (!stillRunning) {
        return "succeeded";
      }
      return failed(attempt, null, new IllegalStateException(
          "the handler completed the job in a transaction that did not commit"), "transaction_rolled_back");
    }
    if (attempt.stopReason() == StopReason.CANCEL) {
      // Cancellation was asked and the handler returned (a cooperative handler returns early): the
      // job ends cancelled, as asked, not succeeded.
      return finish(job, JobState.CANCELLED, error(job, "cancelled", null, "cancelled while running"));
    }
    String json;
    try {
      json = store.codec().encodeOutput(output);
    } catch (JacksonException e) {
      return failed(attempt, null, e, "invalid_output");
    }
    completions.submit(new Completion(job.id(), job.attempt(), json));
    return "succeeded";
  }

  private String failed(RunningJob attempt, JobType<?> type, Throwable failure) {
    StopReason reason = attempt.stopReason();
    if (reason == StopReason.SHUTDOWN) {
      ClaimedJob job = attempt.job();
      log.info("job {} interrupted by shutdown; back to the queue", job.id());
      return write(
          () -> store.release(job.id(), job.attempt(), error(attempt.job(), "shutdown", failure,
              "interrupted: the worker shut down before the job finished")),
          job,
          "released");
    }
    if (reason == StopReason.CANCEL) {
      ClaimedJob job = attempt.job();
      return finish(job, JobState.CANCELLED, error(job, "cancelled", failure, "cancelled while running"));
    }
    if (reason == StopReason.TIMEOUT) {
      return failed(attempt, type, failure, "timeout");
    }
    return failed(attempt, type, failure, "error");
  }

  private String failed(RunningJob attempt, JobType<?> type, Throwable failure, String kind) {
    ClaimedJob job = attempt.job();
    String message =
        "timeout".equals(kind)
            ? "timed out after " + Duration.ofMillis(timeoutOf(job, type)) + " (" + failure + ")"
            : null;
    String errorJson = error(job, kind, failure, message);
    if (job.attempt() >= job.maxAttempts()) {
      log.warn("job {} failed on its last attempt ({}/{}): {}", job.id(), job.attempt(), job.maxAttempts(), failure.toString());
      return finish(job, JobState.FAILED, errorJson);
    }
    JobType<?> resolved = type != null ? type : handlers.get(job.type()).type();
    long delayMs = resolved.retryPolicy().delay(job.attempt(), random).toMillis();
    log.info("job {} attempt {}/{} failed ({}); retrying in {} ms", job.id(), job.attempt(), job.maxAttempts(), failure.toString(), delayMs);
    return write(() -> store.retryLater(job.id(), job.attempt(), delayMs, errorJson), job, "retrying");
  }

  private long timeoutOf(ClaimedJob job, JobType<?> type) {
    if (job.timeoutMs() != null) {
      return job.timeoutMs();
    }
    JobType<?> resolved = type != null ? type : handlers.get(job.type()).type();
    return resolved.timeout().toMillis();
  }

  private void unknownType(ClaimedJob job) {
    Duration age = Duration.between(job.createdAt(), Instant.now());
    String known = handlers.keySet().stream().sorted().collect(Collectors.joining(", "));
    if (age.compareTo(unknownTypeGrace) < 0) {
      // Another worker may know this type: give it back without spending an attempt, and look again
      // later. After the grace period, fail it loudly rather than let it wait forever.
      long retryMs = Math.max(1_000, Math.min(30_000, unknownTypeGrace.minus(age).toMillis()));
      log.warn("no handler for job type '{}' (job {}) on worker {}; known: {}; will look again in {} ms",
          job.type(), job.id(), workerId, known, retryMs);
      write(() -> store.snooze(job.id(), job.attempt(), retryMs), job, "snoozed");
      return;
    }
    String message = "no handler registered for job type '" + job.type() + "' on worker " + workerId
        + " (known types: " + (known.isEmpty() ? "none" : known) + ") after a grace period of "
        + unknownTypeGrace;
    log.error(message + "; job {} failed", job.id());
    metrics.completed(job.type(), "failed", Duration.ZERO);
    finish(job, JobState.FAILED, errorEntry(job, "unknown_type", "io.pgjobs.UnknownJobType", message, null));
  }

  private String finish(ClaimedJob job, JobState state, String errorJson) {
    String outcome = state == JobState.CANCELLED ? "cancelled" : "failed";
    return write(() -> store.finish(job.id(), job.attempt(), state, errorJson), job, outcome);
  }

  /**
   * Runs one outcome write, retrying through a database outage for up to {@link #OUTCOME_RETRY_WINDOW}.
   * Retrying is safe: every write is guarded by state and attempt, so one that did commit before its
   * reply was lost matches nothing the second time. A job that is no longer ours is logged, not thrown;
   * if the window runs out the job stays 'running' and rescue returns it to the queue.
   */
  private String write(SqlWrite write, ClaimedJob job, String outcome) {
    long deadline = System.nanoTime() + OUTCOME_RETRY_WINDOW.toNanos();
    long backoffMs = 50;
    while (true) {
      try {
        if (!write.run()) {
          log.warn("job {} attempt {} was no longer running on this worker; its outcome '{}' was not recorded",
              job.id(), job.attempt(), outcome);
          return NOT_RECORDED;
        }
        return outcome;
      } catch (SQLException | RuntimeException e) {
        if (System.nanoTime() > deadline) {
          log.error("could not record outcome '{}' of job {} ({}); rescue will return it to the queue",
              outcome, job.id(), e.getMessage());
          return "error";
        }
        log.warn("recording outcome '{}' of job {} failed ({}); retrying in {} ms", outcome, job.id(), e.getMessage(), backoffMs);
        try {
          Thread.sleep(backoffMs);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return "error";
        }
        backoffMs = Math.min(backoffMs * 2, 2_000);
      }
    }
  }

  private String error(ClaimedJob job, String kind, Throwable failure, String message) {
    String text = message != null ? message : failure == null ? kind : String.valueOf(failure.getMessage());
    return errorEntry(job, kind, failure == null ? null : failure.getClass().getName(), text, stackHead(failure));
  }

  private String errorEntry(ClaimedJob job, String kind, String errorClass, String message, String stackHead) {
    String text = message == null ? "" : message;
    if (text.length() > MAX_MESSAGE_CHARS) {
      text = text.substring(0, MAX_MESSAGE_CHARS) + "…";
    }
    return store.codec().write(List.of(
        new JobError(job.attempt(), Instant.now(), kind, errorClass, text, stackHead, workerId)));
  }

  private static String stackHead(Throwable failure) {
    if (failure == null) {
      return null;
    }
    StringWriter out = new StringWriter();
    failure.printStackTrace(new PrintWriter(out));
    return out.toString().lines().limit(STACK_HEAD_LINES).collect(Collectors.joining("\n"));
  }

  @FunctionalInterface
  private interface SqlWrite {
    boolean run() throws SQLException;
  }
}
