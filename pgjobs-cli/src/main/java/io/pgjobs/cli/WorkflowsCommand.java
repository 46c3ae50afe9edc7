package io.pgjobs.cli;

import io.pgjobs.Job;
import io.pgjobs.workflow.WorkflowStep;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code pgjobs workflows}: show a workflow run with its recorded steps, and signal it. */
@Command(
    name = "workflows",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description =
        "Show a workflow run's recorded steps and signal it (start one with enqueue; list,"
            + " cancel and retry runs with jobs: a run is a job of the workflow's type).",
    subcommands = {
      WorkflowsCommand.Show.class,
      WorkflowsCommand.Signal.class,
      CommandLine.HelpCommand.class
    })
final class WorkflowsCommand extends Subcommand {
  @Override
  public Integer call() {
    root().err().println("pgjobs workflows: a subcommand is required (show, signal).");
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
}
