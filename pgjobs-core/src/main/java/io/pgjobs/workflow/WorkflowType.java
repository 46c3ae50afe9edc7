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
  private final JobType<I> jobType;
  private final int version;

  private WorkflowType(JobType<I> jobType, int version) {
    this.jobType = jobType;
    this.version = version;
  }

  /** A workflow named {@code name} (a job type name) taking {@code inputClass}, version 1, 3 attempts. */
  public static <I> WorkflowType<I> of(String name, Class<I> inputClass) {
    return new WorkflowType<>(
        JobType.of(name, Objects.requireNonNull(inputClass, "inputClass")), 1);
  }

  /** The same workflow with {@code maxAttempts} attempts per run (the last one's failure compensates). */
  public WorkflowType<I> withMaxAttempts(int maxAttempts) {
    return new WorkflowType<>(jobType.withMaxAttempts(maxAttempts), version);
  }

  /**
   * The same workflow whose runs' executions may each last {@code timeout} (positive, at most
   * {@link JobType#MAX_TIMEOUT}): its job type's timeout per attempt ({@link JobType#withTimeout}). A sleep
   * or a wait for a signal ends the execution, so it does not count toward the timeout.
   */
  public WorkflowType<I> withTimeout(Duration timeout) {
    return new WorkflowType<>(jobType.withTimeout(timeout), version);
  }

  /**
   * The same workflow with an example input: what {@code GET /workflow-types} offers as a starting point
   * for {@code POST /workflows/{name}/start} (its job type's example, {@link JobType#withExample}). Without
   * one it offers the input class's fields with empty values.
   */
  public WorkflowType<I> withExample(I example) {
    return new WorkflowType<>(jobType.withExample(example), version);
  }

  /** The same workflow at {@code version} (1 or more), recorded with its runs' steps' readers in mind. */
  public WorkflowType<I> withVersion(int version) {
    if (version < 1) {
      throw new IllegalArgumentException("workflow version must be 1 or more, was " + version);
    }
    return new WorkflowType<>(jobType, version);
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
    return "WorkflowType[" + name() + ", version=" + version + ", " + jobType + "]";
  }
}
