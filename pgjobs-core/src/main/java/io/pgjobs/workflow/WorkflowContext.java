package io.pgjobs.workflow;

import io.pgjobs.JobContext;
import io.pgjobs.PgJobsException;
import io.pgjobs.SnoozeJobException;
import io.pgjobs.store.WorkflowStore;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import tools.jackson.databind.json.JsonMapper;

/**
 * What a {@link Workflow} runs its steps through, for one execution of its run. Each step's outcome is
 * recorded when it ends; when the run executes again, a step that ended returns what was recorded.
 *
 * <pre>{@code
 * Receipt receipt = ctx.step("charge", Receipt.class, () -> payments.charge(order))
 *     .compensate(r -> payments.refund(r))
 *     .run();
 * ctx.sleep(Duration.ofHours(1));          // releases the worker's lane until then
 * ctx.step("ship", Void.class, () -> { warehouse.ship(order); return null; }).run();
 * }</pre>
 */
public final class WorkflowContext {
  /** The name of the step that records the instant the run first started ({@link #workflowTime()}). */
  static final String STARTED = "(started)";

  private final JobContext job;
  private final WorkflowStore store;
  private final JsonMapper mapper;
  private final Map<String, WorkflowStore.StepRecord> recorded = new HashMap<>();
  private final Set<String> seen = new HashSet<>();
  private final Deque<Runnable> compensations = new ArrayDeque<>();
  private int sleeps;

  WorkflowContext(JobContext job, WorkflowStore store, JsonMapper mapper) throws SQLException {
    this.job = job;
    this.store = store;
    this.mapper = mapper;
    for (WorkflowStore.StepRecord r : store.steps(job.jobId())) {
      recorded.put(r.name(), r);
    }
  }

  /** The run's id: its job's id. */
  public UUID runId() {
    return job.jobId();
  }

  /** The job the run executes as (its attempt, cancellation, progress). */
  public JobContext job() {
    return job;
  }

  /**
   * The instant the run first started, the same in every execution of it: the workflow's clock, where
   * {@code Instant.now()} would differ between executions and break its determinism.
   */
  public Instant workflowTime() {
    WorkflowStore.StepRecord r = recorded.get(STARTED);
    if (r != null) {
      return Instant.parse(mapper.readValue(r.result(), String.class));
    }
    String[] kept =
        record(STARTED, "step", "done", mapper.writeValueAsString(Instant.now().toString()), null);
    return Instant.parse(mapper.readValue(kept[1], String.class));
  }

  /**
   * A step named {@code name} (unique in the workflow, 1–255 characters) whose action returns a
   * {@code resultClass} (JSON-serialisable; {@code Void.class} for none): configure it, then
   * {@link Step#run()}.
   */
  public <T> Step<T> step(String name, Class<T> resultClass, Callable<T> action) {
    Objects.requireNonNull(resultClass, "resultClass");
    Objects.requireNonNull(action, "action");
    if (name == null || name.isEmpty() || name.length() > 255 || name.equals(STARTED)) {
      throw new IllegalArgumentException("a step's name is 1 to 255 characters, and not " + STARTED
          + "; was " + (name == null ? "null" : "'" + name + "'"));
    }
    if (!seen.add(name)) {
      throw new IllegalStateException("step '" + name + "' ran twice in one execution of run "
          + runId() + ": a workflow names each of its steps once");
    }
    return new Step<>(this, name, resultClass, action);
  }

  /**
   * Waits {@code duration} without holding a worker's lane: the first time, records the instant to wake
   * at and snoozes the run's job until then; when the run executes again after it, returns at once (the
   * steps before it return their recorded results). The n-th sleep of a workflow is step {@code sleep#n}.
   */
  public void sleep(Duration duration) {
    Objects.requireNonNull(duration, "duration");
    String name = "sleep#" + (++sleeps);
    seen.add(name);
    WorkflowStore.StepRecord r = recorded.get(name);
    Instant wake;
    if (r != null) {
      wake = Instant.parse(mapper.readValue(r.result(), String.class));
    } else {
      String[] kept = record(
          name,
          "sleep",
          "done",
          mapper.writeValueAsString(Instant.now().plus(duration).toString()),
          null);
      wake = Instant.parse(mapper.readValue(kept[1], String.class));
    }
    Duration left = Duration.between(Instant.now(), wake);
    if (left.isPositive()) {
      throw new SnoozeJobException(left);
    }
  }

  // ---------------------------------------------------------------- used by Step and
  // WorkflowRunner

  WorkflowStore.StepRecord recorded(String name) {
    return recorded.get(name);
  }

  JsonMapper mapper() {
    return mapper;
  }

  String[] record(String name, String kind, String state, String resultJson, String error) {
    try {
      String[] kept = store.record(runId(), name, kind, state, resultJson, error);
      recorded.put(
          name,
          new WorkflowStore.StepRecord(name, kind, kept[0], kept[1], error, 0, Instant.now()));
      return kept;
    } catch (SQLException e) {
      throw new PgJobsException(
          "could not record step '" + name + "' of run " + runId() + ": " + e.getMessage(), e);
    }
  }

  void onFailure(String name, Runnable compensation) {
    compensations.push(() -> {
      try {
        compensation.run();
        store.compensated(runId(), name, "compensated", null);
      } catch (SQLException e) {
        throw new PgJobsException(
            "could not record the compensation of step '" + name + "': " + e.getMessage(), e);
      } catch (RuntimeException e) {
        try {
          store.compensated(runId(), name, "compensation_failed", String.valueOf(e));
        } catch (SQLException recordFailure) {
          e.addSuppressed(recordFailure);
        }
        throw e;
      }
    });
  }

  /**
   * Runs the compensations of the steps done in this execution, the last first, each once (a step whose
   * compensation was recorded before is skipped). A failing compensation is recorded and the others run.
   */
  void compensate(Throwable cause) {
    while (!compensations.isEmpty()) {
      try {
        compensations.pop().run();
      } catch (RuntimeException e) {
        cause.addSuppressed(e);
      }
    }
  }
}
