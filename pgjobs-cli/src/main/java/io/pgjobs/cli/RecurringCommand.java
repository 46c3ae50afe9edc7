package io.pgjobs.cli;

import io.pgjobs.EnqueuedJob;
import io.pgjobs.JobType;
import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.Priority;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.recurring.RecurringSchedules;
import io.pgjobs.recurring.RecurringSchedules.Definition;
import io.pgjobs.recurring.RecurringSchedules.Schedule;
import io.pgjobs.recurring.ScheduleException;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * {@code pgjobs recurring}: recurring (cron) schedules at run time, through the library's
 * {@link RecurringSchedules}: list, add, remove, pause, resume, run-now. Schedules declared in code can
 * be paused, resumed and run now, not removed.
 */
@Command(
    name = "recurring",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = "List, add, remove, pause, resume and run now recurring (cron) schedules.",
    subcommands = {
      RecurringCommand.ListCommand.class,
      RecurringCommand.AddCommand.class,
      RecurringCommand.RemoveCommand.class,
      RecurringCommand.PauseCommand.class,
      RecurringCommand.ResumeCommand.class,
      RecurringCommand.RunNowCommand.class,
      CommandLine.HelpCommand.class
    })
final class RecurringCommand extends Subcommand {
  @Override
  public Integer call() {
    root()
        .err()
        .println(
            "pgjobs recurring: a subcommand is required (list, add, remove, pause, resume, run-now).");
    spec.commandLine().usage(root().err());
    return PgJobsCommand.USAGE;
  }

  /** The API's field names as this command's flags. */
  private static final Map<String, String> FLAGS = Map.of(
      "name",
      "NAME",
      "cron",
      "--cron",
      "zone",
      "--zone",
      "type",
      "--type",
      "queue",
      "--queue",
      "priority",
      "--priority",
      "max_attempts",
      "--max-attempts",
      "missed",
      "--missed",
      "catch_up",
      "--catch-up");

  private static String flag(String field) {
    if (field.startsWith("payload")) {
      return "--payload"
          + (field.equals("payload") ? "" : " " + field.substring("payload.".length()));
    }
    return FLAGS.getOrDefault(field, field);
  }

  /** Runs {@code work} on the schedules; refusals become exit 2 (bad flags) or 1 (the command failed). */
  static <T> T withSchedules(
      Subcommand command, List<JobType<?>> known, Function<RecurringSchedules, T> work) {
    try (Database db = Database.open(command.settings(Map.of()), false, known)) {
      return work.apply(db.client().recurring());
    } catch (ScheduleException e) {
      switch (e.kind()) {
        case INVALID -> {
          StringBuilder message = new StringBuilder("invalid recurring schedule:");
          for (FieldProblem p : e.problems()) {
            message.append("\n  ").append(flag(p.field())).append(": ").append(p.reason());
          }
          throw command.usage(message.toString());
        }
        default -> throw new CommandFailedException(e.getMessage());
      }
    }
  }

  static void print(PrintWriter out, Schedule s) {
    String state = s.disabled() ? "disabled" : s.paused() ? "paused" : "active";
    out.println(s.name() + "  " + state + "  " + s.cron() + " (" + s.zone() + ")  " + s.type()
        + " on " + s.queue() + "  [" + s.source() + "]");
    out.println("  " + s.description());
    out.println("  next: "
        + s.nextRuns().stream().map(Instant::toString).collect(Collectors.joining(", ")));
    RecurringSchedules.LastRun last = s.lastRun();
    out.println("  last run: "
        + (last == null
            ? "none yet"
            : last.jobId() + " "
                + (last.state() == null
                    ? "(no longer kept)"
                    : last.state().value()
                        + (last.finishedAt() != null ? " at " + last.finishedAt() : ""))));
  }

  /** {@code pgjobs recurring list}. */
  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description =
          "List every schedule: expression and its words, zone, next 5 fire times, last run and outcome.")
  static final class ListCommand extends Subcommand {
    @Override
    public Integer call() {
      List<Schedule> all = withSchedules(this, List.of(), RecurringSchedules::list);
      if (all.isEmpty()) {
        out().println("no recurring schedules");
      }
      all.forEach(s -> print(out(), s));
      return PgJobsCommand.OK;
    }
  }

  /** {@code pgjobs recurring add NAME --cron ... --type ...}. */
  @Command(
      name = "add",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description = {
        "Add a schedule: every slot of --cron (in --zone) enqueues one job of --type with --payload.",
        "  pgjobs recurring add nightly-report --cron '0 3 * * *' --zone Europe/Berlin --type send_email \\",
        "      --payload '{\"to\":\"ops@example.com\",\"subject\":\"Report\",\"body\":\"...\"}'"
      })
  static final class AddCommand extends Subcommand {
    @Parameters(
        index = "0",
        paramLabel = "NAME",
        description = "The schedule's name: 1 to 200 of letters, digits and _ . : -")
    String name;

    @Option(
        names = "--cron",
        required = true,
        paramLabel = "<expression>",
        description =
            "5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or @yearly,"
                + " @monthly, @weekly, @daily, @hourly.")
    String cron;

    @Option(
        names = "--zone",
        paramLabel = "<zone>",
        defaultValue = "UTC",
        description = "The IANA time zone the fields are read in. Default: ${DEFAULT-VALUE}.")
    String zone;

    @Option(
        names = "--type",
        required = true,
        paramLabel = "<type>",
        description = "The job type of each job.")
    String type;

    @Option(
        names = "--payload",
        paramLabel = "<json>",
        defaultValue = "{}",
        description = "Each job's payload, a JSON object. Default: ${DEFAULT-VALUE}.")
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
            "An integer or critical, high, normal, low, background (default: the type's, else normal).")
    String priority;

    @Option(
        names = "--max-attempts",
        paramLabel = "<n>",
        description = "1 to 1000 (default: the type's, else 3).")
    Integer maxAttempts;

    @Option(
        names = "--missed",
        paramLabel = "<policy>",
        defaultValue = "latest",
        description =
            "Slots missed while nothing ran: skip, latest (fire the newest one) or catch_up. Default: ${DEFAULT-VALUE}.")
    String missed;

    @Option(
        names = "--catch-up",
        paramLabel = "<n>",
        description =
            "With --missed catch_up: how many of the newest missed slots fire, 1 to 1000 (default 1).")
    Integer catchUp;

    @Option(
        names = "--allow-unknown-type",
        description =
            "Add it even if no handler of this process knows --type (a worker elsewhere may).")
    boolean allowUnknownType;

    @Override
    public Integer call() {
      if (catchUp != null && !"catch_up".equals(missed)) {
        throw usage("--catch-up goes with --missed catch_up");
      }
      JsonNode json;
      try {
        json = PayloadCodec.DEFAULT_MAPPER.readTree(payload);
      } catch (JacksonException e) {
        throw usage("--payload is not valid JSON: " + e.getOriginalMessage());
      }
      if (json == null || !json.isObject()) {
        throw usage("--payload must be a JSON object, like '{\"key\": \"value\"}'");
      }
      Settings settings = settings(Map.of());
      List<JobType<?>> known = JobKinds.types(settings);
      if (known.stream().noneMatch(t -> t.name().equals(type)) && !allowUnknownType) {
        throw usage("unknown job type '" + type + "'; known types: "
            + known.stream().map(JobType::name).sorted().collect(Collectors.joining(", "))
            + " (--allow-unknown-type adds it anyway, for a worker elsewhere that knows it)");
      }
      Definition d = new Definition(
          name,
          cron,
          zone,
          type,
          json,
          queue,
          priority == null ? null : priority(priority),
          maxAttempts,
          missed,
          catchUp);
      Schedule s = withSchedules(this, known, schedules -> schedules.add(d));
      out().println("added recurring schedule " + s.name());
      print(out(), s);
      return PgJobsCommand.OK;
    }

    private int priority(String text) {
      try {
        return Priority.parse(text.strip().toLowerCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw usage("invalid --priority '" + text
            + "'; allowed: an integer or critical, high, normal, low, background");
      }
    }
  }

  /** One schedule named by NAME. */
  abstract static class Named extends Subcommand {
    @Parameters(index = "0", paramLabel = "NAME", description = "The schedule's name.")
    String name;
  }

  /** {@code pgjobs recurring remove NAME}. */
  @Command(
      name = "remove",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description = {
        "Remove a schedule added at run time (its jobs stay).",
        "A schedule declared in code cannot be removed here (exit 1): remove it from the code."
      })
  static final class RemoveCommand extends Named {
    @Override
    public Integer call() {
      withSchedules(this, List.of(), s -> s.remove(name));
      out().println("removed recurring schedule " + name);
      return PgJobsCommand.OK;
    }
  }

  /** {@code pgjobs recurring pause NAME}. */
  @Command(
      name = "pause",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description =
          "Pause a schedule (code-declared ones too): its slots stop firing until it is resumed.")
  static final class PauseCommand extends Named {
    @Override
    public Integer call() {
      withSchedules(this, List.of(), s -> s.pause(name));
      out().println("recurring schedule " + name + " paused");
      return PgJobsCommand.OK;
    }
  }

  /** {@code pgjobs recurring resume NAME}. */
  @Command(
      name = "resume",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description =
          "Resume a paused schedule; slots missed meanwhile follow its missed-slots policy.")
  static final class ResumeCommand extends Named {
    @Override
    public Integer call() {
      withSchedules(this, List.of(), s -> s.resume(name));
      out().println("recurring schedule " + name + " resumed");
      return PgJobsCommand.OK;
    }
  }

  /** {@code pgjobs recurring run-now NAME}. */
  @Command(
      name = "run-now",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description = "Enqueue one job of the schedule now (even while paused); prints the job's id.")
  static final class RunNowCommand extends Named {
    @Override
    public Integer call() {
      EnqueuedJob job = withSchedules(this, List.of(), s -> s.runNow(name));
      out().println("enqueued job " + job.job().id() + " of recurring schedule " + name);
      return PgJobsCommand.OK;
    }
  }
}
