package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.JobClient;
import io.pgjobs.server.events.EventFilter;
import io.pgjobs.server.events.EventHub;
import io.pgjobs.server.problem.ApiProblem;
import java.util.HashSet;
import java.util.List;
import java.util.UUID;

/**
 * {@code /events}: Server-Sent Events of job state changes ({@code state}) and progress
 * ({@code progress}), filterable by {@code job_id}, {@code type} and {@code queue}. The first event is
 * a {@code snapshot}: the job (with {@code job_id}) or the queue overview, so a reconnecting client
 * starts from the current state; {@code resync} (followed by a new snapshot) says events may have been
 * lost.
 */
public final class EventsApi {
  private static final String FILTER = "pgjobs.events.filter";

  private final JobClient client;
  private final EventHub hub;
  private final QueuesApi queues;

  /** Streams {@code hub}'s events; snapshots come from {@code client}. */
  public EventsApi(JobClient client, EventHub hub, QueuesApi queues) {
    this.client = client;
    this.hub = hub;
    this.queues = queues;
  }

  /** Registers the route. */
  public void register(Routes routes) {
    routes.sse("/events", this::check, sse -> {
      sse.keepAlive();
      EventFilter filter = sse.ctx().attribute(FILTER);
      hub.subscribe(sse, filter, () -> snapshot(filter));
    });
  }

  /** Validates the parameters before the stream starts, so a bad one still gets a problem document. */
  private void check(Context ctx) {
    String jobIdText = QueryParams.single(ctx, "job_id");
    UUID jobId = null;
    if (jobIdText != null) {
      try {
        if (jobIdText.length() != 36) {
          throw new IllegalArgumentException();
        }
        jobId = UUID.fromString(jobIdText);
      } catch (IllegalArgumentException e) {
        throw ApiProblem.badField("job_id", "must be a UUID, was '" + jobIdText + "'");
      }
      if (client.get(jobId).isEmpty()) {
        throw ApiProblem.notFound("no job with id " + jobId);
      }
    }
    EventFilter filter = new EventFilter(jobId, new HashSet<>(QueryParams.list(ctx, "type")),
        new HashSet<>(QueryParams.list(ctx, "queue")));
    ctx.attribute(FILTER, filter);
  }

  Object snapshot(EventFilter filter) {
    if (filter.jobId() != null) {
      return new JobSnapshot(client.get(filter.jobId()).map(JobsApi.JobView::of).orElse(null));
    }
    List<QueuesApi.QueueView> overview = queues.overview().stream()
        .filter(q -> filter.queues().isEmpty() || filter.queues().contains(q.name()))
        .toList();
    return new QueuesSnapshot(overview);
  }

  /** The snapshot of a stream for one job: the job now (null if it was pruned meanwhile). */
  public record JobSnapshot(JobsApi.JobView job) {}

  /** The snapshot of a stream for many jobs: the queue overview. */
  public record QueuesSnapshot(List<QueuesApi.QueueView> queues) {}
}
