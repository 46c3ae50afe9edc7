package io.pgjobs.workflow;

import io.pgjobs.JobContext;
import io.pgjobs.JobHandler;
import io.pgjobs.SnoozeJobException;
import io.pgjobs.store.WorkflowStore;
import java.util.function.Supplier;
import tools.jackson.databind.json.JsonMapper;

/**
 * The job handler of a workflow's runs: executes the {@link Workflow} with a {@link WorkflowContext}
 * over the run's recorded steps; when an execution fails and it was the run's last attempt (or the run was
 * cancelled, or past its deadline), runs the compensations of its done steps, the last first, before the
 * job ends failed.
 * Registered by {@code JobWorker.Builder.workflow}.
 *
 * @param <I> the workflow's input
 */
public final class WorkflowRunner<I> implements JobHandler<I> {
  private final Workflow<I, ?> workflow;
  private final int version;
  private final java.time.Duration deadline;
  private final Supplier<String> schema;
  private final Supplier<JsonMapper> mapper;
  private volatile WorkflowStore store;

  /** Runs {@code workflow}; the schema and mapper are the worker's, read when the first run starts. */
  public WorkflowRunner(
      Workflow<I, ?> workflow, Supplier<String> schema, Supplier<JsonMapper> mapper) {
    this(workflow, 1, schema, mapper);
  }

  /**
   * Runs {@code workflow} at {@code version} (recorded by each run's first execution, see
   * {@link WorkflowContext#version()}); the schema and mapper are the worker's.
   */
  public WorkflowRunner(
      Workflow<I, ?> workflow, int version, Supplier<String> schema, Supplier<JsonMapper> mapper) {
    this(workflow, version, null, schema, mapper);
  }

  /**
   * Runs {@code workflow} at {@code version}, each run ending within {@code deadline} of its first start
   * (null: no deadline; see {@link WorkflowType#withDeadline}).
   */
  public WorkflowRunner(
      Workflow<I, ?> workflow,
      int version,
      java.time.Duration deadline,
      Supplier<String> schema,
      Supplier<JsonMapper> mapper) {
    this.workflow = workflow;
    this.version = version;
    this.deadline = deadline;
    this.schema = schema;
    this.mapper = mapper;
  }

  @Override
  public Object run(JobContext job, I input) throws Exception {
    WorkflowStore s = store;
    if (s == null) {
      s = new WorkflowStore(job.dataSource(), schema.get());
      store = s;
    }
    // A plain job cancel interrupts the attempt's thread: cleared, so that the replay can read its
    // steps and compensate them; restored at the end.
    boolean interrupted = job.isCancelled() && Thread.interrupted();
    WorkflowContext ctx = new WorkflowContext(job, s, mapper.get(), version, deadline);
    // Asked to cancel (JobClient.cancelWorkflow, or a job cancel): replay to compensate.
    ctx.cancelling(job.isCancelled() || s.cancelRequested(job.jobId()));
    // The execution rescue gave a run whose worker died in its last attempt: replay, then
    // compensate.
    ctx.compensatingAfterLoss(job.isLastAttempt() && s.rescuedToCompensate(job.jobId()));
    try {
      Object output = workflow.run(ctx, input);
      if (ctx.isCancelling()) {
        // It ended without reaching a step that had not run: still cancelled, its steps
        // compensated.
        throw new WorkflowCancelledException(
            "run " + job.jobId() + " was cancelled; its steps are compensated");
      }
      return output;
    } catch (SnoozeJobException sleeping) {
      // About to sleep or wait: a cancellation asked since this execution began compensates now.
      if (!s.cancelRequested(job.jobId())) {
        throw sleeping; // the lane is let go, nothing failed
      }
      ctx.cancelling(true);
      interrupted |= Thread.interrupted();
      WorkflowCancelledException cancelled = new WorkflowCancelledException("run " + job.jobId()
          + " was cancelled while it went to sleep or wait; its steps are compensated");
      ctx.compensate(cancelled);
      s.flagCancelled(job.jobId());
      throw cancelled;
    } catch (Exception e) {
      if (job.isLastAttempt()
          || job.isCancelled()
          || ctx.isCancelling()
          || e instanceof io.pgjobs.DiscardJobException) {
        // A cancel interrupts the thread; the compensations need the database all the same.
        interrupted |= Thread.interrupted();
        ctx.compensate(e);
      }
      if (ctx.isCancelling()) {
        s.flagCancelled(job.jobId()); // so that this failure is written cancelled
      }
      throw e;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
