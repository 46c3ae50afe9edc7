package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.Dependency;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.InvalidJobException;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobGraph;
import io.pgjobs.JobParent;
import io.pgjobs.server.problem.ApiProblem;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Job graphs ({@link JobGraph}): {@code POST /graphs} enqueues jobs that wait for one another, all or
 * none; {@code GET /jobs/{id}/parents} lists the jobs one waits or waited for, with how each ended.
 */
public final class GraphsApi {
  /**
   * The most jobs one {@code POST /graphs} may hold: a request body of that many jobs is a few megabytes
   * already. The Java API takes graphs of up to {@link JobGraph#MAX_JOBS}.
   */
  public static final int MAX_JOBS = 10_000;

  private static final Set<String> GRAPH_FIELDS = Set.of("jobs");
  private static final Set<String> NODE_FIELDS = new LinkedHashSet<>(List.of(
      "name",
      "type",
      "payload",
      "after",
      "queue",
      "priority",
      "run_at",
      "delay_ms",
      "max_attempts",
      "context",
      "timeout_ms",
      "capability",
      "partition"));
  private static final Set<String> EDGE_FIELDS =
      new LinkedHashSet<>(List.of("name", "job", "on_failure"));

  private final JobClient client;
  private final boolean acceptUnknownTypes;

  /** Serves {@code client}'s graphs. */
  public GraphsApi(JobClient client, boolean acceptUnknownTypes) {
    this.client = client;
    this.acceptUnknownTypes = acceptUnknownTypes;
  }

  /** Registers the routes. */
  public void register(Routes routes) {
    routes.post("/graphs", ctx -> enqueue(ctx, routes));
    routes.get("/jobs/{id}/parents", this::parents);
    routes.get("/jobs/{id}/graph", this::graph);
  }

  /**
   * The ids of the jobs enqueued, by their names in the graph (in the order given).
   *
   * @param jobs name → id
   */
  public record GraphView(Map<String, UUID> jobs) {}

  /**
   * A parent of a job.
   *
   * @param id its id
   * @param type its job type
   * @param onFailure {@code cancel}, {@code run} or {@code only}: what the child does if it fails
   * @param state how it ended ({@code succeeded}, {@code failed}, {@code cancelled}), or null while it
   *     has not
   * @param output its output if it succeeded with one
   */
  public record ParentView(UUID id, String type, String onFailure, String state, JsonNode output) {}

  /**
   * The parents of a job.
   *
   * @param parents in no particular order
   */
  public record ParentsView(List<ParentView> parents) {}

  private Reply enqueue(Context ctx, Routes routes) {
    JsonBody body = JsonBody.read(ctx, routes.json(), GRAPH_FIELDS);
    JsonNode jobs = body.any("jobs", true);
    body.done();
    if (!jobs.isArray()) {
      throw ApiProblem.badField("jobs", "must be an array of jobs, was " + JsonBody.kind(jobs));
    }
    if (jobs.isEmpty() || jobs.size() > MAX_JOBS) {
      throw ApiProblem.invalidField(
          "jobs",
          "must hold 1 to " + MAX_JOBS + " jobs (larger graphs, up to " + JobGraph.MAX_JOBS
              + " jobs, through JobClient.enqueueGraph), held " + jobs.size());
    }
    JobGraph.Builder graph = JobGraph.builder();
    String key = ctx.header(JobsApi.IDEMPOTENCY_KEY);
    if (key != null) {
      if (key.isBlank() || key.length() > io.pgjobs.EnqueueOptions.MAX_IDEMPOTENCY_KEY_LENGTH) {
        throw ApiProblem.invalidField(
            JobsApi.IDEMPOTENCY_KEY,
            "must be 1 to " + io.pgjobs.EnqueueOptions.MAX_IDEMPOTENCY_KEY_LENGTH
                + " characters, was " + key.length());
      }
      graph.idempotencyKey(key);
    }
    Map<String, Integer> index = new LinkedHashMap<>();
    for (int i = 0; i < jobs.size(); i++) {
      String at = "jobs[" + i + "]";
      JsonNode item = jobs.get(i);
      if (!(item instanceof ObjectNode object)) {
        throw ApiProblem.badField(at, "must be an object, was " + JsonBody.kind(item));
      }
      JsonBody node = JsonBody.nested(object, at + ".", NODE_FIELDS);
      String name = node.text("name", true, JobGraph.MAX_NAME_LENGTH);
      String type = node.text("type", true, 255);
      JsonNode payload = node.any("payload", false);
      List<Dependency> after = after(node, object.get("after"), at);
      EnqueueOptions options = JobsApi.options(null, node); // throws what it and the above found
      if (!acceptUnknownTypes && !client.knownTypes().containsKey(type)) {
        throw ApiProblem.unknownType(
            type, client.knownTypes().keySet().stream().sorted().toList());
      }
      try {
        graph.add(
            name,
            type,
            payload == null ? JsonNodeFactory.instance.objectNode() : payload,
            options,
            after.toArray(Dependency[]::new));
      } catch (InvalidJobException e) {
        throw atIndex(e, name, at);
      }
      index.put(name, i);
    }
    io.pgjobs.EnqueuedGraph ids;
    try {
      ids = client.enqueueGraph(graph.build());
    } catch (InvalidJobException e) {
      // "graph[name].field" → "jobs[i].field"; a payload's own field ("payload.to") stays as it is.
      String field = e.field();
      for (Map.Entry<String, Integer> n : index.entrySet()) {
        if (field.startsWith("graph[" + n.getKey() + "]")) {
          throw atIndex(e, n.getKey(), "jobs[" + n.getValue() + "]");
        }
      }
      throw e;
    }
    if (ids.replayed()) {
      // The jobs the key's first request made, as it answered (200, not 201: nothing new).
      return Reply.ok(new GraphView(ids.ids())).withHeader("Idempotent-Replayed", "true");
    }
    return Reply.created(new GraphView(ids.ids()));
  }

  /** {@code after}: names of jobs added before, or objects {@code {"name"|"job", "on_failure"}}. */
  private static List<Dependency> after(JsonBody node, JsonNode value, String at) {
    List<Dependency> out = new ArrayList<>();
    if (value == null || value.isNull()) {
      return out;
    }
    if (!value.isArray()) {
      node.malformed(
          "after",
          "must be an array of job names or {name|job, on_failure} objects, was "
              + JsonBody.kind(value));
      return out;
    }
    for (int k = 0; k < value.size(); k++) {
      JsonNode edge = value.get(k);
      String field = "after[" + k + "]";
      if (edge.isString()) {
        out.add(dependency(node, field, edge.asString(), null, "cancel"));
      } else if (edge instanceof ObjectNode o) {
        for (String member : o.propertyNames()) {
          if (!EDGE_FIELDS.contains(member)) {
            node.malformed(
                field + "." + member, "unknown field; allowed: " + String.join(", ", EDGE_FIELDS));
          }
        }
        String name = node.text(field + ".name", o.get("name"), false, JobGraph.MAX_NAME_LENGTH);
        String job = node.text(field + ".job", o.get("job"), false, 36);
        String policy = node.text(field + ".on_failure", o.get("on_failure"), false, 10);
        out.add(dependency(node, field, name, job, policy == null ? "cancel" : policy));
      } else {
        node.malformed(field, "must be a job name or an object, was " + JsonBody.kind(edge));
      }
    }
    return out.stream().filter(java.util.Objects::nonNull).toList();
  }

  private static Dependency dependency(
      JsonBody node, String field, String name, String job, String policy) {
    if ((name == null) == (job == null)) {
      node.reject(
          field, "names a job of the graph (name) or an enqueued job's id (job), one of them");
      return null;
    }
    Dependency.OnFailure onFailure;
    try {
      onFailure = Dependency.OnFailure.valueOf(policy.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      node.reject(field + ".on_failure", "must be cancel, run or only, was '" + policy + "'");
      return null;
    }
    Dependency d;
    if (name != null) {
      d = Dependency.on(name);
    } else {
      UUID id;
      try {
        id = UUID.fromString(job);
      } catch (IllegalArgumentException e) {
        node.reject(field + ".job", "must be a job id (a UUID), was '" + job + "'");
        return null;
      }
      d = Dependency.onJob(id);
    }
    return switch (onFailure) {
      case RUN -> d.runAnyway();
      case ONLY -> d.onlyIfItFails();
      case CANCEL -> d;
    };
  }

  /** A refusal of the builder or the client about job {@code name}, named by its place in the body. */
  private static ApiProblem atIndex(InvalidJobException e, String name, String at) {
    if (e.getCause() instanceof io.pgjobs.InvalidPayloadException p) {
      // A payload its type refuses: one entry per field, as POST /jobs answers, under the job's
      // place; 400 for a payload of the wrong shape, 422 for values its validator refuses.
      List<io.pgjobs.server.problem.Problem.FieldError> errors = p.problems().stream()
          .map(f -> new io.pgjobs.server.problem.Problem.FieldError(
              at + "."
                  + (f.field() == null || f.field().isEmpty()
                      ? "payload"
                      : f.field().startsWith("payload") ? f.field() : "payload." + f.field()),
              f.reason()))
          .toList();
      String detail = String.join(
          "; ", errors.stream().map(f -> f.field() + ": " + f.reason()).toList());
      return p.malformed()
          ? ApiProblem.badRequest(detail, errors)
          : ApiProblem.validation(detail, errors);
    }
    if (e.field().equals("graph.name")) {
      return ApiProblem.invalidField(
          at + ".name", e.getMessage().substring("graph.name: ".length()));
    }
    String prefix = "graph[" + name + "]";
    String field = e.field().startsWith(prefix)
        ? at + e.field().substring(prefix.length())
        : at + "." + e.field();
    String message = e.getMessage().startsWith(e.field() + ": ")
        ? e.getMessage().substring(e.field().length() + 2)
        : e.getMessage();
    return ApiProblem.invalidField(field, message);
  }

  private Reply parents(Context ctx) {
    UUID id = QueryParams.uuid(ctx, "id");
    Job job = client.get(id).orElseThrow(() -> ApiProblem.notFound("no job with id " + id));
    List<ParentView> parents = new ArrayList<>();
    for (JobParent p : client.parents(job.id())) {
      parents.add(new ParentView(
          p.id(),
          p.type(),
          p.onFailure().value(),
          p.state() == null ? null : p.state().value(),
          p.output() == null ? null : client.jsonMapper().readTree(p.output())));
    }
    return Reply.ok(new ParentsView(parents));
  }

  /**
   * A job's dependency graph: the jobs connected to it either way, with their states, and the edges.
   *
   * @param jobs the jobs, the one asked for first
   * @param edges the edges between them
   * @param truncated true when there were more than {@link JobClient#MAX_GRAPH_JOBS} jobs
   */
  public record GraphOfJobView(List<NodeView> jobs, List<EdgeView> edges, boolean truncated) {}

  /**
   * A job of a dependency graph.
   *
   * @param id its id
   * @param type its type
   * @param state its state
   * @param queue its queue
   * @param name its name in its graph, or null
   */
  public record NodeView(UUID id, String type, String state, String queue, String name) {}

  /**
   * An edge of a dependency graph: {@code child} waits or waited for {@code parent}.
   *
   * @param parent the parent
   * @param child the child
   * @param onFailure {@code cancel}, {@code run} or {@code only}
   * @param parentState how the parent ended, or null while it has not
   */
  public record EdgeView(UUID parent, UUID child, String onFailure, String parentState) {}

  private Reply graph(Context ctx) {
    UUID id = QueryParams.uuid(ctx, "id");
    io.pgjobs.DependencyGraph graph = client.dependencyGraph(id, JobClient.MAX_GRAPH_JOBS);
    if (graph.jobs().isEmpty()) {
      throw ApiProblem.notFound("no job with id " + id);
    }
    return Reply.ok(new GraphOfJobView(
        graph.jobs().stream()
            .map(n -> new NodeView(n.id(), n.type(), n.state().value(), n.queue(), n.name()))
            .toList(),
        graph.edges().stream()
            .map(e -> new EdgeView(
                e.parent(),
                e.child(),
                e.onFailure().value(),
                e.parentState() == null ? null : e.parentState().value()))
            .toList(),
        graph.truncated()));
  }
}
