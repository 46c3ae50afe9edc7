/**
 * Running jobs. {@link io.pgjobs.worker.JobWorker} and the service-provider interface
 * {@link io.pgjobs.worker.JobRegistrations} are public; the rest of the package (pollers, the runner,
 * the completion batcher) is internal.
 */
package io.pgjobs.worker;
