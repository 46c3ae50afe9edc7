package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobFilter;
import io.pgjobs.JobPage;
import io.pgjobs.JobState;
import io.pgjobs.server.problem.ApiProblem;
import io.pgjobs.workflow.WorkflowStep;
import io.pgjobs.workflow.WorkflowType;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;

/**
 * Durable step workflows over HTTP ({@code io.pgjobs.workflow}): the workflows the server knows
 * ({@code GET /workflow-types}: {@code JobClient.knownWorkflows()}), their runs ({@code GET /workflows}),
 * start a run ({@code POST /workflows/{name}/start}, and the seed's
 * {@code POST /_api/workflows/{name}/start}), read it with its recorded steps ({@code GET /workflows/{id}}),
 * signal it ({@code POST /workflows/{id}/signals/{name}}), cancel it with compensation
 * ({@code POST /workflows/{id}/cancel}). A run is a job of the workflow's type.
 *
 * <p>A server whose client knows workflows starts only those, unless it accepts unknown types; one whose
 * client knows none starts any known job type as a workflow, as before workflows could be declared.
 */
public final class WorkflowsApi {
  private static final Set<String> START_FIELDS = Set.of("input", "queue", "priority", "context");
  private static final Set<String> SIGNAL_FIELDS = Set.of("payload");
  /** A job type's name, as {@code JobType} allows it. */
  private static final Pattern TYPE_NAME = Pattern.compile("[A-Za-z0-9_.:\\-/]{1,255}");

  private final JobClient client;
  private final boolean acceptUnknownTypes;

  /** Serves {@code client}'s workflow runs. */
  public WorkflowsApi(JobClient client, boolean acceptUnknownTypes) {
    this.client = client;
    this.acceptUnknownTypes = acceptUnknownTypes;
  }

  /** Registers the routes. */
  public void register(Routes routes) {
    routes.post("/workflows/{name}/start", ctx -> start(ctx, routes));
    routes.post("/_api/workflows/{name}/start", ctx -> start(ctx, routes));
    routes.get("/workflow-types", ctx -> workflowTypes());
    routes.get("/workflows", this::list);
    routes.get("/workflows/{id}", this::get);
    routes.post("/workflows/{id}/signals/{signal}", ctx -> signal(ctx, routes));
    routes.post("/workflows/{id}/cancel", this::cancel);
  }

  /**
   * A workflow run.
   *
   * @param id its id (its job's)
   * @param workflow the workflow's name
   * @param state its job's state
   * @param attempts attempts so far
   * @param maxAttempts attempts allowed
   * @param output its output once it succeeded
   * @param steps its recorded steps, in the order they first ran
   */
  public record RunView(
      UUID id,
      String workflow,
      String state,
      int attempts,
      int maxAttempts,
      JsonNode output,
      List<StepView> steps) {}

  /**
   * A recorded step.
   *
   * @param name its name
   * @param kind {@code step}, {@code sleep}, {@code signal} or {@code jobs} (awaitJobs)
   * @param state {@code done}, {@code skipped}, {@code compensated} or {@code compensation_failed}
   * @param result its result (a sleep's: when it wakes; a signal's: its payload), or null
   * @param error a skipped step's or failed compensation's error, or null
   * @param seq the order in which it first ran
   * @param finishedAt when it was recorded, or its compensation ended
   */
  public record StepView(
      String name,
      String kind,
      String state,
      JsonNode result,
      String error,
      int seq,
      Instant finishedAt) {}

  /**
   * A workflow the server knows.
   *
   * @param name its name (its runs' job type)
   * @param version its version
   * @param queue its runs' default queue
   * @param maxAttempts attempts per run
   * @param timeoutMs how long one execution of a run may last
   * @param deadlineMs how long a run may take from its first start to its end, or null for no limit
   * @param inputTemplate its example input if it has one, else its input class's members with empty values
   *     (as {@code GET /job-types} makes a payload template)
   */
  public record WorkflowTypeView(
      String name,
      int version,
      String queue,
      int maxAttempts,
      long timeoutMs,
      Long deadlineMs,
      JsonNode inputTemplate) {}

  /**
   * The workflows the server knows, by name.
   *
   * @param workflows each workflow
   */
  public record WorkflowTypeListView(List<WorkflowTypeView> workflows) {}

  /**
   * A run in a list (its steps are on {@code GET /workflows/{id}}).
   *
   * @param id its id (its job's)
   * @param workflow the workflow's name
   * @param state its job's state
   * @param attempts attempts so far
   * @param maxAttempts attempts allowed
   * @param createdAt when it was started
   * @param finishedAt when it ended, or null
   */
  public record RunSummaryView(
      UUID id,
      String workflow,
      String state,
      int attempts,
      int maxAttempts,
      Instant createdAt,
      Instant finishedAt) {}

  /**
   * A page of runs, newest first.
   *
   * @param runs the runs
   * @param nextCursor pass as {@code cursor} for the next page; null on the last page
   */
  public record RunPageView(List<RunSummaryView> runs, String nextCursor) {}

  /**
   * A signal's reception.
   *
   * @param stored false when a signal of that name had come before (this one was not stored)
   */
  public record SignalView(boolean stored) {}

  /**
   * A cancellation asked.
   *
   * @param cancelRequested false when it had been asked before
   */
  public record CancelView(boolean cancelRequested) {}

  private Reply workflowTypes() {
    return Reply.ok(new WorkflowTypeListView(client.knownWorkflows().values().stream()
        .sorted(Comparator.comparing(WorkflowType::name))
        .map(w -> new WorkflowTypeView(
            w.name(),
            w.version(),
            w.jobType().queue(),
            w.maxAttempts(),
            w.timeout().toMillis(),
            w.deadline().map(java.time.Duration::toMillis).orElse(null),
            JobTypesApi.templateOf(w.jobType())))
        .toList()));
  }

  /**
   * {@code GET /workflows}: runs of the known workflows (or of those {@code workflow} names), newest first,
   * a page at a time as {@code GET /jobs} pages.
   */
  private Reply list(Context ctx) {
    Map<String, WorkflowType<?>> known = client.knownWorkflows();
    List<String> names = QueryParams.list(ctx, "workflow");
    for (String name : names) {
      if (known.containsKey(name)) {
        continue;
      }
      if (!acceptUnknownTypes) {
        throw ApiProblem.badField(
            "workflow",
            "'" + name + "' is not a workflow this server knows; known workflows: "
                + (known.isEmpty() ? "(none)" : String.join(", ", knownWorkflows())));
      }
      if (!TYPE_NAME.matcher(name).matches()) {
        throw ApiProblem.badField(
            "workflow",
            "'" + name + "' is not a workflow's name; allowed: 1 to 255 characters of letters,"
                + " digits and _ . : - /");
      }
    }
    JobFilter.Builder filter = JobFilter.builder();
    for (String state : QueryParams.list(ctx, "state")) {
      try {
        filter.state(JobState.parse(state));
      } catch (IllegalArgumentException e) {
        throw ApiProblem.badField("state", e.getMessage());
      }
    }
    List<String> types = names.isEmpty() ? knownWorkflows() : names;
    filter.type(types.toArray(String[]::new));
    filter.limit(
        QueryParams.integer(ctx, "limit", JobFilter.DEFAULT_LIMIT, 1, JobFilter.MAX_LIMIT));
    JobFilter built;
    try {
      built = filter.cursor(QueryParams.single(ctx, "cursor")).build();
    } catch (io.pgjobs.InvalidJobException e) {
      throw ApiProblem.badField(e.field(), e.getMessage().substring(e.field().length() + 2));
    }
    if (types.isEmpty()) {
      // No workflow known and none named: no run (an empty type filter would match every job).
      return Reply.ok(new RunPageView(List.of(), null));
    }
    JobPage page = client.list(built);
    return Reply.ok(new RunPageView(
        page.jobs().stream()
            .map(j -> new RunSummaryView(
                j.id(),
                j.type(),
                j.state().value(),
                j.attempts(),
                j.maxAttempts(),
                j.createdAt(),
                j.finishedAt()))
            .toList(),
        page.nextCursor()));
  }

  /** The known workflows' names, sorted. */
  private List<String> knownWorkflows() {
    return client.knownWorkflows().keySet().stream().sorted().toList();
  }

  private Reply cancel(Context ctx) {
    UUID id = QueryParams.uuid(ctx, "id");
    unendedRun(id, "");
    try {
      return Reply.of(202, new CancelView(client.cancelWorkflow(id)));
    } catch (io.pgjobs.InvalidJobException e) {
      // It ended between the read and the cancel.
      throw ApiProblem.conflict("run-ended", "Run ended", e.getMessage(), "ended");
    }
  }

  /** The run {@code id}, or 404; 409 if it has ended ({@code why}: what that means for the request). */
  private Job unendedRun(UUID id, String why) {
    Job job = run(id);
    if (job.state().isTerminal()) {
      throw ApiProblem.conflict(
          "run-ended",
          "Run ended",
          "workflow run " + id + " has ended (" + job.state().value() + ")" + why,
          job.state().value());
    }
    return job;
  }

  private Job run(UUID id) {
    return client.get(id).orElseThrow(() -> ApiProblem.notFound("no workflow run with id " + id));
  }

  private Reply start(Context ctx, Routes routes) {
    String name = ctx.pathParam("name");
    JsonBody body = JsonBody.read(ctx, routes.json(), START_FIELDS);
    JsonNode input = body.any("input", true);
    EnqueueOptions.Builder options = EnqueueOptions.builder();
    String queue = body.text("queue", false, 255);
    if (queue != null) {
      options.queue(queue);
    }
    Integer priority = body.priority("priority");
    if (priority != null) {
      options.priority(priority);
    }
    String context = body.text("context", false, EnqueueOptions.MAX_CONTEXT_LENGTH);
    if (context != null) {
      options.context(context);
    }
    body.done();
    if (!acceptUnknownTypes) {
      if (!client.knownWorkflows().isEmpty()) {
        if (!client.knownWorkflows().containsKey(name)) {
          throw ApiProblem.unknownWorkflow(name, knownWorkflows());
        }
      } else if (!client.knownTypes().containsKey(name)) {
        // A client told of no workflow: any known job type may be one, as before workflows were
        // declared.
        throw ApiProblem.unknownType(
            name, client.knownTypes().keySet().stream().sorted().toList());
      }
    }
    EnqueuedJob run = client.enqueue(name, input, options.build());
    return Reply.created(view(run.job()))
        .withHeader("Location", ctx.contextPath() + "/workflows/" + run.job().id());
  }

  private Reply get(Context ctx) {
    return Reply.ok(view(run(QueryParams.uuid(ctx, "id"))));
  }

  private Reply signal(Context ctx, Routes routes) {
    UUID id = QueryParams.uuid(ctx, "id");
    String signal = ctx.pathParam("signal");
    if (signal.isEmpty()
        || signal.length() > 200
        || signal.startsWith("(")
        || signal.indexOf('\u0000') >= 0) {
      throw ApiProblem.invalidField(
          "signal",
          "a signal's name is 1 to 200 characters, not starting with '(' (pgjobs' own), without"
              + " U+0000, was " + signal.length() + " characters"
              + (signal.startsWith("(") ? " starting with '('" : ""));
    }
    JsonBody body = JsonBody.read(ctx, routes.json(), SIGNAL_FIELDS);
    JsonNode payload = body.any("payload", true);
    body.done();
    unendedRun(id, "; it waits for no signal");
    return Reply.of(202, new SignalView(client.signalWorkflow(id, signal, payload)));
  }

  private RunView view(Job job) {
    List<StepView> steps =
        client.workflowSteps(job.id()).stream().map(this::step).toList();
    return new RunView(
        job.id(),
        job.type(),
        job.state().value(),
        job.attempts(),
        job.maxAttempts(),
        job.output(),
        steps);
  }

  private StepView step(WorkflowStep s) {
    return new StepView(
        s.name(),
        s.kind(),
        s.state(),
        s.resultJson() == null ? null : client.jsonMapper().readTree(s.resultJson()),
        s.error(),
        s.seq(),
        s.finishedAt());
  }
}
