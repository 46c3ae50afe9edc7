package io.pgjobs.cli;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.InvalidJobException;
import io.pgjobs.InvalidPayloadException;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.PayloadValidator;
import io.pgjobs.Priority;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.config.DurationText;
import io.pgjobs.json.PayloadCodec;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * {@code pgjobs enqueue TYPE --payload JSON}: enqueues a job, or {@code --count N} copies of it in bulk
 * with a progress line. A payload of a known type (the demo kinds and handlers on the class path) is
 * checked before anything is stored; a bad one is a usage error listing every field's problem.
 */
@Command(
    name = "enqueue",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Enqueue a job of TYPE with a JSON payload.",
      "--count N enqueues N copies in bulk. TYPE must be a known type (see 'pgjobs work --help') unless",
      "--allow-unknown-type; its payload is validated first, e.g.:",
      "  pgjobs enqueue send_email --payload '{\"to\":\"ada@example.com\",\"subject\":\"Hi\",\"body\":\"Hello\"}'"
    })
final class EnqueueCommand extends Subcommand {
  /** Jobs per COPY statement of a bulk enqueue: {@value}. */
  static final int BATCH = 1_000;
  /** Most jobs one bulk enqueue may create: {@value}. */
  static final int MAX_COUNT = 10_000_000;

  @Parameters(
      index = "0",
      paramLabel = "TYPE",
      description = "The job type's name, e.g. send_email.")
  String type;

  @Option(
      names = "--payload",
      paramLabel = "<json>",
      defaultValue = "{}",
      description = "The payload, a JSON object. Default: ${DEFAULT-VALUE}.")
  String payload;

  @Option(
      names = "--queue",
      paramLabel = "<queue>",
      description = "Queue (default: the type's, else 'default').")
  String queue;

  @Option(
      names = "--priority",
      paramLabel = "<priority>",
      description =
          "An integer (higher runs first) or critical (100), high (75), normal (50), low (25), background (0).")
  String priority;

  @Option(
      names = "--delay",
      paramLabel = "<duration>",
      converter = DurationConverter.class,
      description = "Run no earlier than this long from now, e.g. 5s, 10m, 1h.")
  Duration delay;

  @Option(
      names = "--run-at",
      paramLabel = "<instant>",
      converter = InstantConverter.class,
      description =
          "Run no earlier than this ISO-8601 time, e.g. 2030-01-31T09:00:00Z or 2030-01-31T10:00:00+01:00.")
  Instant runAt;

  @Option(
      names = "--max-attempts",
      paramLabel = "<n>",
      description = "Most attempts, 1 to 1000 (default: the type's, else 3).")
  Integer maxAttempts;

  @Option(
      names = "--timeout",
      paramLabel = "<duration>",
      converter = DurationConverter.class,
      description = "Timeout of each attempt (default: the type's, else 1h).")
  Duration timeout;

  @Option(
      names = "--idempotency-key",
      paramLabel = "<key>",
      description =
          "Same key, same job: enqueueing again returns the first job and stores nothing.")
  String idempotencyKey;

  @Option(
      names = "--context",
      paramLabel = "<text>",
      description = "Free text saying why the job exists, for debugging.")
  String context;

  @Option(
      names = "--count",
      paramLabel = "<n>",
      defaultValue = "1",
      description =
          "Enqueue this many copies in bulk (1 to 10000000), with a progress line. Default: ${DEFAULT-VALUE}.")
  int count;

  @Option(
      names = "--allow-unknown-type",
      description =
          "Enqueue even if no handler of this process knows TYPE (a worker elsewhere may); its payload is"
              + " then not checked.")
  boolean allowUnknownType;

  @Option(
      names = {"-q", "--quiet"},
      description = "Print only the job id (or nothing in bulk).")
  boolean quiet;

  @Override
  public Integer call() {
    if (count < 1 || count > MAX_COUNT) {
      throw usage("--count must be between 1 and " + MAX_COUNT + ", was " + count);
    }
    if (count > 1 && idempotencyKey != null) {
      throw usage("--idempotency-key names one job; it cannot be used with --count " + count);
    }
    try {
      JobType.of(type, JsonNode.class); // checks the name before anything else
    } catch (InvalidJobException e) {
      throw usage("invalid TYPE: " + e.getMessage());
    }
    JsonNode json = parsePayload();
    EnqueueOptions options = options();
    Settings settings = settings(Map.of());
    List<JobType<?>> known = JobKinds.types(settings);
    JobType<?> knownType =
        known.stream().filter(t -> t.name().equals(type)).findFirst().orElse(null);
    if (knownType == null && !allowUnknownType) {
      throw usage("unknown job type '" + type + "'; known types: "
          + known.stream()
              .map(JobType::name)
              .sorted()
              .collect(java.util.stream.Collectors.joining(", "))
          + " (--allow-unknown-type enqueues it anyway, for a worker elsewhere that knows it)");
    }
    Object typedPayload = knownType == null ? json : checkPayload(knownType, json);
    try (Database db = Database.open(settings, false, known)) {
      if (count == 1) {
        enqueueOne(db.client(), json, options);
      } else {
        enqueueMany(db.client(), knownType, typedPayload, options);
      }
    } catch (InvalidPayloadException e) {
      // The client's own checks (e.g. a member the payload class lacks): bad input like the others,
      // exit 2.
      throw usage(payloadMessage(e));
    }
    return PgJobsCommand.OK;
  }

  private JsonNode parsePayload() {
    JsonNode json;
    try {
      json = PayloadCodec.DEFAULT_MAPPER.readTree(payload);
    } catch (JacksonException e) {
      throw usage("--payload is not valid JSON: " + e.getOriginalMessage());
    }
    if (json == null || !json.isObject()) {
      throw usage("--payload must be a JSON object, like '{\"key\": \"value\"}'");
    }
    return json;
  }

  private EnqueueOptions options() {
    try {
      EnqueueOptions.Builder b = EnqueueOptions.builder()
          .queue(queue)
          .runAt(runAt)
          .delay(delay)
          .context(context)
          .idempotencyKey(idempotencyKey)
          .timeout(timeout);
      if (priority != null) {
        b.priority(parsePriority(priority));
      }
      if (maxAttempts != null) {
        b.maxAttempts(maxAttempts);
      }
      return b.build();
    } catch (InvalidJobException e) {
      String field = switch (e.field()) {
        case "runAt" -> "--run-at";
        case "maxAttempts" -> "--max-attempts";
        case "idempotencyKey" -> "--idempotency-key";
        default -> "--" + e.field();
      };
      throw usage("invalid " + field + ": " + e.getMessage());
    }
  }

  private int parsePriority(String text) {
    String value = text.strip().toLowerCase(Locale.ROOT);
    return switch (value) {
      case "critical" -> Priority.CRITICAL;
      case "high" -> Priority.HIGH;
      case "normal" -> Priority.NORMAL;
      case "low" -> Priority.LOW;
      case "background" -> Priority.BACKGROUND;
      default -> {
        try {
          yield Integer.parseInt(value);
        } catch (NumberFormatException e) {
          throw usage("invalid --priority '" + text
              + "'; allowed: an integer or critical, high, normal, low, background");
        }
      }
    };
  }

  /** Reads the payload into the known type's class and validates it, as the enqueue would. */
  private <P> P checkPayload(JobType<P> known, JsonNode json) {
    P typed;
    try {
      typed = PayloadCodec.DEFAULT_MAPPER.treeToValue(json, known.payloadClass());
    } catch (JacksonException e) {
      throw usage("--payload does not fit job type '" + type + "': " + e.getOriginalMessage());
    }
    try {
      known.validate(typed);
    } catch (InvalidPayloadException e) {
      throw usage(payloadMessage(e));
    }
    return typed;
  }

  private String payloadMessage(InvalidPayloadException e) {
    StringBuilder message = new StringBuilder("invalid --payload for job type '" + type + "':");
    for (PayloadValidator.FieldProblem problem : e.problems()) {
      message
          .append(System.lineSeparator())
          .append("  ")
          .append(problem.field())
          .append(": ")
          .append(problem.reason());
    }
    return message.toString();
  }

  private void enqueueOne(JobClient client, JsonNode json, EnqueueOptions options) {
    EnqueuedJob enqueued = client.enqueue(type, json, options);
    Job job = enqueued.job();
    if (quiet) {
      out().println(job.id());
    } else if (enqueued.replayed()) {
      out()
          .println("job " + job.id() + " already exists for idempotency key '" + idempotencyKey
              + "' (state " + JobFormat.state(job) + "); nothing new was enqueued");
    } else {
      out()
          .println("enqueued job " + job.id() + " (type " + job.type() + ", queue " + job.queue()
              + ", priority " + job.priority() + ", max attempts " + job.maxAttempts() + ", run at "
              + job.runAt() + ")");
    }
  }

  @SuppressWarnings("unchecked")
  private <P> void enqueueMany(
      JobClient client, JobType<P> known, Object payload, EnqueueOptions options) {
    JobType<P> jobType = known != null ? known : (JobType<P>) JobType.of(type, JsonNode.class);
    List<P> batch = Collections.nCopies(Math.min(BATCH, count), (P) payload);
    ProgressLine progress =
        quiet ? null : new ProgressLine(out(), "enqueued", count, root().interactive());
    UUID first = null;
    int done = 0;
    while (done < count) {
      int size = Math.min(BATCH, count - done);
      List<UUID> ids = client.enqueueAll(
          jobType, size == batch.size() ? batch : batch.subList(0, size), options);
      if (first == null) {
        first = ids.get(0);
      }
      done += size;
      if (progress != null) {
        progress.update(done);
      }
    }
    if (progress != null) {
      progress.finish();
      out().println("enqueued " + count + " jobs of type " + type + " (first " + first + ")");
    }
  }

  /** Reads durations written like 500ms, 5s, 10m, 1h. */
  static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      try {
        return DurationText.parse(value);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.TypeConversionException(e.getMessage());
      }
    }
  }

  /** Reads ISO-8601 instants, with Z or an offset. */
  static final class InstantConverter implements CommandLine.ITypeConverter<Instant> {
    @Override
    public Instant convert(String value) {
      try {
        return OffsetDateTime.parse(value.strip()).toInstant();
      } catch (DateTimeParseException e) {
        throw new CommandLine.TypeConversionException(
            "'" + value
                + "' is not an ISO-8601 time; allowed: e.g. 2030-01-31T09:00:00Z or 2030-01-31T10:00:00+01:00");
      }
    }
  }
}
