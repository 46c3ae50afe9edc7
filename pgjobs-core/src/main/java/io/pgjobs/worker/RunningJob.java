package io.pgjobs.worker;

import io.pgjobs.JobContext;
import io.pgjobs.PgJobsException;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimedJob;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

/**
 * One attempt of one job: the {@link JobContext} its handler sees, and the runtime's handle on it. What
 * the handler writes to its job (progress, heartbeat, completion in its own transaction) is written by the
 * {@link JobCompleter}, with this attempt's claim.
 */
final class RunningJob implements JobContext {
  private final ClaimedJob job;
  private final JobCompleter completer;
  private final PayloadCodec codec;
  private final DataSource dataSource;
  private final String workerId;
  private final long progressThrottleNanos;
  private final HttpSupport http;
  private final io.pgjobs.JobClient children;

  private volatile Thread thread;
  /** System.nanoTime() by which the handler must end; meaningful while {@link #inHandler}. */
  private volatile long deadlineNanos;

  private volatile boolean deadlineSet;
  private volatile StopReason stopReason;
  private volatile long stopRequestedAtNanos;
  private volatile boolean completedInTransaction;
  private boolean inHandler; // guarded by this
  /** Set by whoever records this attempt's outcome: the lane, or the watchdog letting a stuck handler go. */
  private final AtomicBoolean outcomeTaken = new AtomicBoolean();

  private volatile boolean letGo;

  private final Object progressLock = new Object();
  private long lastProgressWrite;
  private boolean progressPending;
  private int pendingPercent;
  private String pendingMessage;

  RunningJob(
      ClaimedJob job,
      JobCompleter completer,
      PayloadCodec codec,
      DataSource dataSource,
      String workerId,
      long progressThrottleNanos,
      HttpSupport http,
      io.pgjobs.JobClient children) {
    this.children = children;
    this.http = http;
    this.job = job;
    this.completer = completer;
    this.codec = codec;
    this.dataSource = dataSource;
    this.workerId = workerId;
    this.progressThrottleNanos = progressThrottleNanos;
  }

  ClaimedJob job() {
    return job;
  }

  void bindThread(Thread thread) {
    this.thread = thread;
  }

  /**
   * Asks the handler to stop: sets the flag it can poll and, while the handler runs, interrupts its
   * thread. The first reason wins.
   */
  synchronized void stop(StopReason reason) {
    if (stopReason == null) {
      stopRequestedAtNanos = System.nanoTime();
      stopReason = reason;
    }
    if (inHandler && thread != null) {
      thread.interrupt();
    }
  }

  /** The handler must end by {@code nanoTime} (System.nanoTime()), or the watchdog stops it. */
  void setDeadline(long nanoTime) {
    deadlineNanos = nanoTime;
    deadlineSet = true;
  }

  /** True if the handler runs past its deadline and has not been asked to stop yet. */
  boolean isOverdue(long now) {
    return deadlineSet && stopReason == null && now - deadlineNanos > 0;
  }

  /**
   * True if the handler was asked to stop more than {@code graceNanos} ago and is still running: it
   * ignores interrupts.
   */
  synchronized boolean isStuck(long now, long graceNanos) {
    return inHandler && stopReason != null && now - stopRequestedAtNanos > graceNanos;
  }

  /** The handler starts; a stop requested before now interrupts it at once. */
  synchronized void enterHandler() {
    inHandler = true;
    if (stopReason != null && thread != null) {
      thread.interrupt();
    }
  }

  /** The handler has returned: no interrupts from now on, and any pending one is cleared. */
  synchronized void leaveHandler() {
    inHandler = false;
    deadlineSet = false;
    Thread.interrupted();
  }

  StopReason stopReason() {
    return stopReason;
  }

  /**
   * Claims the right to record this attempt's outcome; true for exactly one caller. The lane asks when
   * its handler returns; the watchdog asks when it lets a stuck handler go.
   */
  boolean takeOutcome() {
    return outcomeTaken.compareAndSet(false, true);
  }

  /** True while the handler is running (between enterHandler and leaveHandler). */
  synchronized boolean inHandler() {
    return inHandler;
  }

  /** The watchdog gave up on this handler: its outcome was recorded without it. */
  void markLetGo() {
    letGo = true;
  }

  boolean letGo() {
    return letGo;
  }

  /** System.nanoTime() by which the handler should have ended. */
  long deadlineNanos() {
    return deadlineNanos;
  }

  boolean completedInTransaction() {
    return completedInTransaction;
  }

  @Override
  public UUID jobId() {
    return job.id();
  }

  @Override
  public String jobType() {
    return job.type();
  }

  @Override
  public String queue() {
    return job.queue();
  }

  @Override
  public int attempt() {
    return job.attempt();
  }

  @Override
  public int maxAttempts() {
    return job.maxAttempts();
  }

  @Override
  public int snoozes() {
    return job.snoozes();
  }

  @Override
  public String context() {
    return job.context();
  }

  @Override
  public String workerId() {
    return workerId;
  }

  @Override
  public void progress(int percent, String message) {
    if (percent < 0 || percent > 100) {
      throw new IllegalArgumentException(
          "progress percent must be between 0 and 100, was " + percent);
    }
    synchronized (progressLock) {
      long now = System.nanoTime();
      boolean due = percent == 100
          || lastProgressWrite == 0
          || now - lastProgressWrite >= progressThrottleNanos;
      if (!due) {
        progressPending = true;
        pendingPercent = percent;
        pendingMessage = message;
        return;
      }
      progressPending = false;
      lastProgressWrite = now;
    }
    completer.progress(job, percent, message);
  }

  /** Writes the last throttled progress value, if one is waiting. Called before the job ends. */
  void flushProgress() {
    int percent;
    String message;
    synchronized (progressLock) {
      if (!progressPending) {
        return;
      }
      progressPending = false;
      percent = pendingPercent;
      message = pendingMessage;
    }
    completer.progress(job, percent, message);
  }

  @Override
  public void heartbeat() {
    completer.heartbeat(job);
  }

  @Override
  public boolean isCancelled() {
    return stopReason != null;
  }

  @Override
  public <C> io.pgjobs.EnqueuedJob enqueue(
      io.pgjobs.JobType<C> type, C payload, io.pgjobs.EnqueueOptions options) {
    return children.enqueue(type, payload, asChild(options));
  }

  @Override
  public <C> io.pgjobs.EnqueuedJob enqueue(
      Connection transaction,
      io.pgjobs.JobType<C> type,
      C payload,
      io.pgjobs.EnqueueOptions options) {
    return children.enqueue(transaction, type, payload, asChild(options));
  }

  private io.pgjobs.EnqueueOptions asChild(io.pgjobs.EnqueueOptions options) {
    io.pgjobs.EnqueueOptions o = options == null ? io.pgjobs.EnqueueOptions.DEFAULTS : options;
    return new io.pgjobs.EnqueueOptions(
        o.queue(),
        o.priority(),
        o.maxAttempts(),
        o.runAt(),
        o.delay(),
        o.context(),
        o.idempotencyKey(),
        o.timeout(),
        job.id(),
        o.unique(),
        o.capability());
  }

  @Override
  public io.pgjobs.JobHttp http() {
    return http.forJob(job);
  }

  @Override
  public DataSource dataSource() {
    return dataSource;
  }

  @Override
  public void complete(Connection transaction, Object output) throws SQLException {
    if (transaction.getAutoCommit()) {
      throw new IllegalStateException(
          "complete(connection, output) needs a transaction: call connection.setAutoCommit(false) first");
    }
    flushProgress();
    String json = codec.encodeOutput(output);
    if (!completer.succeedInTransaction(transaction, job, json)) {
      throw new PgJobsException(
          "job " + job.id() + " attempt " + job.attempt() + " is no longer running on this worker"
              + " (rescued, timed out or cancelled meanwhile); roll back");
    }
    completedInTransaction = true;
  }
}
