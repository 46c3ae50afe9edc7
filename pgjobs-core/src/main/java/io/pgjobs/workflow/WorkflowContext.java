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

  /** The name of the step that records the version the run started under ({@link #version()}). */
  static final String VERSION = "(version)";

  private final JobContext job;
  private final WorkflowStore store;
  private final JsonMapper mapper;
  private final Map<String, WorkflowStore.StepRecord> recorded = new HashMap<>();
  private final Set<String> seen = new HashSet<>();
  private final Deque<Runnable> compensations = new ArrayDeque<>();
  private final int codeVersion;
  private final Instant deadline;
  private int sleeps;
  private boolean cancelling;
  private boolean compensatingAfterLoss;

  WorkflowContext(JobContext job, WorkflowStore store, JsonMapper mapper, int codeVersion)
      throws SQLException {
    this(job, store, mapper, codeVersion, null);
  }

  /** With {@code runDeadline} (null: none), counted from {@link #workflowTime()}, recorded now if not yet. */
  WorkflowContext(
      JobContext job,
      WorkflowStore store,
      JsonMapper mapper,
      int codeVersion,
      java.time.Duration runDeadline)
      throws SQLException {
    this.job = job;
    this.store = store;
    this.mapper = mapper;
    this.codeVersion = codeVersion;
    for (WorkflowStore.StepRecord r : store.steps(job.jobId())) {
      recorded.put(r.name(), r);
    }
    this.deadline = runDeadline == null ? null : workflowTime().plus(runDeadline);
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
   * The version of the workflow this run follows, for a workflow changed while runs are under way: the
   * first call records it (step {@code (version)}), and every later execution gets the same, whatever
   * version the code running it has by then. A run that had already recorded steps this execution has
   * not reached yet when it first asks started under code that did not ask: it gets 1. Otherwise it gets
   * the code's version ({@link WorkflowType#withVersion}). Branch on it where the steps changed:
   *
   * <pre>{@code
   * if (ctx.version() >= 2) {
   *   ctx.step("notify", Void.class, () -> notifier.send(order)).run(); // new in version 2
   * }
   * }</pre>
   */
  public int version() {
    WorkflowStore.StepRecord r = recorded.get(VERSION);
    if (r == null) {
      boolean replayingPastThisPoint = recorded.keySet().stream()
          .anyMatch(name -> !seen.contains(name) && !name.equals(STARTED));
      int version = replayingPastThisPoint ? 1 : codeVersion;
      r = new WorkflowStore.StepRecord(
          VERSION,
          "step",
          "done",
          record(VERSION, "step", "done", String.valueOf(version), null)[1],
          null,
          0,
          Instant.now());
    }
    seen.add(VERSION);
    return Integer.parseInt(r.result().trim());
  }

  /**
   * A step named {@code name} (unique in the workflow, 1–255 characters) whose action returns a
   * {@code resultClass} (JSON-serialisable; {@code Void.class} for none): configure it, then
   * {@link Step#run()}.
   */
  public <T> Step<T> step(String name, Class<T> resultClass, Callable<T> action) {
    Objects.requireNonNull(resultClass, "resultClass");
    Objects.requireNonNull(action, "action");
    if (name == null
        || name.isEmpty()
        || name.length() > 255
        || name.equals(STARTED)
        || name.equals(VERSION)) {
      throw new IllegalArgumentException("a step's name is 1 to 255 characters, and not " + STARTED
          + " or " + VERSION
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
    if (r == null) {
      stopIfCancelling(name);
    }
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
      stopIfCancelling(name); // cancelled while it slept (or past its deadline): compensate instead
      throw new SnoozeJobException(untilDeadline(left));
    }
  }

  /** The longest a waiting run's job sleeps between looks for its signal (see {@link #awaitSignal}). */
  static final Duration SIGNAL_LOOK_MAX = Duration.ofMinutes(10);

  /**
   * Waits for signal {@code name} ({@code JobClient.signalWorkflow}) for at most {@code timeout} from the
   * first time the run reached this wait, without holding a worker's lane, and returns its payload read as
   * {@code payloadClass}. The first signal of a name counts, also one sent before the run got here. The
   * signal's sender wakes a waiting run at once; the run also looks again every 10 minutes at most, in
   * case a signal arrived in the moment between its look and its sleep. Recorded like a step
   * ({@code signal:<name>}), so later executions return the same.
   *
   * @throws java.util.concurrent.TimeoutException if no such signal came in time (in every later execution
   *     too: the outcome is recorded)
   */
  public <T> T awaitSignal(String name, Class<T> payloadClass, Duration timeout)
      throws java.util.concurrent.TimeoutException {
    Objects.requireNonNull(payloadClass, "payloadClass");
    if (name == null || name.isEmpty() || name.length() > 200) {
      throw new IllegalArgumentException("a signal's name is 1 to 200 characters, was "
          + (name == null ? "null" : "'" + name + "'"));
    }
    if (timeout == null || !timeout.isPositive()) {
      throw new IllegalArgumentException("a signal's timeout must be positive, was " + timeout);
    }
    String step = "signal:" + name;
    if (!seen.add(step)) {
      throw new IllegalStateException(
          "signal '" + name + "' awaited twice in one execution of run " + runId());
    }
    seen.add("signal-deadline:" + name); // recorded with the wait (version() reads what was passed)
    WorkflowStore.StepRecord r = recorded.get(step);
    if (r != null) {
      return signalled(name, timeout, r.state(), r.result(), payloadClass);
    }
    stopIfCancelling(step);
    String deadlineStep = "signal-deadline:" + name;
    WorkflowStore.StepRecord d = recorded.get(deadlineStep);
    String deadlineJson = d != null
        ? d.result()
        : record(
            deadlineStep,
            "sleep",
            "done",
            mapper.writeValueAsString(Instant.now().plus(timeout).toString()),
            null)[1];
    Instant deadline = Instant.parse(mapper.readValue(deadlineJson, String.class));
    String payload;
    try {
      payload = store.findSignal(runId(), name);
    } catch (SQLException e) {
      throw new PgJobsException(
          "could not read signal '" + name + "' of run " + runId() + ": " + e.getMessage(), e);
    }
    if (payload != null) {
      String[] kept = record(step, "signal", "done", payload, null);
      return signalled(name, timeout, kept[0], kept[1], payloadClass);
    }
    Duration left = Duration.between(Instant.now(), deadline);
    if (!left.isPositive()) {
      String[] kept =
          record(step, "signal", "skipped", null, "no signal '" + name + "' within " + timeout);
      return signalled(name, timeout, kept[0], kept[1], payloadClass);
    }
    stopIfPastDeadline(step); // past the run's deadline while it waited: compensate instead
    throw new SnoozeJobException(
        untilDeadline(left.compareTo(SIGNAL_LOOK_MAX) < 0 ? left : SIGNAL_LOOK_MAX));
  }

  private <T> T signalled(String name, Duration timeout, String state, String json, Class<T> type)
      throws java.util.concurrent.TimeoutException {
    if (state.equals("skipped")) {
      throw new java.util.concurrent.TimeoutException(
          "no signal '" + name + "' came within " + timeout + " (run " + runId() + ")");
    }
    return mapper.readValue(json, type);
  }

  /**
   * The jobs of one {@link #awaitJobs} step, added by its {@code jobs} callback: each runs on the whole
   * fleet, as a child of the run ({@code parent_id}).
   */
  public static final class JobBatch {
    private final java.util.List<Object[]> jobs = new java.util.ArrayList<>();

    JobBatch() {}

    /** Adds a job of {@code type} with its defaults. */
    public <P> JobBatch add(io.pgjobs.JobType<P> type, P payload) {
      return add(type, payload, io.pgjobs.EnqueueOptions.DEFAULTS);
    }

    /** Adds a job of {@code type} with {@code options} (its parent is the run whatever they say). */
    public <P> JobBatch add(
        io.pgjobs.JobType<P> type, P payload, io.pgjobs.EnqueueOptions options) {
      Objects.requireNonNull(type, "type");
      if (jobs.size() >= MAX_AWAITED_JOBS) {
        throw new IllegalArgumentException(
            "a workflow awaits at most " + MAX_AWAITED_JOBS + " jobs in one step");
      }
      jobs.add(new Object[] {type, payload, options});
      return this;
    }
  }

  /** The most jobs one {@link #awaitJobs} step may start. */
  public static final int MAX_AWAITED_JOBS = 10_000;

  /**
   * Starts the jobs {@code jobs} adds, on the whole fleet, and waits for all of them to end without
   * holding a worker's lane; returns them as they ended, in the order they were added. The first time, the
   * jobs are enqueued together with the step's record (step {@code jobs:<name>}, its result their ids) in
   * one transaction, so a run that executes again never starts them twice; the run's job then waits
   * {@code blocked} as a job of a graph waits for its parents, and the last of them to end queues it once.
   * A job that fails or is cancelled does not fail the step: look at {@link AwaitedJob#state()}.
   *
   * @param name the step's name, unique in the workflow (1–200 characters)
   */
  public java.util.List<AwaitedJob> awaitJobs(
      String name, java.util.function.Consumer<JobBatch> jobs) {
    Objects.requireNonNull(jobs, "jobs");
    if (name == null || name.isEmpty() || name.length() > 200) {
      throw new IllegalArgumentException("an awaitJobs step's name is 1 to 200 characters, was "
          + (name == null ? "null" : "'" + name + "'"));
    }
    String step = "jobs:" + name;
    if (!seen.add(step)) {
      throw new IllegalStateException(
          "jobs '" + name + "' awaited twice in one execution of run " + runId());
    }
    WorkflowStore.StepRecord r = recorded.get(step);
    String idsJson;
    if (r != null) {
      idsJson = r.result();
    } else {
      stopIfCancelling(step);
      JobBatch batch = new JobBatch();
      jobs.accept(batch);
      try {
        idsJson = store.startJobs(runId(), step, c -> {
          java.util.List<UUID> ids = new java.util.ArrayList<>();
          for (Object[] j : batch.jobs) {
            ids.add(enqueue(c, j).job().id());
          }
          return ids;
        });
      } catch (SQLException e) {
        throw new PgJobsException(
            "could not start the jobs of step '" + step + "' of run " + runId() + ": "
                + e.getMessage(),
            e);
      }
      recorded.put(
          step,
          new WorkflowStore.StepRecord(step, "jobs", "done", idsJson, null, 0, Instant.now()));
    }
    java.util.List<UUID> ids = java.util.Arrays.asList(mapper.readValue(idsJson, UUID[].class));
    java.util.Map<UUID, WorkflowStore.EndedJob> ended = new HashMap<>();
    try {
      for (WorkflowStore.EndedJob e : store.endedJobs(ids)) {
        ended.put(e.id(), e);
      }
    } catch (SQLException e) {
      throw new PgJobsException(
          "could not read the jobs of step '" + step + "' of run " + runId() + ": "
              + e.getMessage(),
          e);
    }
    if (ended.size() < ids.size()) {
      stopIfCancelling(step); // cancelled while it waited: compensate instead of waiting on
      throw SnoozeJobException.untilDependenciesEnd();
    }
    java.util.List<AwaitedJob> out = new java.util.ArrayList<>(ids.size());
    for (UUID id : ids) {
      WorkflowStore.EndedJob e = ended.get(id);
      out.add(new AwaitedJob(
          e.id(),
          e.type(),
          io.pgjobs.JobState.parse(e.state()),
          e.output(),
          e.lastError(),
          mapper));
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private io.pgjobs.EnqueuedJob enqueue(java.sql.Connection c, Object[] j) {
    return job.enqueue(c, (io.pgjobs.JobType<Object>) j[0], j[1], (io.pgjobs.EnqueueOptions) j[2]);
  }

  /** True when this execution replays the run only to compensate it: its cancellation was asked. */
  public boolean isCancelling() {
    return cancelling;
  }

  // ---------------------------------------------------------------- used by Step and
  // WorkflowRunner

  void cancelling(boolean cancelling) {
    this.cancelling = cancelling;
  }

  /**
   * Set for the execution that rescue gave a run whose worker died during its last attempt: it replays the
   * done steps and stops at the first one not done with a {@link io.pgjobs.DiscardJobException}, so its
   * done steps are compensated and the run fails (a run whose every step had ended ends as it would have).
   */
  void compensatingAfterLoss(boolean compensating) {
    this.compensatingAfterLoss = compensating;
  }

  /**
   * {@code snooze}, or less: up to the run's deadline (at least a millisecond), so that a run sleeping or
   * waiting past it wakes at it and stops.
   */
  private Duration untilDeadline(Duration snooze) {
    if (deadline == null) {
      return snooze;
    }
    Duration left = Duration.between(Instant.now(), deadline);
    Duration atLeast = left.compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : left;
    return snooze.compareTo(atLeast) < 0 ? snooze : atLeast;
  }

  /**
   * Thrown instead of running step {@code name} (or sleeping, or waiting) when the run is cancelling
   * ({@link WorkflowCancelledException}) or past its deadline ({@link WorkflowDeadlineException}).
   */
  void stopIfCancelling(String name) {
    if (!cancelling) {
      // A cancellation asked while this execution runs is seen at its next step that has not run.
      try {
        cancelling = store.cancelRequested(runId());
      } catch (SQLException e) {
        throw new PgJobsException(
            "could not read whether run " + runId() + " was cancelled: " + e.getMessage(), e);
      }
    }
    if (cancelling) {
      throw new WorkflowCancelledException(
          "run " + runId() + " was cancelled before " + name + "; its done steps are compensated");
    }
    if (compensatingAfterLoss) {
      throw new io.pgjobs.DiscardJobException("run " + runId() + " lost its worker during its last"
          + " attempt; this execution, given by the rescue, stops before " + name
          + " and compensates its done steps");
    }
    stopIfPastDeadline(name);
  }

  /** Thrown instead of running step {@code name} (or sleeping, or waiting) past the run's deadline. */
  private void stopIfPastDeadline(String name) {
    if (deadline != null && !Instant.now().isBefore(deadline)) {
      throw new WorkflowDeadlineException("run " + runId() + " passed its deadline ("
          + Duration.between(workflowTime(), deadline) + " from its start at " + workflowTime()
          + ", so " + deadline + ") before " + name + "; its done steps are compensated");
    }
  }

  /** The instant this run must have ended by ({@link WorkflowType#withDeadline}), if it has a deadline. */
  public java.util.Optional<Instant> deadline() {
    return java.util.Optional.ofNullable(deadline);
  }

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
