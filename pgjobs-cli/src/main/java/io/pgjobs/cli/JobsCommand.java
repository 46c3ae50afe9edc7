package io.pgjobs.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code pgjobs jobs}: list, show, cancel and retry jobs. */
@Command(
    name = "jobs",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = "List, show, cancel and retry jobs.",
    subcommands = {
      JobsListCommand.class,
      JobsShowCommand.class,
      JobsCancelCommand.class,
      JobsRetryCommand.class,
      CommandLine.HelpCommand.class
    })
final class JobsCommand extends Subcommand {
  @Override
  public Integer call() {
    root().err().println("pgjobs jobs: a subcommand is required (list, show, cancel, retry).");
    spec.commandLine().usage(root().err());
    return PgJobsCommand.USAGE;
  }
}
