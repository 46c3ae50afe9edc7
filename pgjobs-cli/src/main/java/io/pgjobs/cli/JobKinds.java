package io.pgjobs.cli;

import io.pgjobs.JobType;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.cli.demo.DemoJobs;
import io.pgjobs.worker.JobRegistrations;
import io.pgjobs.worker.JobWorker;
import io.pgjobs.workflow.WorkflowType;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job kinds a {@code pgjobs} process knows: the built-in demo kinds plus every
 * {@link JobRegistrations} provider on the class path ({@link ServiceLoader}). A provider's type
 * replaces a demo kind of the same name; two providers registering one name is an error.
 */
final class JobKinds {
  private static final Logger log = LoggerFactory.getLogger(JobKinds.class);

  private JobKinds() {}

  /** The registrations a worker runs. */
  static List<JobWorker.Registration<?>> registrations(Settings settings) {
    Map<String, JobWorker.Registration<?>> byName = new LinkedHashMap<>();
    DemoJobs.registrations(settings).forEach(r -> byName.put(r.type().name(), r));
    Map<String, String> providerOf = new LinkedHashMap<>();
    for (JobRegistrations provider : providers()) {
      String providerName = provider.getClass().getName();
      List<JobWorker.Registration<?>> offered;
      try {
        offered = provider.registrations();
      } catch (RuntimeException e) {
        throw new CommandFailedException(
            "job handler provider " + providerName + " failed: " + Failures.describe(e), e);
      }
      for (JobWorker.Registration<?> registration : offered) {
        String type = registration.type().name();
        String earlier = providerOf.put(type, providerName);
        if (earlier != null) {
          throw new CommandFailedException(
              "job type '" + type + "' is registered by two providers, " + earlier + " and "
                  + providerName + "; each type needs exactly one handler");
        }
        if (byName.put(type, registration) != null) {
          log.info("job type '{}' from {} replaces the built-in demo kind", type, providerName);
        }
      }
    }
    return List.copyOf(byName.values());
  }

  /**
   * The workflows a process with {@code registrations} ({@link #registrations}) knows: the demo's (unless a
   * provider registers a type of its name) and every provider's {@link JobRegistrations#workflows()}; two
   * providers declaring one name is an error.
   */
  static List<WorkflowType<?>> workflows(List<JobWorker.Registration<?>> registrations) {
    Map<String, JobType<?>> registered = new LinkedHashMap<>();
    registrations.forEach(r -> registered.put(r.type().name(), r.type()));
    Map<String, WorkflowType<?>> byName = new LinkedHashMap<>();
    for (WorkflowType<?> workflow : DemoJobs.workflows()) {
      if (registered.get(workflow.name()) == workflow.jobType()) {
        byName.put(workflow.name(), workflow);
      }
    }
    Map<String, String> providerOf = new LinkedHashMap<>();
    for (JobRegistrations provider : providers()) {
      String providerName = provider.getClass().getName();
      List<WorkflowType<?>> declared;
      try {
        declared = provider.workflows();
      } catch (RuntimeException e) {
        throw new CommandFailedException(
            "job handler provider " + providerName + " failed: " + Failures.describe(e), e);
      }
      for (WorkflowType<?> workflow : declared) {
        String earlier = providerOf.put(workflow.name(), providerName);
        if (earlier != null) {
          throw new CommandFailedException("workflow '" + workflow.name()
              + "' is declared by two providers, " + earlier + " and " + providerName);
        }
        byName.put(workflow.name(), workflow);
      }
    }
    return List.copyOf(byName.values());
  }

  /** The job types of {@link #registrations}, for enqueueing by name with defaults and validation. */
  static List<JobType<?>> types(Settings settings) {
    List<JobType<?>> types = new ArrayList<>();
    registrations(settings).forEach(r -> types.add(r.type()));
    return types;
  }

  private static List<JobRegistrations> providers() {
    List<JobRegistrations> providers = new ArrayList<>();
    try {
      ServiceLoader.load(JobRegistrations.class).forEach(providers::add);
    } catch (ServiceConfigurationError e) {
      throw new CommandFailedException(
          "cannot load job handlers from the class path: " + e.getMessage(), e);
    }
    return providers;
  }
}
