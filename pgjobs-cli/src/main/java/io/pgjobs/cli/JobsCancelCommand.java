package io.pgjobs.cli;

import io.pgjobs.CancelResult;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code pgjobs jobs cancel ID}: a waiting job is cancelled at once, a running one is asked to stop
 * (its worker ends it); both exit 0. A finished or unknown job exits 1.
 */
@Command(
    name = "cancel",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Cancel a job.",
      "A waiting job is cancelled at once; a running job is asked to stop and its worker ends it."
          + " Exits 1 if the job has already finished or does not exist."
    })
final class JobsCancelCommand extends Subcommand {
  @Parameters(
      index = "0",
      paramLabel = "ID",
      description =
          "The job's id (a UUID) or a unique prefix of it (at least 4 hex digits, e.g. 01a2b3).")
  String idText;

  @Override
  public Integer call() {
    try (Database db = Database.open(settings(Map.of()), false, List.of())) {
      UUID id = JobIdArgument.resolve(this, db, idText);
      CancelResult result = db.client().cancel(id);
      switch (result.outcome()) {
        case CANCELLED -> out().println("job " + id + " cancelled");
        case PENDING_ON_WORKER ->
          out()
              .println(
                  "job " + id + " is running; cancellation requested, its worker will stop it");
        case ALREADY_TERMINAL ->
          throw new CommandFailedException("job " + id + " has already finished ("
              + result.state().value() + "); nothing to cancel");
        case NOT_FOUND -> throw new CommandFailedException("job " + id + " not found");
      }
    }
    return PgJobsCommand.OK;
  }
}
