/**
 * The public API of pgjobs: define job types ({@link io.pgjobs.JobType}, {@link io.pgjobs.JobHandler}),
 * enqueue and inspect jobs ({@link io.pgjobs.JobClient}), and read them back ({@link io.pgjobs.Job}).
 * Running jobs is {@link io.pgjobs.worker.JobWorker}'s business.
 *
 * <p>Everything outside {@code io.pgjobs} and {@code io.pgjobs.worker} (store, notify, schema, json) is
 * internal and may change without notice.
 */
package io.pgjobs;
