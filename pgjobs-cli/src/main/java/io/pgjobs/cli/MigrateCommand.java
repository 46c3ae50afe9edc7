package io.pgjobs.cli;

import io.pgjobs.cli.config.Settings;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;

/** {@code pgjobs migrate}: creates the database if missing, then creates or updates the pgjobs schema. */
@Command(
    name = "migrate",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Create the database if missing, then create or update the pgjobs schema.",
      "Safe to run from many processes at once, and again after an upgrade."
    })
final class MigrateCommand extends Subcommand {
  @Override
  public Integer call() {
    Settings settings = settings(Map.of());
    try (Database db = Database.open(settings, true, List.of())) {
      if (db.created()) {
        out().println("created database " + db.url().database());
      }
      int applied = db.migrate();
      out()
          .println(
              applied == 0
                  ? "schema '" + settings.schema() + "' is up to date (" + db.url() + ")"
                  : "schema '" + settings.schema() + "' migrated: " + applied
                      + " migration(s) applied (" + db.url() + ")");
    }
    return PgJobsCommand.OK;
  }
}
