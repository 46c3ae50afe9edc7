package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.JobClient;
import io.pgjobs.recurring.RecurringSchedules;
import io.pgjobs.recurring.RecurringSchedules.Definition;
import io.pgjobs.recurring.RecurringSchedules.Schedule;
import io.pgjobs.recurring.ScheduleException;
import io.pgjobs.server.problem.ApiProblem;
import io.pgjobs.server.problem.Problem.FieldError;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code /recurring}: recurring (cron) schedules managed at run time: list and get them with their
 * expression in words, next fire times and last run; add, replace and remove schedules added over the
 * API; pause, resume and run now any schedule (code-declared ones too). A schedule declared in code
 * cannot be replaced or removed here: 409 {@code declared-in-code}.
 */
public final class RecurringApi {
  private static final Set<String> UPDATE_FIELDS = new LinkedHashSet<>(List.of(
      "cron",
      "zone",
      "type",
      "payload",
      "queue",
      "priority",
      "max_attempts",
      "missed",
      "catch_up"));
  private static final Set<String> CREATE_FIELDS = new LinkedHashSet<>(List.of("name"));

  static {
    CREATE_FIELDS.addAll(UPDATE_FIELDS);
  }

  private final JobClient client;
  private final RecurringSchedules schedules;
  private final boolean acceptUnknownTypes;

  /** Serves {@code client}'s schedules; job types as {@code POST /jobs} treats them. */
  public RecurringApi(JobClient client, boolean acceptUnknownTypes) {
    this.client = client;
    this.schedules = client.recurring();
    this.acceptUnknownTypes = acceptUnknownTypes;
  }

  /** Registers the routes. */
  public void register(Routes routes) {
    routes.get(
        "/recurring",
        ctx -> Reply.ok(new ScheduleListView(schedules.list().stream()
            .map(s -> ScheduleView.of(s, routes.json()))
            .toList())));
    routes.post("/recurring", ctx -> {
      Definition d = definition(ctx, routes.json(), null);
      Schedule s = refused(() -> schedules.add(d));
      return Reply.created(ScheduleView.of(s, routes.json()))
          .withHeader("Location", "/recurring/" + s.name());
    });
    routes.get("/recurring/{name}", ctx -> {
      String name = ctx.pathParam("name");
      return Reply.ok(ScheduleView.of(
          schedules
              .get(name)
              .orElseThrow(() -> ApiProblem.notFound("no recurring schedule named '" + name + "'")),
          routes.json()));
    });
    routes.put("/recurring/{name}", ctx -> {
      Definition d = definition(ctx, routes.json(), ctx.pathParam("name"));
      return Reply.ok(ScheduleView.of(refused(() -> schedules.update(d)), routes.json()));
    });
    routes.delete(
        "/recurring/{name}",
        ctx -> Reply.ok(ScheduleView.of(
            refused(() -> schedules.remove(ctx.pathParam("name"))), routes.json())));
    routes.post(
        "/recurring/{name}/pause",
        ctx -> Reply.ok(
            ScheduleView.of(refused(() -> schedules.pause(ctx.pathParam("name"))), routes.json())));
    routes.post(
        "/recurring/{name}/resume",
        ctx -> Reply.ok(ScheduleView.of(
            refused(() -> schedules.resume(ctx.pathParam("name"))), routes.json())));
    routes.post("/recurring/{name}/run", ctx -> {
      EnqueuedJob job = refused(() -> schedules.runNow(ctx.pathParam("name")));
      JobsApi.JobView view = JobsApi.JobView.of(job.job());
      return Reply.created(view).withHeader("Location", "/jobs/" + view.id());
    });
  }

  /**
   * The definition in the body (POST: with its name; PUT: the name from the path). Every field problem is
   * reported at once, before anything is stored.
   */
  private Definition definition(Context ctx, JsonMapper json, String pathName) {
    JsonBody body = JsonBody.read(ctx, json, pathName == null ? CREATE_FIELDS : UPDATE_FIELDS);
    String name = pathName != null ? pathName : body.text("name", true, 200);
    String cron = body.text("cron", true, 1000);
    String zone = body.text("zone", false, 100);
    String type = body.text("type", true, 255);
    JsonNode payload = body.any("payload", false);
    String queue = body.text("queue", false, 255);
    Integer priority = body.priority("priority");
    Long maxAttempts = body.integer("max_attempts", 1, EnqueueOptions.MAX_MAX_ATTEMPTS);
    String missed = body.text("missed", false, 20);
    Long catchUp = body.integer("catch_up", 1, 1000);
    if (missed != null && !List.of("skip", "latest", "catch_up").contains(missed)) {
      body.reject("missed", "must be skip, latest or catch_up, was '" + missed + "'");
    }
    if (payload != null && !payload.isObject()) {
      // The wrong JSON type: 400, as for any member (JsonBody's rule).
      body.done();
      throw ApiProblem.badRequest(
          "payload: must be a JSON object, was " + JsonBody.kind(payload),
          List.of(
              new FieldError("payload", "must be a JSON object, was " + JsonBody.kind(payload))));
    }
    Definition d = new Definition(
        name,
        cron,
        zone,
        type,
        payload,
        queue,
        priority,
        maxAttempts == null ? null : maxAttempts.intValue(),
        missed,
        catchUp == null ? null : catchUp.intValue());
    // The rules the library applies (cron with position and reason, zone, name, queue, payload of a
    // known type), reported with the body's own problems in one document. A missing or mistyped
    // member was reported above already.
    schedules.problems(d).stream()
        .filter(p ->
            !p.reason().equals("is required") && (pathName == null || !p.field().equals("name")))
        .filter(p -> !(p.field().equals("missed") && missed != null)
            && !(p.field().equals("catch_up") && catchUp == null))
        .forEach(p -> body.reject(p.field(), p.reason()));
    body.done();
    if (!acceptUnknownTypes && !client.knownTypes().containsKey(type)) {
      throw ApiProblem.unknownType(
          type, client.knownTypes().keySet().stream().sorted().toList());
    }
    return d;
  }

  /** Runs a change, turning a refusal into its problem document. */
  private static <T> T refused(Supplier<T> change) {
    try {
      return change.get();
    } catch (ScheduleException e) {
      throw switch (e.kind()) {
        case INVALID ->
          ApiProblem.validation(
              e.getMessage(),
              e.problems().stream()
                  .map(p -> new FieldError(p.field(), p.reason()))
                  .toList());
        case NOT_FOUND -> ApiProblem.notFound(e.getMessage());
        case ALREADY_EXISTS ->
          ApiProblem.conflict(
              "recurring-exists", "Recurring schedule exists", e.getMessage(), null);
        case DECLARED_IN_CODE ->
          ApiProblem.conflict("declared-in-code", "Declared in code", e.getMessage(), null);
      };
    }
  }

  // ---------------------------------------------------------------- views

  /**
   * A schedule as the API shows it.
   *
   * @param description the cron expression in words
   * @param nextRuns the next 5 fire times (shown while paused too: the slots it would fire)
   * @param lastRun the last job the schedule enqueued, or null
   */
  public record ScheduleView(
      String name,
      String cron,
      String description,
      String zone,
      String type,
      String queue,
      JsonNode payload,
      int priority,
      int maxAttempts,
      String missed,
      int catchUp,
      boolean paused,
      String source,
      boolean disabled,
      Instant lastSlot,
      List<Instant> nextRuns,
      LastRunView lastRun,
      Instant createdAt,
      Instant updatedAt) {
    static ScheduleView of(Schedule s, JsonMapper json) {
      RecurringSchedules.LastRun last = s.lastRun();
      return new ScheduleView(
          s.name(),
          s.cron(),
          s.description(),
          s.zone(),
          s.type(),
          s.queue(),
          json.readTree(s.payloadJson()),
          s.priority(),
          s.maxAttempts(),
          s.missed(),
          s.catchUp(),
          s.paused(),
          s.source(),
          s.disabled(),
          s.lastSlot(),
          s.nextRuns(),
          last == null
              ? null
              : new LastRunView(
                  last.jobId(),
                  last.state() == null ? null : last.state().value(),
                  last.createdAt(),
                  last.finishedAt()),
          s.createdAt(),
          s.updatedAt());
    }
  }

  /**
   * The last job of a schedule.
   *
   * @param state its state, or null once it is no longer kept (pruned)
   */
  public record LastRunView(UUID jobId, String state, Instant createdAt, Instant finishedAt) {}

  /** Every schedule, by name. */
  public record ScheduleListView(List<ScheduleView> schedules) {}
}
