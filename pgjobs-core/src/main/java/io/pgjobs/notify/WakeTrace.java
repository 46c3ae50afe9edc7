package io.pgjobs.notify;

import java.util.List;
import java.util.UUID;

/**
 * INTERNAL, for the benchmark harness (pgjobs-bench's W4 stage breakdown) only: not an API, may change
 * or go away in any release. A probe installed here is told, with {@link System#nanoTime()} stamps,
 * when the listener receives a notification, when a claim returns and when a lane takes a job, so that
 * pickup latency can be split into its stages. With no probe installed (always, outside the bench) the
 * hot path pays one read of a static field and a null check per stage, nothing else.
 */
public final class WakeTrace {
  private WakeTrace() {}

  /** Receives the stamps; called on the worker's own threads, so it must be quick and never throw. */
  public interface Probe {
    /** The listener has read a notification (before handling it). */
    void notificationReceived(long nanos);

    /**
     * A claim returned these jobs.
     *
     * @param onNotification made on the listener's thread and connection, right after a notification
     */
    void claimReturned(List<UUID> ids, long nanos, boolean onNotification);

    /** A lane (the handler's thread) took this job and is about to run it. */
    void laneStarted(UUID id, long nanos);
  }

  // Volatile: installed by the bench's thread before it starts a worker, read on the worker's
  // threads.
  private static volatile Probe probe;

  /** Installs {@code p} (null removes it). */
  public static void install(Probe p) {
    probe = p;
  }

  /** The installed probe, or null (the normal case). */
  public static Probe probe() {
    return probe;
  }
}
