package io.pgjobs;

/**
 * The result of an enqueue.
 *
 * @param job the job as stored
 * @param replayed true if the idempotency key already named a job: {@code job} is that original job and
 *     nothing new was stored
 */
public record EnqueuedJob(Job job, boolean replayed) {}
