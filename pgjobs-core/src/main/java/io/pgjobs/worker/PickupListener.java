package io.pgjobs.worker;

import java.util.List;
import java.util.UUID;

/**
 * Told, with {@link System#nanoTime()} stamps, how a worker picks jobs up: when a ready notification
 * arrives, when a claim returns and when a lane takes a job, so that pickup latency can be split into its
 * stages (pgjobs-bench's W4 breakdown uses it). Set with {@code JobWorker.Builder.pickupListener}; a worker
 * without one pays a null check of a field per stage, nothing else.
 *
 * <p>It is called on the worker's own threads (the listener's, the pollers', the lanes'), so it must be
 * quick and must not throw.
 */
public interface PickupListener {
  /** A ready notification arrived (before the worker acts on it). */
  void notified(long nanos);

  /**
   * A claim returned these jobs.
   *
   * @param onNotification the claim ran on the listener's thread and connection, right after a
   *     notification
   */
  void claimed(List<UUID> ids, long nanos, boolean onNotification);

  /** A lane (the handler's thread) took this job and is about to run it. */
  void started(UUID id, long nanos);
}
