/**
 * Background upkeep done by one node at a time: {@link io.pgjobs.maintenance.Maintenance} holds the
 * maintenance lease ({@link io.pgjobs.maintenance.LeaderElector}) and, while it does, runs the
 * {@link io.pgjobs.maintenance.StaleJobRescuer}, the {@link io.pgjobs.maintenance.DeadWorkerRemover} and
 * the {@link io.pgjobs.maintenance.FinishedJobPruner}. Every {@code JobWorker} embeds one by default;
 * a process without workers (an API server) can start its own. {@code Maintenance} is public.
 */
package io.pgjobs.maintenance;
