/**
 * The public API of pgjobs: define job types ({@link io.pgjobs.JobType}, {@link io.pgjobs.JobHandler}),
 * enqueue and inspect jobs ({@link io.pgjobs.JobClient}), and read them back ({@link io.pgjobs.Job}).
 * Running jobs is {@link io.pgjobs.worker.JobWorker}'s business.
 *
 * <p>The API is the packages {@code module-info.java} exports; the others ({@code io.pgjobs.store},
 * {@code io.pgjobs.notify}, {@code io.pgjobs.tracing}) are internal and may change without notice.
 */
package io.pgjobs;
