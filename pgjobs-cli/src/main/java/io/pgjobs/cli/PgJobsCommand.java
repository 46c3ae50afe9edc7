package io.pgjobs.cli;

import io.pgjobs.cli.config.InvalidSettingException;
import io.pgjobs.cli.config.Settings;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.ListResourceBundle;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * The {@code pgjobs} command: the root of every subcommand. It holds the options every subcommand
 * accepts (database, schema, config file, log format) and what the subcommands write to.
 *
 * <pre>{@code
 * int exitCode = PgJobsCommand.execute(new String[] {"jobs", "list"}, out, err, System.getenv());
 * }</pre>
 *
 * Exit codes: {@value #OK} success, {@value #FAILED} the command or a job operation failed (job not
 * found, database unreachable, ...), {@value #USAGE} usage error (unknown option, invalid value of a
 * flag, environment variable or config file entry, unknown job type, ambiguous job id prefix).
 */
@Command(
    name = "pgjobs",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = "Durable background jobs on PostgreSQL: run workers, enqueue and manage jobs.",
    subcommands = {
      MigrateCommand.class,
      WorkCommand.class,
      EnqueueCommand.class,
      JobsCommand.class,
      WorkflowsCommand.class,
      RecurringCommand.class,
      LimitsCommand.class,
      SettingsCommand.class,
      ServeCommand.class,
      DemoCommand.class,
      BenchCommand.class,
      CommandLine.HelpCommand.class
    },
    footerHeading = "%n",
    footer = {
      "Settings come from flags, then the environment (PGJOBS_<SETTING>, DATABASE_URL), then the config file"
          + " (--config or PGJOBS_CONFIG), then defaults; 'pgjobs settings' shows the effective values.",
      "Exit codes: 0 ok, 1 the command failed, 2 usage error."
    })
public final class PgJobsCommand implements Callable<Integer> {
  /** Exit code of success. */
  public static final int OK = 0;
  /** Exit code of a failed command (job not found, database unreachable, ...). */
  public static final int FAILED = 1;
  /** Exit code of a usage error (picocli's). */
  public static final int USAGE = 2;

  @Spec
  CommandLine.Model.CommandSpec spec;

  @Option(
      names = "--config",
      paramLabel = "<file>",
      descriptionKey = Settings.CONFIG,
      scope = ScopeType.INHERIT)
  String config;

  @Option(
      names = "--database-url",
      paramLabel = "<url>",
      descriptionKey = Settings.DATABASE_URL,
      scope = ScopeType.INHERIT)
  String databaseUrl;

  @Option(
      names = "--listen-database-url",
      paramLabel = "<url|off>",
      descriptionKey = Settings.LISTEN_DATABASE_URL,
      scope = ScopeType.INHERIT)
  String listenDatabaseUrl;

  @Option(
      names = "--schema",
      paramLabel = "<name>",
      descriptionKey = Settings.SCHEMA,
      scope = ScopeType.INHERIT)
  String schema;

  @Option(
      names = "--pool-size",
      paramLabel = "<n>",
      descriptionKey = Settings.POOL_SIZE,
      scope = ScopeType.INHERIT)
  String poolSize;

  @Option(
      names = "--log-format",
      paramLabel = "<format>",
      descriptionKey = Settings.LOG_FORMAT,
      scope = ScopeType.INHERIT)
  String logFormat;

  @Option(
      names = "--log-level",
      paramLabel = "<level>",
      descriptionKey = Settings.LOG_LEVEL,
      scope = ScopeType.INHERIT)
  String logLevel;

  private final PrintWriter out;
  private final PrintWriter err;
  private final Map<String, String> environment;
  private final Consumer<Settings> logging;
  private final boolean interactive;

  /**
   * A command writing to {@code out} and {@code err}, reading {@code environment}.
   *
   * @param logging applies the log format and level once settings are known (Main configures logback; tests pass
   *     a no-op)
   * @param interactive true when {@code out} is a terminal (progress lines are then redrawn in place)
   */
  public PgJobsCommand(
      PrintWriter out,
      PrintWriter err,
      Map<String, String> environment,
      Consumer<Settings> logging,
      boolean interactive) {
    this.out = Objects.requireNonNull(out, "out");
    this.err = Objects.requireNonNull(err, "err");
    this.environment = Map.copyOf(environment);
    this.logging = Objects.requireNonNull(logging, "logging");
    this.interactive = interactive;
  }

  /** Runs the command line {@code args} and returns its exit code. Never throws. */
  public static int execute(
      String[] args, PrintWriter out, PrintWriter err, Map<String, String> environment) {
    return execute(args, out, err, environment, settings -> {}, false);
  }

  /** Same, with a log configurator and whether {@code out} is a terminal. */
  public static int execute(
      String[] args,
      PrintWriter out,
      PrintWriter err,
      Map<String, String> environment,
      Consumer<Settings> logging,
      boolean interactive) {
    PgJobsCommand root = new PgJobsCommand(out, err, environment, logging, interactive);
    int code = root.commandLine().execute(args);
    out.flush();
    err.flush();
    return code;
  }

  /** The picocli command line over this root, with pgjobs' help texts and error handling. */
  CommandLine commandLine() {
    CommandLine cl = new CommandLine(this);
    cl.setOut(out);
    cl.setErr(err);
    cl.setResourceBundle(new SettingsHelp());
    cl.setExpandAtFiles(false); // a payload may start with '@'
    cl.setParameterExceptionHandler(PgJobsCommand::usageError);
    cl.setExecutionExceptionHandler((e, commandLine, parseResult) -> failure(e, commandLine));
    return cl;
  }

  @Override
  public Integer call() {
    err.println("pgjobs: a command is required.");
    spec.commandLine().usage(err);
    return USAGE;
  }

  /** Where commands print their results. */
  PrintWriter out() {
    return out;
  }

  /** Where commands print problems. */
  PrintWriter err() {
    return err;
  }

  /** The environment the settings are read from. */
  Map<String, String> environment() {
    return environment;
  }

  /** True when {@code out} is a terminal. */
  boolean interactive() {
    return interactive;
  }

  /**
   * Resolves the settings from the global flags plus {@code commandFlags} (setting name to the flag's
   * text, null when not given), the environment and the config file, and applies the log format.
   *
   * @throws InvalidSettingException for an invalid value (exit code 2)
   */
  Settings settings(Map<String, String> commandFlags) {
    Map<String, String> flags = new LinkedHashMap<>();
    flags.put(Settings.CONFIG, config);
    flags.put(Settings.DATABASE_URL, databaseUrl);
    flags.put(Settings.LISTEN_DATABASE_URL, listenDatabaseUrl);
    flags.put(Settings.SCHEMA, schema);
    flags.put(Settings.POOL_SIZE, poolSize);
    flags.put(Settings.LOG_FORMAT, logFormat);
    flags.put(Settings.LOG_LEVEL, logLevel);
    flags.putAll(commandFlags);
    Settings settings = Settings.resolve(flags, environment);
    logging.accept(settings);
    return settings;
  }

  private static int usageError(CommandLine.ParameterException e, String[] args) {
    CommandLine cl = e.getCommandLine();
    PrintWriter err = cl.getErr();
    err.println(
        cl.getCommandName().equals("pgjobs")
            ? "pgjobs: " + e.getMessage()
            : qualifiedName(cl) + ": " + e.getMessage());
    CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
    err.println("Try '" + qualifiedName(cl) + " --help' for more information.");
    err.flush();
    return USAGE;
  }

  private static int failure(Exception e, CommandLine cl) {
    PrintWriter err = cl.getErr();
    if (e instanceof InvalidSettingException invalid) {
      err.println(qualifiedName(cl) + ": " + invalid.getMessage());
      err.println(
          "Try '" + qualifiedName(cl) + " --help' or 'pgjobs settings' for more information.");
      err.flush();
      return USAGE;
    }
    if (e instanceof CommandLine.ParameterException parameter) {
      return usageError(parameter, new String[0]);
    }
    err.println(qualifiedName(cl) + ": " + Failures.describe(e));
    err.flush();
    org.slf4j.LoggerFactory.getLogger(PgJobsCommand.class).debug("command failed", e);
    return FAILED;
  }

  private static String qualifiedName(CommandLine cl) {
    return cl.getCommandSpec().qualifiedName();
  }

  /** Option descriptions generated from the settings table, so help and documentation agree. */
  static final class SettingsHelp extends ListResourceBundle {
    @Override
    protected Object[][] getContents() {
      return Settings.DEFINITIONS.stream()
          // picocli formats descriptions with String.format: a literal % (the URL escapes) must be
          // %%.
          .map(d -> new Object[] {d.name(), Settings.helpText(d.name()).replace("%", "%%")})
          .toArray(Object[][]::new);
    }
  }
}
