package io.pgjobs.server.api;

import io.pgjobs.JobClient;
import io.pgjobs.WorkerInfo;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/** {@code /workers}: registered worker processes with their heartbeats and running job counts. */
public final class WorkersApi {
  private final JobClient client;

  /** Serves {@code client}'s workers. */
  public WorkersApi(JobClient client) {
    this.client = client;
  }

  /** Registers the route. */
  public void register(Routes routes) {
    routes.get(
        "/workers",
        ctx -> Reply.ok(
            new WorkerListView(client.workers().stream().map(WorkerView::of).toList())));
  }

  /**
   * One worker process.
   *
   * @param queues the queues it serves, with their concurrency
   * @param jobTypes the job types it can run
   * @param runningJobs jobs it runs now
   * @param stuckLanes lanes held by handlers it had to let go (they ignored their timeout, cancellation or
   *     shutdown); each stays occupied until its handler returns
   * @param capabilities the capabilities it declared (empty: it runs only jobs that need none)
   * @param alive false once it has been silent for longer than its dead-worker threshold: presumed dead,
   *     its jobs rescued
   */
  public record WorkerView(
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
    static WorkerView of(WorkerInfo w) {
      return new WorkerView(
          w.id(),
          w.host(),
          w.pid(),
          w.queues(),
          w.jobTypes(),
          w.startedAt(),
          w.lastHeartbeat(),
          w.runningJobs(),
          w.stuckLanes(),
          w.capabilities(),
          w.alive());
    }
  }

  /** Every registered worker. */
  public record WorkerListView(List<WorkerView> workers) {}
}
