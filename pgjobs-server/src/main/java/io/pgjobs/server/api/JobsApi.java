package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.CancelCounts;
import io.pgjobs.CancelResult;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.InvalidJobException;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobError;
import io.pgjobs.JobFilter;
import io.pgjobs.JobPage;
import io.pgjobs.JobState;
import io.pgjobs.JobWait;
import io.pgjobs.RetryResult;
import io.pgjobs.server.problem.ApiProblem;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * {@code /jobs}: enqueue (with idempotency keys), dispatch by type, list, get, cancel and retry, one
 * at a time or by filter.
 */
public final class JobsApi {
  /** Longest delay accepted: 10 years in milliseconds. */
  static final long MAX_DELAY_MS = Duration.ofDays(3650).toMillis();
  /** Longest per-attempt timeout accepted: 30 days in milliseconds. */
  static final long MAX_TIMEOUT_MS = Duration.ofDays(30).toMillis();
  /** Header carrying the idempotency key of an enqueue. */
  public static final String IDEMPOTENCY_KEY = "Idempotency-Key";

  private static final List<String> OPTION_FIELDS = List.of(
      "queue",
      "priority",
      "run_at",
      "delay_ms",
      "max_attempts",
      "context",
      "timeout_ms",
      "unique",
      "capability",
      "partition");
  private static final Set<String> ENQUEUE_FIELDS = fields("type", "kind", "payload");
  private static final Set<String> DISPATCH_FIELDS = fields("args");
  private static final Set<String> BULK_FIELDS =
      new LinkedHashSet<>(List.of("types", "queues", "states", "all", "dry_run"));

  private final JobClient client;
  private final boolean acceptUnknownTypes;

  /** Serves {@code client}'s jobs. */
  public JobsApi(JobClient client, boolean acceptUnknownTypes) {
    this.client = client;
    this.acceptUnknownTypes = acceptUnknownTypes;
  }

  private static Set<String> fields(String... first) {
    Set<String> s = new LinkedHashSet<>(List.of(first));
    s.addAll(OPTION_FIELDS);
    return s;
  }

  /** Registers the routes. */
  public void register(Routes routes) {
    routes.post("/jobs", ctx -> enqueue(ctx, routes));
    routes.post("/jobs/{type}/dispatch", ctx -> dispatch(ctx, routes));
    // The seed's spelling of the same route, so code written against it works unchanged.
    routes.post("/_api/jobs/{type}/dispatch", ctx -> dispatch(ctx, routes));
    routes.get("/jobs", this::list);
    routes.post("/jobs/cancel", ctx -> cancelAll(ctx, routes));
    routes.post("/jobs/retry", ctx -> retryAll(ctx, routes));
    routes.get("/jobs/{id}", this::get);
    routes.post("/jobs/{id}/cancel", this::cancel);
    routes.post("/jobs/{id}/retry", this::retry);
  }

  // ---------------------------------------------------------------- enqueue

  private Reply enqueue(Context ctx, Routes routes) {
    JsonBody body = JsonBody.read(ctx, routes.json(), ENQUEUE_FIELDS);
    String type = body.text("type", false, 255);
    String kind = body.text("kind", false, 255);
    if (body.has("type") && body.has("kind")) {
      body.reject("kind", "is a synonym of type; give one of them, not both");
    } else if (type == null && kind == null) {
      body.reject("type", "is required");
    }
    String typeName = type != null ? type : kind;
    JsonNode payload = body.any("payload", true);
    return enqueue(ctx, body, typeName, payload, type != null || kind == null ? "type" : "kind");
  }

  private Reply dispatch(Context ctx, Routes routes) {
    String type = ctx.pathParam("type");
    JsonBody body = JsonBody.read(ctx, routes.json(), DISPATCH_FIELDS);
    JsonNode args = body.any("args", false);
    return enqueue(
        ctx, body, type, args == null ? JsonNodeFactory.instance.objectNode() : args, "type");
  }

  private Reply enqueue(
      Context ctx, JsonBody body, String type, JsonNode payload, String typeField) {
    EnqueueOptions options = options(ctx, body);
    body.done();
    if (!acceptUnknownTypes && !client.knownTypes().containsKey(type)) {
      throw ApiProblem.unknownType(type, knownTypes());
    }
    EnqueuedJob result;
    try {
      result = client.enqueue(type, payload, options);
    } catch (InvalidJobException e) {
      if ("type".equals(e.field()) && !"type".equals(typeField)) {
        throw ApiProblem.invalidField(typeField, e.getMessage().substring("type: ".length()));
      }
      throw e;
    }
    JobView view = JobView.of(result.job());
    // Below the context path: the API may be mounted under a path of another application.
    String location = ctx.contextPath() + "/jobs/" + view.id();
    if (result.replayed()) {
      // The job the key first created, where it is: a replay answers as the first call did, but
      // with 200.
      return Reply.ok(view)
          .withHeader("Idempotent-Replayed", "true")
          .withHeader("Location", location);
    }
    if (result.duplicate()) {
      // A unique job that already existed (in one of its rule's states): answered like a replay,
      // with its own header.
      return Reply.ok(view).withHeader("Unique-Conflict", "true").withHeader("Location", location);
    }
    return Reply.created(view).withHeader("Location", location);
  }

  private List<String> knownTypes() {
    return client.knownTypes().keySet().stream().sorted().toList();
  }

  /**
   * The enqueue options of a body (or of one job of {@code POST /graphs}, with {@code ctx} null: no
   * Idempotency-Key header then). Throws what the body's readers found.
   */
  static EnqueueOptions options(Context ctx, JsonBody body) {
    EnqueueOptions.Builder b = EnqueueOptions.builder();
    String queue = body.text("queue", false, 255);
    if (queue != null) {
      b.queue(queue);
    }
    Integer priority = body.priority("priority");
    if (priority != null) {
      b.priority(priority);
    }
    Instant runAt = body.instant("run_at");
    Long delayMs = body.integer("delay_ms", 0, MAX_DELAY_MS);
    if (body.has("run_at") && body.has("delay_ms") && runAt != null && delayMs != null) {
      body.reject("delay_ms", "give either run_at or delay_ms, not both");
    } else {
      if (runAt != null) {
        b.runAt(runAt);
      }
      if (delayMs != null) {
        b.delay(Duration.ofMillis(delayMs));
      }
    }
    Long maxAttempts = body.integer("max_attempts", 1, EnqueueOptions.MAX_MAX_ATTEMPTS);
    if (maxAttempts != null) {
      b.maxAttempts(maxAttempts.intValue());
    }
    String context = body.text("context", false, EnqueueOptions.MAX_CONTEXT_LENGTH);
    if (context != null) {
      b.context(context);
    }
    Long timeoutMs = body.integer("timeout_ms", 1, MAX_TIMEOUT_MS);
    if (timeoutMs != null) {
      b.timeout(Duration.ofMillis(timeoutMs));
    }
    String capability = body.text("capability", false, io.pgjobs.JobType.MAX_CAPABILITY_LENGTH);
    if (capability != null) {
      try {
        b.capability(io.pgjobs.JobType.requireCapability("capability", capability));
      } catch (io.pgjobs.InvalidJobException e) {
        body.reject("capability", e.getMessage().substring(e.field().length() + 2));
      }
    }
    // The job's partition in a partitioned queue (its per-partition limits and turn), instead of
    // the one the queue's partition_by gives it; any text up to the column's length.
    String partition = body.text("partition", false, EnqueueOptions.MAX_PARTITION_LENGTH);
    if (partition != null) {
      b.partition(partition);
    }
    String key = ctx == null ? null : ctx.header(IDEMPOTENCY_KEY);
    if (key != null) {
      if (key.isBlank() || key.length() > EnqueueOptions.MAX_IDEMPOTENCY_KEY_LENGTH) {
        body.reject(
            IDEMPOTENCY_KEY,
            "must be 1 to " + EnqueueOptions.MAX_IDEMPOTENCY_KEY_LENGTH + " characters, was "
                + key.length());
      } else {
        b.idempotencyKey(key);
      }
    }
    io.pgjobs.UniqueOptions unique = UniqueJson.read(body);
    if (unique != null && key != null) {
      body.reject(
          "unique",
          "give either an Idempotency-Key or unique, not both: a key already makes the"
              + " enqueue return one job for as long as it is kept");
    } else if (unique != null) {
      b.unique(unique);
    }
    body.done();
    return b.build();
  }

  // ---------------------------------------------------------------- read

  private Reply list(Context ctx) {
    JobFilter.Builder filter = JobFilter.builder();
    for (String state : QueryParams.list(ctx, "state")) {
      try {
        filter.state(JobState.parse(state));
      } catch (IllegalArgumentException e) {
        throw ApiProblem.badField("state", e.getMessage());
      }
    }
    filter.type(QueryParams.list(ctx, "type").toArray(String[]::new));
    filter.queue(QueryParams.list(ctx, "queue").toArray(String[]::new));
    filter.createdAfter(QueryParams.instant(ctx, "created_after"));
    filter.createdBefore(QueryParams.instant(ctx, "created_before"));
    filter.limit(
        QueryParams.integer(ctx, "limit", JobFilter.DEFAULT_LIMIT, 1, JobFilter.MAX_LIMIT));
    String text = QueryParams.single(ctx, "text");
    if (text != null && text.length() > JobFilter.MAX_TEXT_LENGTH) {
      throw ApiProblem.badField(
          "text",
          "must be at most " + JobFilter.MAX_TEXT_LENGTH + " characters, was " + text.length());
    }
    filter.text(text);
    String scheduled = QueryParams.single(ctx, "scheduled");
    if (scheduled != null) {
      if (!scheduled.equals("true") && !scheduled.equals("false")) {
        throw ApiProblem.badField("scheduled", "must be true or false, was '" + scheduled + "'");
      }
      filter.scheduled(Boolean.valueOf(scheduled));
    }
    String cursor = QueryParams.single(ctx, "cursor");
    JobFilter built;
    try {
      built = filter.cursor(cursor).build();
    } catch (InvalidJobException e) {
      throw ApiProblem.badField(e.field(), e.getMessage().substring(e.field().length() + 2));
    }
    JobPage page = client.list(built);
    return Reply.ok(
        new JobPageView(page.jobs().stream().map(JobView::of).toList(), page.nextCursor()));
  }

  private Reply get(Context ctx) {
    UUID id = QueryParams.uuid(ctx, "id");
    Job job = find(id);
    String partition = null;
    String waitingFor = null;
    // One read of the job's limits: why it waits if it is waiting, else only its partition.
    if (job.state() == JobState.QUEUED || job.state() == JobState.RETRYING) {
      Optional<JobWait> wait = client.limitsWait(id);
      partition = wait.map(JobWait::partition).orElse(null);
      waitingFor = wait.map(JobWait::waitingFor).orElse(null);
    } else if (job.state() == JobState.RUNNING) {
      partition = client.limitsPartition(id).orElse(null);
    }
    return Reply.ok(JobView.of(job, client.children(id, 100), partition, waitingFor));
  }

  private Job find(UUID id) {
    return client.get(id).orElseThrow(() -> ApiProblem.notFound("no job with id " + id));
  }

  // ---------------------------------------------------------------- cancel and retry

  private Reply cancel(Context ctx) {
    UUID id = QueryParams.uuid(ctx, "id");
    CancelResult result = client.cancel(id);
    return switch (result.outcome()) {
      case CANCELLED -> Reply.ok(JobView.of(find(id)));
      case PENDING_ON_WORKER -> Reply.of(202, JobView.of(find(id)));
      case ALREADY_TERMINAL ->
        throw ApiProblem.conflict(
            "already-finished",
            "Job already finished",
            "job " + id + " is already " + result.state().value()
                + "; only queued, retrying, blocked and running jobs can be cancelled",
            result.state().value());
      case NOT_FOUND -> throw ApiProblem.notFound("no job with id " + id);
    };
  }

  private Reply retry(Context ctx) {
    UUID id = QueryParams.uuid(ctx, "id");
    RetryResult result = client.retry(id, QueryParams.bool(ctx, "now", false));
    return switch (result) {
      case RETRIED -> Reply.ok(JobView.of(find(id)));
      case NOT_RETRYABLE -> {
        Optional<Job> job = client.get(id);
        String state = job.map(j -> j.state().value()).orElse(null);
        throw ApiProblem.conflict(
            "not-retryable",
            "Job not retryable",
            "job " + id + " is " + state + "; only failed and cancelled jobs can be retried",
            state);
      }
      case NOT_FOUND -> throw ApiProblem.notFound("no job with id " + id);
    };
  }

  private record BulkFilter(
      Set<String> types, Set<String> queues, Set<JobState> states, boolean dryRun) {}

  /**
   * The filter of a bulk cancel or retry. An empty filter would act on every job, so it needs an
   * explicit {@code "all": true}: a client that forgot its filter (or sent {@code {}}) gets 422, not
   * every job cancelled.
   */
  private static BulkFilter bulkFilter(Context ctx, Routes routes, String verb) {
    JsonBody body = JsonBody.read(ctx, routes.json(), BULK_FIELDS);
    List<String> types = body.strings("types");
    List<String> queues = body.strings("queues");
    List<String> stateNames = body.strings("states");
    boolean all = body.bool("all");
    boolean dryRun = body.bool("dry_run");
    Set<JobState> states = new HashSet<>();
    for (int i = 0; i < stateNames.size(); i++) {
      try {
        states.add(JobState.parse(stateNames.get(i)));
      } catch (IllegalArgumentException e) {
        body.reject("states[" + i + "]", e.getMessage());
      }
    }
    if (types.isEmpty() && queues.isEmpty() && stateNames.isEmpty() && !all) {
      body.reject(
          "all",
          "give at least one of types, queues or states, or \"all\": true to " + verb
              + " every matching job (add \"dry_run\": true to count them first)");
    }
    body.done();
    return new BulkFilter(new HashSet<>(types), new HashSet<>(queues), states, dryRun);
  }

  private Reply cancelAll(Context ctx, Routes routes) {
    BulkFilter f = bulkFilter(ctx, routes, "cancel");
    try {
      CancelCounts counts = f.dryRun()
          ? client.countCancellable(f.types(), f.queues(), f.states())
          : client.cancelAll(f.types(), f.queues(), f.states());
      return Reply.ok(
          new CancelCountsView(counts.cancelled(), counts.pendingOnWorker(), f.dryRun()));
    } catch (InvalidJobException e) {
      throw ApiProblem.invalidField("states", e.getMessage().substring(e.field().length() + 2));
    }
  }

  private Reply retryAll(Context ctx, Routes routes) {
    BulkFilter f = bulkFilter(ctx, routes, "retry");
    try {
      long retried = f.dryRun()
          ? client.countRetryable(f.types(), f.queues(), f.states())
          : client.retryAll(f.types(), f.queues(), f.states());
      return Reply.ok(new RetryCountsView(retried, f.dryRun()));
    } catch (InvalidJobException e) {
      throw ApiProblem.invalidField("states", e.getMessage().substring(e.field().length() + 2));
    }
  }

  // ---------------------------------------------------------------- views

  /**
   * A job as the API shows it.
   *
   * @param scheduled true for a queued job whose run_at is in the future
   * @param timeoutMs per-attempt timeout override, or null for the type's
   * @param progress last reported progress, or null
   * @param errors every failed attempt, oldest first
   * @param capability the capability a worker must declare to run it, or null if any worker may
   * @param snoozes how often its handler snoozed it (a snooze is not an attempt)
   * @param partition its partition in its limited queue while it waits or runs ({@code ""}: none), or null
   *     (lists, unlimited queues, finished jobs)
   * @param waitingFor why it waits, if it is due and a limit holds it back ({@link io.pgjobs.JobWait}), or
   *     null
   */
  public record JobView(
      UUID id,
      String type,
      String queue,
      JsonNode payload,
      int priority,
      String state,
      boolean scheduled,
      int attempts,
      int maxAttempts,
      Instant runAt,
      Instant createdAt,
      Instant attemptedAt,
      Instant finishedAt,
      String lockedBy,
      Instant heartbeatAt,
      String context,
      String idempotencyKey,
      Long timeoutMs,
      ProgressView progress,
      List<ErrorView> errors,
      JsonNode output,
      boolean cancelRequested,
      UUID parentId,
      List<UUID> children,
      String capability,
      int snoozes,
      String partition,
      String waitingFor) {

    /** The view of {@code job}, without its children and limits (lists). */
    public static JobView of(Job job) {
      return of(job, null, null, null);
    }

    /** The view of {@code job} with the ids of the jobs its handler enqueued, without its limits. */
    public static JobView of(Job job, List<UUID> children) {
      return of(job, children, null, null);
    }

    /**
     * The view of {@code job} as its detail shows it: with the ids of the jobs its handler enqueued, its
     * partition in its limited queue and why it waits ({@link io.pgjobs.JobWait}), or nulls.
     */
    public static JobView of(Job job, List<UUID> children, String partition, String waitingFor) {
      List<ErrorView> errors = new ArrayList<>();
      for (JobError e : job.errors()) {
        errors.add(new ErrorView(
            e.attempt(),
            e.at(),
            e.kind(),
            e.errorClass(),
            e.message(),
            e.stackHead(),
            e.worker(),
            e.cause()));
      }
      ProgressView progress = job.progressPercent() == null && job.progressMessage() == null
          ? null
          : new ProgressView(job.progressPercent(), job.progressMessage());
      return new JobView(
          job.id(),
          job.type(),
          job.queue(),
          job.payload(),
          job.priority(),
          job.state().value(),
          job.isScheduled(),
          job.attempts(),
          job.maxAttempts(),
          job.runAt(),
          job.createdAt(),
          job.attemptedAt(),
          job.finishedAt(),
          job.lockedBy(),
          job.heartbeatAt(),
          job.context(),
          job.idempotencyKey(),
          job.timeout() == null ? null : job.timeout().toMillis(),
          progress,
          List.copyOf(errors),
          job.output(),
          job.cancelRequested(),
          job.parentId(),
          children,
          job.capability(),
          job.snoozes(),
          partition,
          waitingFor);
    }
  }

  /** Last reported progress: percent 0–100 and message, either may be null. */
  public record ProgressView(Integer percent, String message) {}

  /** One failed attempt; {@code cause}: the exception's causes, one {@code class: message} line each, or null. */
  public record ErrorView(
      int attempt,
      Instant at,
      String kind,
      String errorClass,
      String message,
      String stackHead,
      String worker,
      String cause) {}

  /** A page of jobs, newest first; {@code nextCursor} is null on the last page. */
  public record JobPageView(List<JobView> jobs, String nextCursor) {}

  /** What a bulk cancel did (or, with {@code dryRun}, would do). */
  public record CancelCountsView(long cancelled, long pendingOnWorker, boolean dryRun) {}

  /** What a bulk retry did (or, with {@code dryRun}, would do). */
  public record RetryCountsView(long retried, boolean dryRun) {}
}
