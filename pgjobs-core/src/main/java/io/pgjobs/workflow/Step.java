package io.pgjobs.workflow;

import io.pgjobs.store.WorkflowStore;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeoutException;

/**
 * A step of a workflow, configured and then {@link #run()}: its action runs once, and its result is
 * recorded and returned; in a later execution of the run the recorded result is returned without running
 * the action again.
 *
 * @param <T> its result
 */
public final class Step<T> {
  /** Undoes a step, given its result. */
  @FunctionalInterface
  public interface Compensation<T> {
    /** Undoes the step whose result was {@code result}. */
    void undo(T result) throws Exception;
  }

  private final WorkflowContext ctx;
  private final String name;
  private final Class<T> resultClass;
  private final Callable<T> action;
  private Compensation<? super T> compensation;
  private boolean optional;
  private Duration timeout;

  Step(WorkflowContext ctx, String name, Class<T> resultClass, Callable<T> action) {
    this.ctx = ctx;
    this.name = name;
    this.resultClass = resultClass;
    this.action = action;
  }

  /**
   * What undoes this step if the workflow fails for good after it (its last attempt fails): run with the
   * step's result, compensations of later steps first. Recorded when it ran, so it runs once.
   */
  public Step<T> compensate(Compensation<? super T> compensation) {
    this.compensation = Objects.requireNonNull(compensation, "compensation");
    return this;
  }

  /** A failure of this step is recorded ({@code skipped}) and the workflow goes on: {@link #run()} returns null. */
  public Step<T> optional() {
    this.optional = true;
    return this;
  }

  /** The action fails if it takes longer than {@code timeout} (its thread is interrupted). */
  public Step<T> timeout(Duration timeout) {
    if (timeout == null || !timeout.isPositive()) {
      throw new IllegalArgumentException("a step's timeout must be positive, was " + timeout);
    }
    this.timeout = timeout;
    return this;
  }

  /** Runs the step, or returns its recorded result if it ran before in this run. */
  public T run() throws Exception {
    WorkflowStore.StepRecord before = ctx.recorded(name);
    if (before != null) {
      return replayed(before.state(), before.result());
    }
    ctx.stopIfCancelling("step '" + name + "'");
    T result;
    try {
      result = timeout == null ? action.call() : callWithTimeout();
    } catch (Exception e) {
      if (!optional) {
        throw e;
      }
      String[] kept = ctx.record(name, "step", "skipped", null, String.valueOf(e));
      return replayed(kept[0], kept[1]);
    }
    String[] kept = ctx.record(name, "step", "done", ctx.mapper().writeValueAsString(result), null);
    return replayed(kept[0], kept[1]);
  }

  private T replayed(String state, String resultJson) {
    if (state.equals("skipped")) {
      return null;
    }
    T result = resultJson == null ? null : ctx.mapper().readValue(resultJson, resultClass);
    if (compensation != null && state.equals("done")) {
      Compensation<? super T> undo = compensation;
      ctx.onFailure(name, () -> {
        try {
          undo.undo(result);
        } catch (RuntimeException e) {
          throw e;
        } catch (Exception e) {
          throw new IllegalStateException("compensation of step '" + name + "' failed: " + e, e);
        }
      });
    }
    return result;
  }

  private T callWithTimeout() throws Exception {
    Future<T> future;
    try (var executor = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
      future = executor.submit(action);
      try {
        return future.get(timeout.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        future.cancel(true);
        throw new TimeoutException("step '" + name + "' took longer than " + timeout);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof Exception cause) {
          throw cause;
        }
        throw e;
      }
    }
  }
}
