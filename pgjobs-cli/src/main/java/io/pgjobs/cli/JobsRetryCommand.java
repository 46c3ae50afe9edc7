package io.pgjobs.cli;

import io.pgjobs.RetryResult;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code pgjobs jobs retry ID}: puts a failed or cancelled job back in the queue with a full set of
 * attempts (its error history is kept). Any other job, or an unknown one, exits 1.
 */
@Command(
    name = "retry",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Put a failed or cancelled job back in the queue.",
      "The job gets a full set of attempts; its error history is kept. It is due when it was due if that"
          + " is still ahead (a job cancelled while scheduled keeps its time), else at once; --now runs it at"
          + " once. Exits 1 if the job is in another state or does not exist."
    })
final class JobsRetryCommand extends Subcommand {
  @picocli.CommandLine.Option(
      names = "--now",
      description = "Due at once, even if it was scheduled for later.")
  boolean now;

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
      RetryResult result = db.client().retry(id, now);
      switch (result) {
        case RETRIED -> out().println("job " + id + " queued again");
        case NOT_FOUND -> throw new CommandFailedException("job " + id + " not found");
        case NOT_RETRYABLE -> {
          String state = db.client().get(id).map(j -> j.state().value()).orElse("unknown");
          throw new CommandFailedException(
              "job " + id + " is " + state + "; only failed and cancelled jobs can be retried");
        }
      }
    }
    return PgJobsCommand.OK;
  }
}
