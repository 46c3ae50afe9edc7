/**
 * PUBLIC. The Spring Boot starter: {@link io.pgjobs.spring.PgJobsAutoConfiguration} configures a
 * {@link io.pgjobs.JobClient}, a {@link io.pgjobs.spring.TransactionalJobClient} and a
 * {@link io.pgjobs.worker.JobWorker} from the application's {@code DataSource} and the
 * {@link io.pgjobs.spring.PgJobsProperties pgjobs.* properties}; handlers are
 * {@link io.pgjobs.spring.PgJobsHandler} beans.
 */
package io.pgjobs.spring;
