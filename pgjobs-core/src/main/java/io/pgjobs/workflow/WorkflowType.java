package io.pgjobs.workflow;

import io.pgjobs.JobType;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A workflow: its name (also its job type's), its input class and its version. Its runs are jobs of
 * {@link #jobType()}: start one with {@code client.enqueue(type.jobType(), input)}, register its code on a
 * worker with {@code JobWorker.Builder.workflow(type, workflow)}, and tell the client about it with
 * {@code JobClient.Builder.knownWorkflows(type)} (or {@code PgJobs.Builder.knownWorkflows}) so that an
 * {@code ApiServer} over that client lists it ({@code GET /workflow-types}), lists its runs
 * ({@code GET /workflows}) and starts it by name.
 *
 * <pre>{@code
 * static final WorkflowType<Order> FULFIL = WorkflowType.of("fulfil_order", Order.class).withMaxAttempts(5);
 * }</pre>
 *
 * Instances are immutable; the {@code with*} methods return copies.
 *
 * @param <I> its input
 */
public final class WorkflowType<I> {
  /** The longest deadline a run may have ({@link #withDeadline}): 366 days. */
  public static final Duration MAX_DEADLINE = Duration.ofDays(366);

  private final JobType<I> jobType;
  private final int version;
  private final Duration deadline;

  private WorkflowType(JobType<I> jobType, int version, Duration deadline) {
    this.jobType = jobType;
    this.version = version;
    this.deadline = deadline;
  }

  /** A workflow named {@code name} (a job type name) taking {@code inputClass}, version 1, 3 attempts. */
  public static <I> WorkflowType<I> of(String name, Class<I> inputClass) {
    return new WorkflowType<>(
        JobType.of(name, Objects.requireNonNull(inputClass, "inputClass")), 1, null);
  }

  /** The same workflow with {@code maxAttempts} attempts per run (the last one's failure compensates). */
  public WorkflowType<I> withMaxAttempts(int maxAttempts) {
    return new WorkflowType<>(jobType.withMaxAttempts(maxAttempts), version, deadline);
  }

  /**
   * The same workflow whose runs' executions may each last {@code timeout} (positive, at most
   * {@link JobType#MAX_TIMEOUT}): its job type's timeout per attempt ({@link JobType#withTimeout}). A sleep
   * or a wait for a signal ends the execution, so it does not count toward the timeout.
   */
  public WorkflowType<I> withTimeout(Duration timeout) {
    return new WorkflowType<>(jobType.withTimeout(timeout), version, deadline);
  }

  /**
   * The same workflow with an example input: what {@code GET /workflow-types} offers as a starting point
   * for {@code POST /workflows/{name}/start} (its job type's example, {@link JobType#withExample}). Without
   * one it offers the input class's fields with empty values.
   */
  public WorkflowType<I> withExample(I example) {
    return new WorkflowType<>(jobType.withExample(example), version, deadline);
  }

  /** The same workflow at {@code version} (1 or more), recorded with its runs' steps' readers in mind. */
  public WorkflowType<I> withVersion(int version) {
    if (version < 1) {
      throw new IllegalArgumentException("workflow version must be 1 or more, was " + version);
    }
    return new WorkflowType<>(jobType, version, deadline);
  }

  /**
   * The same workflow whose runs must end within {@code deadline} (positive, at most
   * {@link #MAX_DEADLINE}) of the instant they first started ({@link WorkflowContext#workflowTime()},
   * recorded by each run's first execution): the seed's overall timeout, across every attempt, sleep and
   * wait. A run past it stops at the next step, sleep or wait it has not done yet
   * ({@link WorkflowDeadlineException}), compensates its done steps, the last first, and ends
   * {@code failed} without another attempt. A sleep or a wait for a signal that would last past the deadline
   * wakes the run at the deadline to do so. Neither a step that is running nor a wait for jobs
   * ({@link WorkflowContext#awaitJobs}) is cut short: the first is bounded by the timeout of each execution
   * ({@link #withTimeout}), and the second is checked when its jobs have ended.
   */
  public WorkflowType<I> withDeadline(Duration deadline) {
    if (deadline == null || !deadline.isPositive() || deadline.compareTo(MAX_DEADLINE) > 0) {
      throw new IllegalArgumentException("a workflow's deadline must be positive and at most "
          + MAX_DEADLINE + ", was " + deadline);
    }
    return new WorkflowType<>(jobType, version, deadline);
  }

  /** How long a run may take from its first start to its end ({@link #withDeadline}), if limited. */
  public Optional<Duration> deadline() {
    return Optional.ofNullable(deadline);
  }

  /** Its name. */
  public String name() {
    return jobType.name();
  }

  /** Its version. */
  public int version() {
    return version;
  }

  /** The class of its input. */
  public Class<I> inputClass() {
    return jobType.payloadClass();
  }

  /** Attempts per run (its job type's {@link JobType#maxAttempts()}). */
  public int maxAttempts() {
    return jobType.maxAttempts();
  }

  /** How long one execution of a run may last (its job type's {@link JobType#timeout()}). */
  public Duration timeout() {
    return jobType.timeout();
  }

  /** The example input given with {@link #withExample}, if any. */
  public Optional<I> example() {
    return jobType.example();
  }

  /** The job type of its runs. */
  public JobType<I> jobType() {
    return jobType;
  }

  @Override
  public String toString() {
    return "WorkflowType[" + name() + ", version=" + version
        + (deadline == null ? "" : ", deadline=" + deadline) + ", " + jobType + "]";
  }
}
