package io.pgjobs;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * A registered worker process.
 *
 * @param id worker id ({@code host:pid:random} unless configured)
 * @param host host name
 * @param pid process id
 * @param queues queues it serves, with their concurrency
 * @param jobTypes the job types it can run
 * @param startedAt when it registered
 * @param lastHeartbeat its latest heartbeat
 * @param runningJobs jobs it is running now
 * @param stuckLanes lanes held by handlers the worker had to let go
 * @param capabilities the capabilities it declared (empty: none; it runs only jobs that need none)
 * @param alive false once it has been silent for longer than its dead-worker threshold (while the database
 *     was up): maintenance then presumes it dead and rescues its jobs, and its row stays until the stale
 *     threshold
 */
public record WorkerInfo(
    String id,
    String host,
    long pid,
    Map<String, Integer> queues,
    List<String> jobTypes,
    Instant startedAt,
    Instant lastHeartbeat,
    long runningJobs,
    int stuckLanes,
    List<String> capabilities,
    boolean alive) {

  /** A live worker (the components before {@code alive}). */
  public WorkerInfo(
      String id,
      String host,
      long pid,
      Map<String, Integer> queues,
      List<String> jobTypes,
      Instant startedAt,
      Instant lastHeartbeat,
      long runningJobs,
      int stuckLanes,
      List<String> capabilities) {
    this(
        id,
        host,
        pid,
        queues,
        jobTypes,
        startedAt,
        lastHeartbeat,
        runningJobs,
        stuckLanes,
        capabilities,
        true);
  }

  /** A worker without capabilities (the components before {@code capabilities}). */
  public WorkerInfo(
      String id,
      String host,
      long pid,
      Map<String, Integer> queues,
      List<String> jobTypes,
      Instant startedAt,
      Instant lastHeartbeat,
      long runningJobs,
      int stuckLanes) {
    this(
        id,
        host,
        pid,
        queues,
        jobTypes,
        startedAt,
        lastHeartbeat,
        runningJobs,
        stuckLanes,
        List.of());
  }
}
