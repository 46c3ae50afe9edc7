package io.pgjobs.spring;

import io.pgjobs.JobHandler;
import io.pgjobs.JobType;

/**
 * A handler bean: the job type it runs and how. Every bean of this interface is registered with the
 * auto-configured {@link io.pgjobs.worker.JobWorker}; the {@link JobType} constant is the same one the
 * enqueuing code uses, so the type's name, payload class and defaults are written once.
 *
 * <pre>{@code
 * @Component
 * class SendEmailHandler implements PgJobsHandler<SendEmail> {
 *   public JobType<SendEmail> type() { return Jobs.SEND_EMAIL; }
 *   public Object run(JobContext ctx, SendEmail email) { mailer.send(email); return null; }
 * }
 * }</pre>
 *
 * A {@code @Bean} of type {@link io.pgjobs.worker.JobWorker.Registration} (a type with a lambda) is
 * registered as well.
 *
 * @param <P> the payload type
 */
public interface PgJobsHandler<P> extends JobHandler<P> {
  /** The job type this bean runs; one handler per type name. */
  JobType<P> type();
}
