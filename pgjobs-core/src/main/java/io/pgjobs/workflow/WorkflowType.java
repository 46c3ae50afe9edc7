package io.pgjobs.workflow;

import io.pgjobs.JobType;
import java.util.Objects;

/**
 * A workflow: its name (also its job type's), its input class and its version. Its runs are jobs of
 * {@link #jobType()}: start one with {@code client.enqueue(type.jobType(), input)}, register its code on a
 * worker with {@code JobWorker.Builder.workflow(type, workflow)}.
 *
 * <pre>{@code
 * static final WorkflowType<Order> FULFIL = WorkflowType.of("fulfil_order", Order.class).withMaxAttempts(5);
 * }</pre>
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

  /** The job type of its runs. */
  public JobType<I> jobType() {
    return jobType;
  }
}
