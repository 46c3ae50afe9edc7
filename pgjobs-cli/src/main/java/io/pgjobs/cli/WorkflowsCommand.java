package io.pgjobs.cli;

import io.pgjobs.InvalidJobException;
import io.pgjobs.Job;
import io.pgjobs.JobFilter;
import io.pgjobs.JobPage;
import io.pgjobs.JobState;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.workflow.WorkflowStep;
import io.pgjobs.workflow.WorkflowType;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code pgjobs workflows}: list workflow runs, show one with its recorded steps, signal it, cancel it with
 * compensation.
 */
@Command(
    name = "workflows",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description =
        "List workflow runs, show a run's recorded steps, signal it and cancel it with compensation"
            + " (start one with enqueue; retry one with jobs retry: a run is a job of the workflow's"
            + " type).",
    subcommands = {
      WorkflowsCommand.ListRuns.class,
      WorkflowsCommand.Show.class,
      WorkflowsCommand.Signal.class,
      WorkflowsCommand.Cancel.class,
      CommandLine.HelpCommand.class
    })
final class WorkflowsCommand extends Subcommand {
  /** A job type's name, as {@code JobType} allows it. */
  private static final Pattern TYPE_NAME = Pattern.compile("[A-Za-z0-9_.:\\-/]{1,255}");

  @Override
  public Integer call() {
    root()
        .err()
        .println("pgjobs workflows: a subcommand is required (list, show, signal, cancel).");
    spec.commandLine().usage(root().err());
    return PgJobsCommand.USAGE;
  }

  /** Run {@code id}, or the command fails saying it is gone. */
  static Job run(Database db, UUID id) {
    return db.client()
        .get(id)
        .orElseThrow(() -> new CommandFailedException(
            "run " + id + " not found (finished runs are pruned after the retention period)"));
  }

  /** {@code pgjobs workflows list [--workflow NAME] [--state S] [--limit N] [--cursor C]}. */
  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description = {
        "List workflow runs, newest first, a page at a time (their steps: workflows show ID).",
        "Without --workflow: the runs of the workflows this pgjobs knows (the demo's and those its"
            + " job handler providers declare)."
      })
  static final class ListRuns extends Subcommand {
    @Option(
        names = "--workflow",
        paramLabel = "<name>",
        split = ",",
        description =
            "Only runs of these workflows (repeat or comma-separate); any workflow's name,"
                + " also one this pgjobs does not run.")
    List<String> workflows = new ArrayList<>();

    @Option(
        names = "--state",
        paramLabel = "<state>",
        split = ",",
        description = "Only these states (repeat or comma-separate): queued, running, retrying,"
            + " succeeded, failed, cancelled, blocked.")
    List<String> states = new ArrayList<>();

    @Option(
        names = "--limit",
        paramLabel = "<n>",
        defaultValue = "50",
        description = "Page size, 1 to 1000. Default: ${DEFAULT-VALUE}.")
    int limit;

    @Option(
        names = "--cursor",
        paramLabel = "<cursor>",
        description = "Continue after the page that printed this cursor.")
    String cursor;

    @Override
    public Integer call() {
      for (String name : workflows) {
        if (!TYPE_NAME.matcher(name).matches()) {
          throw usage("invalid --workflow '" + name + "': a workflow's name is 1 to 255 characters"
              + " of letters, digits and _ . : - /");
        }
      }
      JobFilter.Builder filter = JobFilter.builder();
      for (String state : states) {
        try {
          filter.state(JobState.parse(state));
        } catch (IllegalArgumentException e) {
          throw usage("invalid --state: " + e.getMessage());
        }
      }
      Settings settings = settings(Map.of());
      List<String> names = workflows;
      if (names.isEmpty()) {
        names = JobKinds.workflows(JobKinds.registrations(settings)).stream()
            .map(WorkflowType::name)
            .sorted()
            .toList();
      }
      filter.type(names.toArray(String[]::new)).limit(limit).cursor(cursor);
      JobFilter built;
      try {
        built = filter.build();
      } catch (InvalidJobException e) {
        String reason = e.getMessage().startsWith(e.field() + ": ")
            ? e.getMessage().substring(e.field().length() + 2)
            : e.getMessage();
        throw usage("invalid --" + e.field() + ": " + reason);
      }
      if (names.isEmpty()) {
        out().println("no workflow known to this pgjobs; name one with --workflow");
        return PgJobsCommand.OK;
      }
      try (Database db = Database.open(settings, false, List.of())) {
        JobPage page = db.client().list(built);
        if (page.jobs().isEmpty()) {
          out().println("no runs of " + String.join(", ", names));
        } else {
          table(page.jobs());
        }
        if (page.nextCursor() != null) {
          out().println("next page: --cursor " + page.nextCursor());
        }
      }
      return PgJobsCommand.OK;
    }

    private void table(List<Job> runs) {
      List<String[]> rows = new ArrayList<>();
      rows.add(new String[] {"ID", "WORKFLOW", "STATE", "ATTEMPTS", "CREATED", "FINISHED"});
      for (Job run : runs) {
        rows.add(new String[] {
          run.id().toString(),
          run.type(),
          run.state().value(),
          run.attempts() + "/" + run.maxAttempts(),
          time(run.createdAt()),
          time(run.finishedAt())
        });
      }
      int[] widths = new int[rows.get(0).length];
      for (String[] row : rows) {
        for (int i = 0; i < row.length; i++) {
          widths[i] = Math.max(widths[i], row[i].length());
        }
      }
      for (String[] row : rows) {
        StringBuilder line = new StringBuilder();
        for (int i = 0; i < row.length; i++) {
          line.append(
              i == row.length - 1 ? row[i] : String.format("%-" + widths[i] + "s  ", row[i]));
        }
        out().println(line.toString().stripTrailing());
      }
    }

    private static String time(Instant instant) {
      return instant == null ? "-" : instant.truncatedTo(ChronoUnit.MILLIS).toString();
    }
  }

  /** {@code pgjobs workflows show ID}. */
  @Command(
      name = "show",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description =
          "Show a workflow run: its state and every recorded step, in the order they first ran.")
  static final class Show extends Subcommand {
    @Parameters(
        index = "0",
        paramLabel = "ID",
        description = "The run's id (a UUID) or a unique prefix of it (at least 4 hex digits).")
    String idText;

    @Override
    public Integer call() {
      try (Database db = Database.open(settings(Map.of()), false, List.of())) {
        UUID id = JobIdArgument.resolve(this, db, idText);
        Job job = run(db, id);
        out()
            .printf(
                "run %s of workflow %s: %s, attempt %d of %d%n",
                id, job.type(), job.state().value(), job.attempts(), job.maxAttempts());
        List<WorkflowStep> steps = db.client().workflowSteps(id);
        if (steps.isEmpty()) {
          out().println("no step recorded");
        }
        for (WorkflowStep s : steps) {
          String detail =
              s.error() != null ? s.error() : s.resultJson() == null ? "" : s.resultJson();
          out()
              .printf("%3d  %-28s %-7s %-20s %s%n", s.seq(), s.name(), s.kind(), s.state(), detail);
        }
      }
      return PgJobsCommand.OK;
    }
  }

  /** {@code pgjobs workflows signal ID NAME --payload JSON}. */
  @Command(
      name = "signal",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description =
          "Send a signal to a workflow run: what its ctx.awaitSignal(NAME, ...) waits for.")
  static final class Signal extends Subcommand {
    @Parameters(
        index = "0",
        paramLabel = "ID",
        description = "The run's id or a unique prefix of it.")
    String idText;

    @Parameters(
        index = "1",
        paramLabel = "NAME",
        description = "The signal's name (1-200 characters).")
    String name;

    @Option(
        names = "--payload",
        paramLabel = "JSON",
        description = "The signal's payload, any JSON value. Default: {}.")
    String payload = "{}";

    @Override
    public Integer call() {
      if (name.isEmpty() || name.length() > 200) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "invalid NAME: a signal's name is 1 to 200 characters, was " + name.length());
      }
      Object value;
      try {
        value = io.pgjobs.json.PayloadCodec.DEFAULT_MAPPER.readTree(payload);
      } catch (RuntimeException e) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "invalid --payload: not JSON (" + e.getMessage().lines().findFirst().orElse("") + ")");
      }
      try (Database db = Database.open(settings(Map.of()), false, List.of())) {
        UUID id = JobIdArgument.resolve(this, db, idText);
        Job job = run(db, id);
        if (job.state().isTerminal()) {
          throw new CommandFailedException(
              "run " + id + " has ended (" + job.state().value() + "); it waits for no signal");
        }
        boolean stored = db.client().signalWorkflow(id, name, value);
        out()
            .println(
                stored
                    ? "signal '" + name + "' sent to run " + id
                    : "signal '" + name + "' had already come to run " + id
                        + "; this one was not stored");
      }
      return PgJobsCommand.OK;
    }
  }

  /**
   * {@code pgjobs workflows cancel ID}: cancels a run with compensation ({@code JobClient.cancelWorkflow});
   * exits 1 if the run has ended or does not exist.
   */
  @Command(
      name = "cancel",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description = {
        "Cancel a workflow run with compensation: it stops at its next step, sleep or wait (a sleeping"
            + " or waiting run is woken for it), compensates its done steps, the last first, and ends"
            + " cancelled.",
        "Exits 1 if the run has ended or does not exist. (jobs cancel would end a waiting run at once,"
            + " without compensating.)"
      })
  static final class Cancel extends Subcommand {
    @Parameters(
        index = "0",
        paramLabel = "ID",
        description = "The run's id or a unique prefix of it.")
    String idText;

    @Override
    public Integer call() {
      try (Database db = Database.open(settings(Map.of()), false, List.of())) {
        UUID id = JobIdArgument.resolve(this, db, idText);
        Job job = run(db, id);
        if (job.state().isTerminal()) {
          throw new CommandFailedException(
              "run " + id + " has ended (" + job.state().value() + "); nothing to cancel");
        }
        boolean asked;
        try {
          asked = db.client().cancelWorkflow(id);
        } catch (InvalidJobException e) {
          // It ended between the read and the cancel.
          throw new CommandFailedException(
              "run " + id + " has ended; nothing to cancel (" + e.getMessage() + ")");
        }
        out()
            .println(
                asked
                    ? "cancellation of run " + id
                        + " asked: it compensates its done steps and ends cancelled"
                    : "cancellation of run " + id + " had already been asked");
      }
      return PgJobsCommand.OK;
    }
  }
}
