package io.pgjobs.spring;

import io.pgjobs.worker.JobWorker;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the auto-configured {@link JobWorker} when the application context has started (every bean,
 * handlers included, is ready) and closes it when the context stops: the worker stops claiming, lets
 * running jobs finish within {@code pgjobs.worker.shutdown-grace}, and gives the rest back to their
 * queue, before the data source is closed. A closed worker cannot start again, so a context that is
 * stopped and started again runs no worker until it is refreshed.
 */
public final class PgJobsWorkerLifecycle implements SmartLifecycle {
  /**
   * The phase, {@code SmartLifecycle.DEFAULT_PHASE}: the worker starts last and stops first, before the
   * web server's graceful shutdown ({@code DEFAULT_PHASE - 1024}); enqueueing does not need the worker,
   * so requests go on being served while running jobs finish.
   */
  public static final int PHASE = SmartLifecycle.DEFAULT_PHASE;

  private final JobWorker worker;
  private volatile boolean running;

  /** The lifecycle of {@code worker}. */
  public PgJobsWorkerLifecycle(JobWorker worker) {
    this.worker = worker;
  }

  @Override
  public void start() {
    worker.start();
    running = true;
  }

  /** Graceful: returns when the worker has closed (at most the shutdown grace plus a few seconds). */
  @Override
  public void stop() {
    running = false;
    worker.close();
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return PHASE;
  }

  /** The worker this lifecycle drives. */
  public JobWorker worker() {
    return worker;
  }
}
