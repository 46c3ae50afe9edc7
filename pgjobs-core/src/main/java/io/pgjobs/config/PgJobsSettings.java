package io.pgjobs.config;

import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The settings of pgjobs, each declared once: name, default, range and what it does. {@code JobClient},
 * {@code JobWorker}, {@code Maintenance} and {@code ApiServer} take their defaults from here and validate
 * with {@link Setting#require}; the {@code pgjobs} command derives its settings (flag, environment
 * variable, config file key) from those marked {@link Setting#cli()}; the Spring Boot starter's
 * {@code pgjobs.*} properties take their defaults from those with a {@link Setting#springProperty()}; and the
 * tables of the documentation are generated from here ({@link #markdownTable()}), a test keeping them equal.
 *
 * <p>Settings only one surface has are declared there: the CLI's connection, logging and demo settings in
 * {@code io.pgjobs.cli.config.Settings}, the starter's switches in {@code PgJobsProperties}.
 */
public final class PgJobsSettings {
  private PgJobsSettings() {}

  /**
   * The most a computed heartbeat or rescue interval is: a long threshold should not make a worker's
   * heartbeat or the leader's rescue pass rare.
   */
  private static final Duration COMPUTED_INTERVAL_CAP = Duration.ofSeconds(30);

  private static final String CAP_TEXT = DurationText.format(COMPUTED_INTERVAL_CAP);

  /** The schema holding pgjobs' tables. */
  public static final Setting<String> SCHEMA = Setting.text(
          "schema",
          "schema",
          "pgjobs",
          "1–51 of lowercase letters, digits and `_`, not starting with a digit",
          "the schema holding pgjobs' tables")
      .setBy("JobClient.Builder.schema", "JobWorker.Builder.schema", "Maintenance.Builder.schema")
      .onCommandLine()
      .springProperty("pgjobs.schema");

  /** Jobs run at once per queue unless a queue says otherwise. */
  public static final Setting<Integer> CONCURRENCY = Setting.integer(
          "concurrency", "concurrency", 10, 1, 10_000, "jobs run at once per queue")
      .setBy("JobWorker.Builder.queue(name, n)")
      .onCommandLine()
      .springProperty("pgjobs.worker.concurrency");

  /** Most jobs claimed per statement. */
  public static final Setting<Integer> CLAIM_BATCH = Setting.integer(
          "claim_batch",
          "claim batch",
          1_000,
          1,
          10_000,
          "most jobs claimed per statement (free slots plus a prefetch sized by the speed of the lanes)")
      .setBy("JobWorker.Builder.claimBatch")
      .onCommandLine()
      .springProperty("pgjobs.worker.claim-batch");

  /** Most successes written per statement. */
  public static final Setting<Integer> COMPLETION_BATCH = Setting.integer(
          "completion_batch",
          "completion batch",
          1_000,
          1,
          100_000,
          "most successes written per statement")
      .setBy("JobWorker.Builder.completionBatch");

  /** How often an idle queue is polled. */
  public static final Setting<Duration> POLL_INTERVAL = Setting.duration(
          "poll_interval",
          "poll interval",
          "1s",
          "10ms",
          "1h",
          "how often an idle queue is polled (NOTIFY wakes workers sooner)")
      .setBy("JobWorker.Builder.pollInterval")
      .onCommandLine()
      .springProperty("pgjobs.worker.poll-interval");

  /** Time running jobs get to finish when the worker stops. */
  public static final Setting<Duration> SHUTDOWN_GRACE = Setting.duration(
          "shutdown_grace",
          "shutdown grace",
          "30s",
          "0s",
          "1h",
          "time running jobs get to finish when the worker stops (`close()`, SIGTERM, the application"
              + " stopping); those still running then are interrupted and go back to their queue")
      .setBy("JobWorker.Builder.shutdownGrace")
      .onCommandLine()
      .springProperty("pgjobs.worker.shutdown-grace");

  /** Whether the worker LISTENs for new jobs. */
  public static final Setting<Boolean> LISTEN = Setting.flag(
          "listen",
          "listen",
          true,
          "LISTEN for new jobs; without it the worker relies on polling alone")
      .setBy("JobWorker.Builder.listen")
      .springProperty("pgjobs.worker.listen");

  /**
   * Whether a small batch of successes starts the children it unblocks on this worker at once (the
   * hand-off), rather than queueing them for the next claim.
   */
  public static final Setting<Boolean> HAND_OFF = Setting.flag(
          "hand_off",
          "hand off",
          true,
          "start a graph's child on the worker that ended its last parent, in the statement that records"
              + " the parent's success (when the worker has room and would claim the child itself);"
              + " without it every child is queued for the next claim, in strict priority order")
      .setBy("JobWorker.Builder.handOff")
      .springProperty("pgjobs.worker.hand-off");

  /** A running job whose own heartbeat is this old is rescued. */
  public static final Setting<Duration> STALE_THRESHOLD = Setting.duration(
          "stale_threshold",
          "stale threshold",
          "5m",
          "1s",
          "24h",
          "a running job whose own heartbeat is this old is rescued; use one value on every node")
      .setBy("JobWorker.Builder.staleThreshold", "Maintenance.Builder.staleThreshold")
      .onCommandLine()
      .springProperty("pgjobs.worker.stale-threshold");

  /** A worker whose own row is this old is presumed dead. */
  public static final Setting<Duration> WORKER_DEAD_AFTER = Setting.duration(
          "worker_dead_after",
          "worker dead-after",
          "20s",
          "1s",
          "1h",
          "a worker whose heartbeat row is this old is presumed dead and its jobs go back to the queue at"
              + " once; use one value on every node, at least 3 heartbeat intervals")
      .setBy("JobWorker.Builder.workerDeadAfter", "Maintenance.Builder.workerDeadAfter")
      .onCommandLine()
      .springProperty("pgjobs.worker.dead-after");

  /** How often a worker heartbeats itself and its jobs. */
  public static final Setting<Duration> HEARTBEAT_INTERVAL = Setting.computedDuration(
          "heartbeat_interval",
          "heartbeat interval",
          "the least of `stale_threshold`/10, `worker_dead_after`/4 and " + CAP_TEXT,
          "100ms",
          "1h",
          "how often the worker heartbeats itself and the jobs it holds")
      .setBy("JobWorker.Builder.heartbeatInterval");

  /** How long a due job of a type no live worker of its queue runs waits before it is failed. */
  public static final Setting<Duration> UNKNOWN_TYPE_GRACE = Setting.duration(
          "unknown_type_grace",
          "unknown type grace",
          "5m",
          "0s",
          "30d",
          "a due job of a type none of the live workers serving its queue runs is failed (`unknown_type`)"
              + " once it was created this long ago; use one value on every node")
      .setBy("JobWorker.Builder.unknownTypeGrace", "Maintenance.Builder.unknownTypeGrace");

  /** Least time between two persisted progress updates of one job. */
  public static final Setting<Duration> PROGRESS_THROTTLE = Setting.duration(
          "progress_throttle",
          "progress throttle",
          "100ms",
          "0s",
          "10m",
          "least time between two persisted progress updates of one job")
      .setBy("JobWorker.Builder.progressThrottle");

  /** How long a handler asked to stop may go on before it is let go. */
  public static final Setting<Duration> STUCK_HANDLER_GRACE = Setting.duration(
          "stuck_handler_grace",
          "stuck handler grace",
          "10s",
          "100ms",
          "1h",
          "a handler asked to stop (timeout, cancellation, shutdown) that goes on this long is let go: its"
              + " outcome is recorded without it and its lane is reported stuck")
      .setBy("JobWorker.Builder.stuckHandlerGrace");

  /** How long a job claimed ahead may wait for a lane. */
  public static final Setting<Duration> PREFETCH_HOLD = Setting.duration(
          "prefetch_hold",
          "prefetch hold",
          "1s",
          "10ms",
          "1h",
          "a job claimed ahead that waits this long for a free lane goes back to the queue (another worker"
              + " may have lanes free)")
      .setBy("JobWorker.Builder.prefetchHold");

  /** Connect timeout of handlers' HTTP. */
  public static final Setting<Duration> HTTP_CONNECT_TIMEOUT = Setting.duration(
          "http_connect_timeout",
          "HTTP connect timeout",
          "10s",
          "100ms",
          "10m",
          "connect timeout of handlers' HTTP (`ctx.http()`)")
      .setBy("JobWorker.Builder.httpConnectTimeout");

  /** Request timeout of handlers' HTTP. */
  public static final Setting<Duration> HTTP_REQUEST_TIMEOUT = Setting.duration(
          "http_request_timeout",
          "HTTP request timeout",
          "30s",
          "100ms",
          "1h",
          "request timeout of handlers' HTTP (`ctx.http()`): from sending to the response's headers")
      .setBy("JobWorker.Builder.httpRequestTimeout");

  /** Whether a worker takes part in maintenance. */
  public static final Setting<Boolean> MAINTENANCE = Setting.flag(
          "maintenance",
          "maintenance",
          true,
          "take part in maintenance (rescue of stale jobs, pruning of finished jobs, removal of dead workers,"
              + " recurring schedules); its own intervals are `Maintenance`'s defaults")
      .setBy("JobWorker.Builder.maintenance")
      .springProperty("pgjobs.worker.maintenance");

  /**
   * How long finished jobs are kept at least: the history is dropped a partition at a time, each about a
   * twelfth of the retention wide, once its newest job is past it.
   */
  public static final Setting<Duration> RETENTION = Setting.duration(
          "retention",
          "retention",
          "24h",
          "1s",
          "3650d",
          "how long finished jobs are kept at least (at most about 1/12 longer: the history is dropped a"
              + " partition at a time)")
      .setBy("JobWorker.Builder.retention", "Maintenance.Builder.retention")
      .onCommandLine()
      .springProperty("pgjobs.worker.retention");

  /** How long the maintenance lease lasts unless renewed. */
  public static final Setting<Duration> LEASE_TTL = Setting.duration(
          "lease_ttl",
          "lease TTL",
          "10s",
          "1s",
          "10m",
          "how long the maintenance lease lasts unless renewed: how fast a new leader takes over")
      .setBy("JobWorker.Builder.leaseTtl", "Maintenance.Builder.leaseTtl");

  /** How often the leader looks for jobs to rescue. */
  public static final Setting<Duration> RESCUE_INTERVAL = Setting.computedDuration(
          "rescue_interval",
          "rescue interval",
          "the least of `stale_threshold`/2, `worker_dead_after`/4 and " + CAP_TEXT,
          "100ms",
          "1h",
          "how often the maintenance leader looks for jobs to rescue")
      .setBy("Maintenance.Builder.rescueInterval");

  /** How often the pruner runs. */
  public static final Setting<Duration> PRUNE_INTERVAL = Setting.duration(
          "prune_interval",
          "prune interval",
          "1m",
          "1s",
          "1d",
          "how often the maintenance leader makes the history's partitions ahead and drops those past"
              + " `retention`")
      .setBy("Maintenance.Builder.pruneInterval");

  /** How often the leader fires the due slots of recurring schedules. */
  public static final Setting<Duration> RECURRING_INTERVAL = Setting.duration(
          "recurring_interval",
          "recurring interval",
          "1s",
          "100ms",
          "1m",
          "how often the maintenance leader fires the due slots of recurring schedules")
      .setBy("Maintenance.Builder.recurringInterval");

  /** A recurring slot older than this when looked at was missed. */
  public static final Setting<Duration> RECURRING_MISSED_AFTER = Setting.computedDuration(
          "recurring_missed_after",
          "recurring missed-after",
          "the time a leader change may take: twice `lease_ttl` plus twice `recurring_interval`",
          "1s",
          "1d",
          "a recurring slot older than this when the leader looks at it was missed and follows its"
              + " schedule's missed-slots policy")
      .setBy("Maintenance.Builder.recurringMissedAfter");

  /** How often the leader looks at the hot table's dead row versions. */
  public static final Setting<Duration> VACUUM_INTERVAL = Setting.duration(
          "vacuum_interval",
          "vacuum interval",
          "5s",
          "1s",
          "1h",
          "how often the maintenance leader looks at the hot table's dead row versions and vacuums it at"
              + " 10,000 or more, or at 1,000 or more and twice its live rows (`.hotTableVacuum(false)` turns it"
              + " off; see docs/operations.md)")
      .setBy("Maintenance.Builder.vacuumInterval");

  /** Address the HTTP API listens on. */
  public static final Setting<String> HOST = Setting.text(
          "host",
          "host",
          "127.0.0.1",
          "a host name or IP address (`0.0.0.0` for every interface)",
          "address the HTTP API listens on (`serve`, `demo`)")
      .setBy("ApiServer.Builder.host")
      .onCommandLine();

  /** Port of the HTTP API. */
  public static final Setting<Integer> PORT = Setting.integer(
          "port", "port", 8080, 0, 65_535, "port of the HTTP API (`serve`, `demo`)")
      .allowed("0 – 65535 (0: any free port)")
      .setBy("ApiServer.Builder.port")
      .onCommandLine();

  /** Longest an API request may take. */
  public static final Setting<Duration> REQUEST_TIMEOUT = Setting.duration(
          "request_timeout",
          "requestTimeout",
          "30s",
          "10ms",
          "1h",
          "longest an HTTP API request may take before it is answered 504; event streams are exempt")
      .setBy("ApiServer.Builder.requestTimeout")
      .springProperty("pgjobs.web.request-timeout");

  /** Largest request body of the HTTP API. */
  public static final Setting<Long> MAX_BODY_BYTES = Setting.longInteger(
          "max_body_bytes",
          "maxBodyBytes",
          1L << 20,
          1,
          1L << 30,
          "largest request body of the HTTP API, in bytes")
      .setBy("ApiServer.Builder.maxBodyBytes");

  /**
   * The default of {@link #HEARTBEAT_INTERVAL}: the least of {@code staleThreshold}/10 (a live job is
   * heartbeaten many times before it could look stale), {@code workerDeadAfter}/4 and 30 s.
   */
  public static Duration defaultHeartbeatInterval(
      Duration staleThreshold, Duration workerDeadAfter) {
    return min(
        min(staleThreshold.dividedBy(10), workerDeadAfter.dividedBy(4)), COMPUTED_INTERVAL_CAP);
  }

  /**
   * The default of {@link #RESCUE_INTERVAL}: the least of {@code staleThreshold}/2,
   * {@code workerDeadAfter}/4 and 30 s.
   */
  public static Duration defaultRescueInterval(Duration staleThreshold, Duration workerDeadAfter) {
    return min(
        min(staleThreshold.dividedBy(2), workerDeadAfter.dividedBy(4)), COMPUTED_INTERVAL_CAP);
  }

  /**
   * The default of {@link #RECURRING_MISSED_AFTER}: the time a leader change may take, twice the lease
   * TTL and twice the recurring interval.
   */
  public static Duration defaultRecurringMissedAfter(
      Duration leaseTtl, Duration recurringInterval) {
    return leaseTtl.multipliedBy(2).plus(recurringInterval.multipliedBy(2));
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  /** Every setting, in documentation order. */
  public static final List<Setting<?>> ALL = List.of(
      SCHEMA,
      CONCURRENCY,
      CLAIM_BATCH,
      COMPLETION_BATCH,
      POLL_INTERVAL,
      SHUTDOWN_GRACE,
      LISTEN,
      HAND_OFF,
      STALE_THRESHOLD,
      WORKER_DEAD_AFTER,
      HEARTBEAT_INTERVAL,
      UNKNOWN_TYPE_GRACE,
      PROGRESS_THROTTLE,
      STUCK_HANDLER_GRACE,
      PREFETCH_HOLD,
      HTTP_CONNECT_TIMEOUT,
      HTTP_REQUEST_TIMEOUT,
      MAINTENANCE,
      RETENTION,
      LEASE_TTL,
      RESCUE_INTERVAL,
      PRUNE_INTERVAL,
      RECURRING_INTERVAL,
      RECURRING_MISSED_AFTER,
      VACUUM_INTERVAL,
      HOST,
      PORT,
      REQUEST_TIMEOUT,
      MAX_BODY_BYTES);

  /** The setting named {@code key}. */
  public static Setting<?> byKey(String key) {
    return ALL.stream()
        .filter(s -> s.key().equals(key))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no setting named " + key));
  }

  /**
   * The table of the Java builders' settings in Markdown, as in the documentation ("Configuration"): one
   * row per setting with the builder methods that set it.
   */
  public static String markdownTable() {
    StringBuilder out = new StringBuilder();
    out.append("| setting | where | default | allowed | what it does |\n");
    out.append("|---|---|---|---|---|\n");
    for (Setting<?> s : ALL) {
      out.append("| `")
          .append(s.key())
          .append("` | ")
          .append(s.builders().stream().map(m -> "`" + m + "`").collect(Collectors.joining(", ")))
          .append(" | ")
          .append(markdownDefault(s))
          .append(" | ")
          .append(s.allowedText())
          .append(" | ")
          .append(s.description())
          .append(" |\n");
    }
    return out.toString();
  }

  /** The default as documentation shows it: {@code `5m`}, {@code 1000}, or how it is computed. */
  public static String markdownDefault(Setting<?> s) {
    if (s.computedDefault()) {
      return s.defaultText();
    }
    return Number.class.isAssignableFrom(s.type()) ? s.defaultText() : "`" + s.defaultText() + "`";
  }
}
