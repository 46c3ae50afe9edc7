package io.pgjobs.worker;

import java.util.List;

/**
 * A service-provider interface through which a library or application offers job handlers to a worker
 * process it does not start itself, such as the {@code pgjobs work} command. Implementations are found
 * with {@link java.util.ServiceLoader}: put the class on the class path and name it in
 * {@code META-INF/services/io.pgjobs.worker.JobRegistrations}.
 *
 * <pre>{@code
 * public final class BillingJobs implements JobRegistrations {
 *   public BillingJobs() {}                       // ServiceLoader needs a public no-argument constructor
 *
 *   @Override
 *   public List<JobWorker.Registration<?>> registrations() {
 *     return List.of(new JobWorker.Registration<>(SEND_INVOICE, (ctx, invoice) -> billing.send(invoice)));
 *   }
 * }
 * }</pre>
 *
 * The registrations go to {@link JobWorker.Builder#registerAll}; a job type name may be registered once.
 */
public interface JobRegistrations {
  /** The job types this provider handles, each with its handler. Called once per worker that loads it. */
  List<JobWorker.Registration<?>> registrations();

  /**
   * The workflows a process that loads this provider knows as workflows, normally those whose runners are
   * among {@link #registrations()}: {@code pgjobs serve} lists them ({@code GET /workflow-types}), lists
   * their runs ({@code GET /workflows}; {@code pgjobs workflows list} too) and starts them by name
   * ({@code POST /workflows/{name}/start}), which it refuses for a name that is not a known workflow.
   * Default: none.
   */
  default List<io.pgjobs.workflow.WorkflowType<?>> workflows() {
    return List.of();
  }
}
