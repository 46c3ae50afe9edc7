package io.pgjobs.cli;

import io.pgjobs.cli.config.Settings;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code pgjobs settings}: the effective value of every setting and where it came from (flag,
 * environment, config file, default), after validation. Secrets are hidden. Touches no database.
 */
@Command(
    name = "settings",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Show the effective value of every setting and where it came from.",
      "Precedence: flag > environment variable > config file > default. Secrets are hidden."
    })
final class SettingsCommand extends Subcommand {
  @Mixin
  WorkerOptions worker = new WorkerOptions();

  @Mixin
  ServerOptions server = new ServerOptions();

  @Override
  public Integer call() {
    Map<String, String> flags = new LinkedHashMap<>(worker.flags());
    flags.putAll(server.flags());
    Settings settings = settings(flags);
    int width =
        Settings.DEFINITIONS.stream().mapToInt(d -> d.name().length()).max().orElse(10);
    for (Settings.Definition def : Settings.DEFINITIONS) {
      Settings.Value value = settings.value(def.name());
      String shown = settings.shown(def.name());
      if (def.name().equals(Settings.QUEUES) && value.value() == null) {
        shown = "(the queues of the registered job types)";
      }
      out().println(String.format("%-" + width + "s  %s  [%s]", def.name(), shown, value.origin()));
    }
    return PgJobsCommand.OK;
  }
}
