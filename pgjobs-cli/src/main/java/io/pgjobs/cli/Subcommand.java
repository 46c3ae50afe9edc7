package io.pgjobs.cli;

import io.pgjobs.cli.config.Settings;
import java.io.PrintWriter;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Spec;

/** What every pgjobs subcommand shares: the root's output, environment and settings. */
abstract class Subcommand implements Callable<Integer> {
  @Spec
  CommandLine.Model.CommandSpec spec;

  /** The root command. */
  PgJobsCommand root() {
    return (PgJobsCommand) spec.root().userObject();
  }

  /** Where results go. */
  PrintWriter out() {
    return root().out();
  }

  /** Settings from the global flags, {@code flags}, the environment and the config file. */
  Settings settings(Map<String, String> flags) {
    return root().settings(flags);
  }

  /** A usage error (exit code 2) about this command's arguments. */
  CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }
}
