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
 * lost. The hub's {@link io.pgjobs.server.events.EventLimits} bound the streams: over a limit the
 * request gets 429 with the reason.
 */
public final class EventsApi {
  private static final String FILTER = "pgjobs.events.filter";
  private static final String PEER = "pgjobs.events.peer";

  private final JobClient client;
  private final EventHub hub;
  private final QueuesApi queues;
  private final boolean tokensRequired;

  /** Streams {@code hub}'s events; snapshots come from {@code client}; no per-token limits. */
  public EventsApi(JobClient client, EventHub hub, QueuesApi queues) {
    this(client, hub, queues, false);
  }

  /**
   * Streams {@code hub}'s events; snapshots come from {@code client}.
   *
   * @param tokensRequired whether the server checks bearer tokens (then streams count against theirs)
   */
  public EventsApi(JobClient client, EventHub hub, QueuesApi queues, boolean tokensRequired) {
    this.client = client;
    this.hub = hub;
    this.queues = queues;
    this.tokensRequired = tokensRequired;
  }

  /** Registers the route. */
  public void register(Routes routes) {
    routes.sse("/events", this::check, sse -> {
      sse.keepAlive();
      EventFilter filter = sse.ctx().attribute(FILTER);
      EventHub.Peer peer = sse.ctx().attribute(PEER);
      hub.subscribe(sse, peer, filter, () -> snapshot(filter));
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
    EventFilter filter = new EventFilter(
        jobId,
        new HashSet<>(QueryParams.list(ctx, "type")),
        new HashSet<>(QueryParams.list(ctx, "queue")));
    ctx.attribute(FILTER, filter);
    // Last, so no check after it can leave the connection counted without a stream; and only for
    // the stream itself (a browser asking for text/html gets a page, which opens the stream next).
    String accept = ctx.header("Accept");
    if (accept == null || !accept.contains("text/event-stream")) {
      return;
    }
    String header = ctx.header("Authorization");
    String token =
        tokensRequired && header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)
            ? header.substring(7).trim()
            : null;
    try {
      ctx.attribute(PEER, hub.openStream(token));
    } catch (EventHub.Refused e) {
      ctx.header("Retry-After", "5");
      throw ApiProblem.http(
          429, "too-many-event-streams", "Too many event streams", e.getMessage());
    }
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
