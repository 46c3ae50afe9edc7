package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.QueueInfo;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code /queues}: the overview (counts per state, scheduled, oldest ready job, paused) and pause/resume. */
public final class QueuesApi {
  private final JobClient client;

  /** Serves {@code client}'s queues. */
  public QueuesApi(JobClient client) {
    this.client = client;
  }

  /** Registers the routes. */
  public void register(Routes routes) {
    routes.get("/queues", ctx -> Reply.ok(new QueueListView(overview())));
    routes.post("/queues/{name}/pause", ctx -> setPaused(ctx, true));
    routes.post("/queues/{name}/resume", ctx -> setPaused(ctx, false));
  }

  /** Every queue, by name. */
  public List<QueueView> overview() {
    return client.queues().stream().map(QueueView::of).toList();
  }

  private Reply setPaused(Context ctx, boolean paused) {
    String name = ctx.pathParam("name");
    if (paused) {
      client.pauseQueue(name);
    } else {
      client.resumeQueue(name);
    }
    QueueView view = overview().stream()
        .filter(q -> q.name().equals(name))
        .findFirst()
        .orElseGet(() -> new QueueView(name, zeroCounts(), 0, null, paused));
    return Reply.ok(view);
  }

  private static Map<String, Long> zeroCounts() {
    Map<String, Long> counts = new LinkedHashMap<>();
    for (JobState s : JobState.values()) {
      counts.put(s.value(), 0L);
    }
    return counts;
  }

  /**
   * One queue.
   *
   * @param counts jobs per state (finished ones while kept), every state present
   * @param scheduled queued jobs whose run_at is in the future
   * @param oldestReadyAgeMs how long the oldest due job has waited, or null when none is due
   * @param paused true while workers do not claim from it
   */
  public record QueueView(String name, Map<String, Long> counts, long scheduled, Long oldestReadyAgeMs, boolean paused) {
    static QueueView of(QueueInfo q) {
      Map<String, Long> counts = new LinkedHashMap<>();
      for (JobState s : JobState.values()) {
        counts.put(s.value(), q.count(s));
      }
      return new QueueView(q.name(), counts, q.scheduled(),
          q.oldestDueAge() == null ? null : q.oldestDueAge().toMillis(), q.paused());
    }
  }

  /** The queue overview. */
  public record QueueListView(List<QueueView> queues) {}
}
