package io.pgjobs.cli;

import io.pgjobs.JobType;
import io.pgjobs.worker.JobRegistrations;
import io.pgjobs.worker.JobWorker;
import io.pgjobs.workflow.WorkflowType;
import java.util.List;
import java.util.Map;

/**
 * A handler provider found through {@link java.util.ServiceLoader} (named in the test resources'
 * {@code META-INF/services/io.pgjobs.worker.JobRegistrations}): {@code pgjobs work} must run it.
 */
public final class EchoJobs implements JobRegistrations {
  /** The payload. */
  public record Echo(String text) {}

  /** The type. */
  public static final JobType<Echo> ECHO = JobType.of("echo", Echo.class);

  /**
   * A workflow this provider declares ({@link #workflows()}): {@code pgjobs workflows list} lists its runs,
   * {@code pgjobs serve} knows it.
   */
  public static final WorkflowType<Echo> ECHO_FLOW = WorkflowType.of("echo_flow", Echo.class);

  /** ServiceLoader's constructor. */
  public EchoJobs() {}

  @Override
  public List<JobWorker.Registration<?>> registrations() {
    return List.of(new JobWorker.Registration<>(ECHO, (ctx, echo) -> Map.of("echo", echo.text())));
  }

  @Override
  public List<WorkflowType<?>> workflows() {
    return List.of(ECHO_FLOW);
  }
}
