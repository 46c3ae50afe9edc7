/**
 * Running jobs. {@link io.pgjobs.worker.JobWorker} is public; the rest of the package (pollers, the
 * runner, the completion batcher) is internal.
 */
package io.pgjobs.worker;
