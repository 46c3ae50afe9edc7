/**
 * Running jobs. {@link io.pgjobs.worker.JobWorker} and the service-provider interface
 * {@link io.pgjobs.worker.JobRegistrations} are public; the rest of the package is internal, one class
 * per part of a job's life in a worker:
 *
 * <ul>
 *   <li>{@code QueuePoller} — the producer: claims (resuming where the last claim ended), a bounded
 *       prefetch given back when it waits too long, reconciliation after a claim whose reply was lost;
 *   <li>{@code JobRunner} — the executor: runs a handler under its timeout, the registry of running
 *       handlers that timeouts, cancellations and shutdown stop, and the letting go of stuck ones; it
 *       decides how each attempt ends, as an {@code Outcome} (a sealed set of records);
 *   <li>{@code JobCompleter} — the only writer to a running job: maps each outcome to its statement
 *       (batched successes, every other outcome), give-backs, prefetch marks, and what a handler writes
 *       through its context; fenced by the claim token, bounded, isolating a job that cannot be written
 *       (the exceptions, such as the heartbeat's renewal, are named in its Javadoc);
 *   <li>{@code WorkerHeartbeat} — liveness: renews the worker and every job it holds on a connection of
 *       its own, and fences the worker when it cannot;
 *   <li>{@code HeldJobs} — what the worker holds in the database, from claim reply to confirmed write.
 * </ul>
 */
package io.pgjobs.worker;
