package io.pgjobs.recurring;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.InvalidJobException;
import io.pgjobs.InvalidPayloadException;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.PgJobsException;
import io.pgjobs.json.PayloadCodec;
import java.sql.SQLException;
import java.time.Clock;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;

/**
 * Recurring schedules managed at run time: list them with their next fire times and last run, add,
 * update and remove schedules, pause and resume them, and run one now. Get it from
 * {@link io.pgjobs.JobClient#recurring()}; thread-safe.
 *
 * <pre>{@code
 * RecurringSchedules schedules = client.recurring();
 * schedules.add(RecurringSchedules.Definition.of("nightly-report", "0 3 * * *", "Europe/Berlin", "report")
 *     .withPayload(Map.of("kind", "daily")));
 * schedules.pause("nightly-report");
 * EnqueuedJob job = schedules.runNow("nightly-report");   // one job at once, whatever the schedule says
 * }</pre>
 *
 * <p>Schedules added here have source {@code api}. Schedules declared in code
 * ({@code JobWorker.Builder.recurring}, source {@code code}) can be paused, resumed and run now, but not
 * updated or removed: the code owns their definition and would put it back at the next worker start
 * ({@link ScheduleException.Kind#DECLARED_IN_CODE}). A pause of a code schedule survives worker restarts.
 *
 * <p>A job type the client knows ({@link io.pgjobs.JobClient.Builder#knownTypes}) gives the schedule its queue,
 * priority and max attempts unless the definition says otherwise, and the payload must fit the type
 * (as an enqueue by name checks it); any other type name is accepted with the pgjobs defaults, since a
 * worker elsewhere may run it. A refused change stores nothing.
 *
 * <p>This class validates and decides; {@link RecurringStore} reads and writes the schedules.
 */
public final class RecurringSchedules {
  /** How many upcoming fire times a {@link Schedule} lists: {@value}. */
  public static final int UPCOMING = 5;
  /** Names added at run time: 1 to 200 of letters, digits and {@code _ . : -} (no {@code /}: names are URL path segments). */
  private static final Pattern API_NAME = Pattern.compile("[A-Za-z0-9_.:\\-]{1,200}");
  /** Any stored name (code schedules may also use {@code /}); another name cannot exist. */
  private static final Pattern ANY_NAME = Pattern.compile("[A-Za-z0-9_.:\\-/]{1,200}");

  private static final Logger log = LoggerFactory.getLogger(RecurringSchedules.class);

  private final ScheduleClient client;
  private final RecurringStore store;
  private final Clock clock;

  /** The schedules of {@code client}'s database and schema. */
  public RecurringSchedules(ScheduleClient client) {
    this(client, Clock.systemUTC());
  }

  /** Same, with the clock that upcoming fire times are computed from (for tests). */
  public RecurringSchedules(ScheduleClient client, Clock clock) {
    this.client = client;
    this.store = new RecurringStore(client);
    this.clock = clock;
  }

  // ---------------------------------------------------------------- model

  /**
   * What a schedule added or updated at run time looks like. Only name, cron, zone and type are needed;
   * a null member takes its default.
   *
   * @param name 1 to 200 of letters, digits and {@code _ . : -}
   * @param cron see {@link CronSchedule}: 5 fields, 6 with seconds first, or a macro such as {@code @hourly}
   * @param zone an IANA zone (e.g. {@code Europe/Berlin}); default {@code UTC}
   * @param type the job type's name
   * @param payload each job's payload: a JSON object, or anything Jackson writes as one; default {@code {}}
   * @param queue default: the type's queue, else {@code default}
   * @param priority default: the type's, else 50
   * @param maxAttempts 1 to 1000; default: the type's, else 3
   * @param missed {@code skip}, {@code latest} (default) or {@code catch_up}
   * @param catchUp with {@code catch_up}: how many of the newest missed slots still fire, 1 to 1000 (default 1)
   */
  public record Definition(
      String name,
      String cron,
      String zone,
      String type,
      Object payload,
      String queue,
      Integer priority,
      Integer maxAttempts,
      String missed,
      Integer catchUp) {
    /** A definition with the defaults for everything but name, cron, zone and type. */
    public static Definition of(String name, String cron, String zone, String type) {
      return new Definition(name, cron, zone, type, null, null, null, null, null, null);
    }

    /** The same with another payload. */
    public Definition withPayload(Object payload) {
      return new Definition(
          name, cron, zone, type, payload, queue, priority, maxAttempts, missed, catchUp);
    }

    /** The same with another queue. */
    public Definition withQueue(String queue) {
      return new Definition(
          name, cron, zone, type, payload, queue, priority, maxAttempts, missed, catchUp);
    }

    /** The same with another priority. */
    public Definition withPriority(Integer priority) {
      return new Definition(
          name, cron, zone, type, payload, queue, priority, maxAttempts, missed, catchUp);
    }

    /** The same with other max attempts. */
    public Definition withMaxAttempts(Integer maxAttempts) {
      return new Definition(
          name, cron, zone, type, payload, queue, priority, maxAttempts, missed, catchUp);
    }

    /** The same with another policy for missed slots ({@code catchUp} only matters with {@code catch_up}). */
    public Definition withMissed(String missed, Integer catchUp) {
      return new Definition(
          name, cron, zone, type, payload, queue, priority, maxAttempts, missed, catchUp);
    }
  }

  /**
   * A stored schedule and where it stands.
   *
   * @param cron the expression as given
   * @param description the expression in words ({@link CronSchedule#describe()})
   * @param payloadJson each job's payload, as JSON
   * @param source {@code code} (declared by a worker) or {@code api} (added at run time)
   * @param disabled a code schedule its worker no longer declares (it does not fire)
   * @param lastSlot the newest slot handled (fired or skipped as missed), or null
   * @param nextRuns the next {@link #UPCOMING} fire times after now, in the schedule's zone's rules (shown even
   *     while paused: the slots it would fire)
   * @param lastRun the last job the schedule enqueued (a slot or a run by hand), or null if none yet
   */
  public record Schedule(
      String name,
      String cron,
      String description,
      String zone,
      String type,
      String queue,
      String payloadJson,
      int priority,
      int maxAttempts,
      String missed,
      int catchUp,
      boolean paused,
      String source,
      boolean disabled,
      Instant lastSlot,
      List<Instant> nextRuns,
      LastRun lastRun,
      Instant createdAt,
      Instant updatedAt) {}

  /**
   * The last job of a schedule.
   *
   * @param jobId the job's id
   * @param state its state now, or null when it is no longer kept (pruned after its retention)
   * @param createdAt when it was enqueued, or null when no longer kept
   * @param finishedAt when it finished, or null while it waits or runs (or is no longer kept)
   */
  public record LastRun(UUID jobId, JobState state, Instant createdAt, Instant finishedAt) {}

  // ---------------------------------------------------------------- read

  /** Every schedule, by name. */
  public List<Schedule> list() {
    return query(null);
  }

  /** The schedule named {@code name}, if any. */
  public Optional<Schedule> get(String name) {
    return query(name).stream().findFirst();
  }

  private Schedule require(String name) {
    return get(name).orElseThrow(() -> ScheduleException.notFound(name));
  }

  /** Every schedule ({@code name} null) or the one named {@code name}, with its upcoming slots. */
  private List<Schedule> query(String name) {
    Instant now = clock.instant();
    List<Schedule> all = new ArrayList<>();
    for (RecurringStore.Viewed v : call(() -> store.view(name))) {
      all.add(schedule(v, now));
    }
    return all;
  }

  /**
   * A parsed expression, its words and its upcoming slots, reused across reads: parsing, describing and
   * computing slots with cron-utils cost about half a millisecond per schedule, and the dashboard reads
   * every schedule every few seconds.
   */
  private static final class Parsed {
    final CronSchedule schedule;
    final String description;
    /** Upcoming slots computed at {@code computedAt}; still the next ones while now is before the first. */
    private volatile Upcoming upcoming;

    Parsed(CronSchedule schedule, String description) {
      this.schedule = schedule;
      this.description = description;
    }

    CronSchedule schedule() {
      return schedule;
    }

    String description() {
      return description;
    }

    /** The next {@link #UPCOMING} slots after {@code now}: no slot lies between the computation and now. */
    List<Instant> upcoming(Instant now) {
      Upcoming u = upcoming;
      if (u == null
          || now.isBefore(u.computedAt)
          || u.slots.isEmpty()
          || !now.isBefore(u.slots.get(0))) {
        u = new Upcoming(now, List.copyOf(schedule.upcoming(now, UPCOMING)));
        upcoming = u;
      }
      return u.slots;
    }
  }

  private record Upcoming(Instant computedAt, List<Instant> slots) {}

  private static final int PARSED_MAX = 10_000;
  private static final java.util.concurrent.ConcurrentHashMap<String, Parsed> PARSED =
      new java.util.concurrent.ConcurrentHashMap<>();

  private static Parsed parsed(String cron, String zone) {
    Parsed p = PARSED.get(zone + " " + cron);
    if (p == null) {
      CronSchedule schedule = CronSchedule.parse(cron, zone);
      p = new Parsed(schedule, schedule.describe());
      if (PARSED.size() >= PARSED_MAX) {
        PARSED.clear(); // bounded; stored schedules are few, so this is for pathological churn only
      }
      PARSED.put(zone + " " + cron, p);
    }
    return p;
  }

  private static Schedule schedule(RecurringStore.Viewed v, Instant now) {
    Parsed parsed = parsed(v.cron(), v.zone());
    CronSchedule schedule = parsed.schedule();
    LastRun lastRun = v.lastJobId() == null
        ? null
        : new LastRun(
            v.lastJobId(),
            v.lastState() == null ? null : JobState.parse(v.lastState()),
            v.lastCreatedAt(),
            v.lastFinishedAt());
    return new Schedule(
        v.name(),
        schedule.expression(),
        parsed.description(),
        schedule.zone().getId(),
        v.jobType(),
        v.queue(),
        v.payloadJson(),
        v.priority(),
        v.maxAttempts(),
        v.missed(),
        v.catchUp(),
        v.paused(),
        v.source(),
        v.disabled(),
        v.lastSlot(),
        parsed.upcoming(now),
        lastRun,
        v.createdAt(),
        v.updatedAt());
  }

  // ---------------------------------------------------------------- change

  /**
   * Adds a schedule (source {@code api}). Its first slot is the first one after now.
   *
   * @throws ScheduleException {@code INVALID} listing every rejected field, or {@code ALREADY_EXISTS}
   */
  public Schedule add(Definition definition) {
    Recurring r = validate(definition, true);
    if (!call(() -> store.insertFromApi(r))) {
      throw ScheduleException.exists(r.name());
    }
    log.info(
        "recurring schedule '{}' added: {} ({}), type {}",
        r.name(),
        r.schedule().expression(),
        r.schedule().zone(),
        r.jobType());
    return require(r.name());
  }

  /**
   * Replaces the definition of a schedule added at run time (members left null take their defaults, as
   * when adding); its pause and last slot are kept.
   *
   * @throws ScheduleException {@code INVALID}, {@code NOT_FOUND} or {@code DECLARED_IN_CODE}
   */
  public Schedule update(Definition definition) {
    if (definition != null
        && definition.name() != null
        && !ANY_NAME.matcher(definition.name()).matches()) {
      throw ScheduleException.notFound(definition.name()); // no schedule can have that name
    }
    Recurring r = validate(definition, false);
    String source = call(() -> store.updateFromApi(r));
    if (source == null) {
      throw ScheduleException.notFound(r.name());
    }
    if (!source.equals("api")) {
      throw ScheduleException.declaredInCode(r.name(), "updated");
    }
    log.info(
        "recurring schedule '{}' replaced: {} ({}), type {}",
        r.name(),
        r.schedule().expression(),
        r.schedule().zone(),
        r.jobType());
    return require(r.name());
  }

  /**
   * Removes a schedule added at run time. Jobs it enqueued are left alone.
   *
   * @return the schedule as it was
   * @throws ScheduleException {@code NOT_FOUND} or {@code DECLARED_IN_CODE}
   */
  public Schedule remove(String name) {
    Schedule before = require(name);
    String source = call(() -> store.deleteFromApi(name));
    if (source == null) {
      throw ScheduleException.notFound(name);
    }
    if (!source.equals("api")) {
      throw ScheduleException.declaredInCode(name, "removed");
    }
    log.info("recurring schedule '{}' removed", name);
    return before;
  }

  /**
   * Pauses a schedule (code or api): its slots stop firing. When resumed, the slots missed meanwhile
   * follow its missed-slots policy.
   *
   * @throws ScheduleException {@code NOT_FOUND}
   */
  public Schedule pause(String name) {
    return setPaused(name, true);
  }

  /**
   * Resumes a paused schedule.
   *
   * @throws ScheduleException {@code NOT_FOUND}
   */
  public Schedule resume(String name) {
    return setPaused(name, false);
  }

  private Schedule setPaused(String name, boolean paused) {
    if (!call(() -> store.setPaused(name, paused))) {
      throw ScheduleException.notFound(name);
    }
    log.info("recurring schedule '{}' {}", name, paused ? "paused" : "resumed");
    return require(name);
  }

  /**
   * Enqueues one job of the schedule now, whatever its cron says and even while it is paused or
   * disabled: the schedule's type, payload, queue, priority and max attempts, idempotency key
   * {@code recurring:<name>:now:<uuid>} (never a slot's key, so it neither replaces nor blocks a slot),
   * context {@code recurring <name> @ <now> (run now by hand)}. It becomes the schedule's last run. The
   * slots are not touched.
   *
   * @throws ScheduleException {@code NOT_FOUND}
   * @throws io.pgjobs.InvalidPayloadException if the stored payload no longer fits the (known) type
   */
  public EnqueuedJob runNow(String name) {
    EnqueuedJob job = call(() -> store.runNow(
        name,
        r -> EnqueueOptions.builder()
            .queue(r.queue())
            .priority(r.priority())
            .maxAttempts(r.maxAttempts())
            .idempotencyKey(runNowKey(name, UUID.randomUUID()))
            .context(runNowContext(name, clock.instant()))
            .build()));
    if (job == null) {
      throw ScheduleException.notFound(name);
    }
    log.info("recurring schedule '{}' run now by hand: job {}", name, job.job().id());
    return job;
  }

  /** The idempotency key of a run by hand: {@code recurring:<name>:now:<uuid>}. */
  public static String runNowKey(String name, UUID run) {
    return "recurring:" + name + ":now:" + run;
  }

  /** The context of a run by hand; the text filter {@code recurring <name> @} finds it with the slots' jobs. */
  public static String runNowContext(String name, Instant at) {
    return "recurring " + name + " @ " + at + " (run now by hand)";
  }

  // ---------------------------------------------------------------- validation

  /**
   * Checks a definition without storing anything: every rejected field, named as in the HTTP API. Empty
   * when {@link #add} would accept it (a duplicate name aside).
   */
  public List<FieldProblem> problems(Definition d) {
    List<FieldProblem> problems = new ArrayList<>();
    resolve(d, true, problems);
    return problems;
  }

  private Recurring validate(Definition d, boolean adding) {
    List<FieldProblem> problems = new ArrayList<>();
    Recurring r = resolve(d, adding, problems);
    if (!problems.isEmpty()) {
      throw ScheduleException.invalid(d == null ? null : d.name(), problems);
    }
    return r;
  }

  /** The schedule a definition stands for, or null with its problems added to {@code problems}. */
  private Recurring resolve(Definition d, boolean adding, List<FieldProblem> problems) {
    if (d == null) {
      problems.add(new FieldProblem("name", "is required"));
      return null;
    }
    String name = d.name();
    if (name == null || name.isEmpty()) {
      problems.add(new FieldProblem("name", "is required"));
    } else if (adding && !API_NAME.matcher(name).matches()) {
      problems.add(new FieldProblem(
          "name",
          "invalid name '" + name + "'; allowed: 1 to 200 of letters, digits and"
              + " _ . : - (no /: the name is a URL path segment)"));
    }
    String zoneId = d.zone() == null ? "UTC" : d.zone();
    boolean zoneOk = true;
    try {
      ZoneId.of(zoneId);
    } catch (DateTimeException e) {
      zoneOk = false;
      problems.add(new FieldProblem(
          "zone",
          "unknown time zone '" + zoneId + "'; allowed: an IANA zone such as"
              + " Europe/Berlin, America/New_York or UTC"));
    }
    CronSchedule schedule = null;
    if (d.cron() == null) {
      problems.add(new FieldProblem("cron", "is required"));
    } else {
      try {
        schedule = CronSchedule.parse(d.cron(), zoneOk ? zoneId : "UTC");
      } catch (IllegalArgumentException e) {
        problems.add(new FieldProblem("cron", e.getMessage()));
      }
    }
    JobType<?> known = null;
    if (d.type() == null || d.type().isEmpty()) {
      problems.add(new FieldProblem("type", "is required"));
    } else {
      try {
        JobType.of(d.type(), JsonNode.class);
        known = client.knownTypes().get(d.type());
      } catch (InvalidJobException e) {
        problems.add(new FieldProblem("type", reason(e)));
      }
    }
    String queue =
        d.queue() != null ? d.queue() : known != null ? known.queue() : JobType.DEFAULT_QUEUE;
    try {
      JobType.of("recurring", JsonNode.class).withQueue(queue);
    } catch (InvalidJobException e) {
      problems.add(new FieldProblem("queue", reason(e)));
    }
    int priority = d.priority() != null
        ? d.priority()
        : known != null ? known.priority() : JobType.DEFAULT_PRIORITY;
    int maxAttempts = d.maxAttempts() != null
        ? d.maxAttempts()
        : known != null ? known.maxAttempts() : JobType.DEFAULT_MAX_ATTEMPTS;
    if (maxAttempts < 1 || maxAttempts > EnqueueOptions.MAX_MAX_ATTEMPTS) {
      problems.add(new FieldProblem(
          "max_attempts",
          "must be between 1 and " + EnqueueOptions.MAX_MAX_ATTEMPTS + ", was " + maxAttempts));
    }
    MissedSlots missed = null;
    String policy = d.missed() == null ? "latest" : d.missed();
    int catchUp = d.catchUp() == null ? 1 : d.catchUp();
    if (!List.of("skip", "latest", "catch_up").contains(policy)) {
      problems.add(
          new FieldProblem("missed", "must be skip, latest or catch_up, was '" + policy + "'"));
    } else if (catchUp < 1 || catchUp > 1000) {
      problems.add(new FieldProblem("catch_up", "must be between 1 and 1000, was " + catchUp));
    } else {
      missed = new MissedSlots(policy, catchUp);
    }
    String payloadJson = payload(d, known, problems);
    if (!problems.isEmpty()) {
      return null;
    }
    return new Recurring(
        name, schedule, d.type(), queue, payloadJson, priority, maxAttempts, missed);
  }

  /** The payload as JSON text: an object, and for a known type one its class reads and its validator accepts. */
  private static String payload(Definition d, JobType<?> known, List<FieldProblem> problems) {
    JsonNode tree;
    try {
      tree = d.payload() == null
          ? PayloadCodec.DEFAULT_MAPPER.createObjectNode()
          : d.payload() instanceof JsonNode node
              ? node
              : PayloadCodec.DEFAULT_MAPPER.valueToTree(d.payload());
    } catch (RuntimeException e) {
      problems.add(new FieldProblem("payload", "cannot be written as JSON: " + e.getMessage()));
      return null;
    }
    if (tree == null || !tree.isObject()) {
      problems.add(new FieldProblem("payload", "must be a JSON object"));
      return null;
    }
    String json = PayloadCodec.DEFAULT_MAPPER.writeValueAsString(tree);
    if (known != null) {
      try {
        Object decoded = new PayloadCodec(PayloadCodec.DEFAULT_MAPPER)
            .decodeStrict(json, known.payloadClass(), known.name());
        @SuppressWarnings("unchecked") // decoded is an instance of the type's payload class
        JobType<Object> type = (JobType<Object>) known;
        type.validate(decoded);
      } catch (InvalidPayloadException e) {
        for (FieldProblem p : e.problems()) {
          String field = p.field() == null || p.field().isEmpty()
              ? "payload"
              : p.field().startsWith("payload") ? p.field() : "payload." + p.field();
          problems.add(new FieldProblem(field, p.reason()));
        }
      }
    }
    return json;
  }

  private static String reason(InvalidJobException e) {
    String prefix = e.field() + ": ";
    return e.getMessage().startsWith(prefix)
        ? e.getMessage().substring(prefix.length())
        : e.getMessage();
  }

  // ---------------------------------------------------------------- internals

  /** Runs one store operation; a database error becomes a {@link PgJobsException}. */
  private static <T> T call(StoreCall<T> work) {
    try {
      return work.get();
    } catch (SQLException e) {
      throw new PgJobsException("database error: " + e.getMessage(), e);
    }
  }

  @FunctionalInterface
  private interface StoreCall<T> {
    T get() throws SQLException;
  }
}
