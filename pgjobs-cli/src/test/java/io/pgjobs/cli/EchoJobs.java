package io.pgjobs.cli;

import io.pgjobs.JobType;
import io.pgjobs.worker.JobRegistrations;
import io.pgjobs.worker.JobWorker;
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

  /** ServiceLoader's constructor. */
  public EchoJobs() {}

  @Override
  public List<JobWorker.Registration<?>> registrations() {
    return List.of(new JobWorker.Registration<>(ECHO, (ctx, echo) -> Map.of("echo", echo.text())));
  }
}
