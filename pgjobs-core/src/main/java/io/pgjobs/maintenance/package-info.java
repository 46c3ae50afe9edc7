/**
 * Background upkeep done by one node at a time: {@link io.pgjobs.maintenance.Maintenance} holds the
 * maintenance lease ({@code LeaderElector}) and, while it does, runs the
 * {@code StaleJobRescuer}, the {@code DeadWorkerRemover} and
 * the {@code FinishedJobPruner}. Every {@code JobWorker} embeds one by default;
 * a process without workers (an API server) can start its own. {@code Maintenance} is public.
 */
package io.pgjobs.maintenance;
