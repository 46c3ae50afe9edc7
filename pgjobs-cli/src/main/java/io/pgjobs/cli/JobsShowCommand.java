package io.pgjobs.cli;

import io.pgjobs.Job;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code pgjobs jobs show ID}: every field of one job, its error history included. */
@Command(
    name = "show",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description =
        "Show one job: state, attempts, payload, output, progress, every attempt's error and, for"
            + " a job of a graph, the jobs it waits for.")
final class JobsShowCommand extends Subcommand {
  @Parameters(
      index = "0",
      paramLabel = "ID",
      description =
          "The job's id (a UUID) or a unique prefix of it (at least 4 hex digits, e.g. 01a2b3).")
  String idText;

  @Option(
      names = "--json",
      description = "Print the job as JSON, as GET /jobs/{id} of the HTTP API answers it.")
  boolean json;

  @Override
  public Integer call() {
    try (Database db = Database.open(settings(Map.of()), false, List.of())) {
      UUID id = JobIdArgument.resolve(this, db, idText);
      Job job = db.client()
          .get(id)
          .orElseThrow(() -> new CommandFailedException(
              "job " + id + " not found (finished jobs are pruned after the retention period)"));
      if (json) {
        out().println(JobFormat.json(job));
      } else {
        JobFormat.details(out(), job);
        // A job of a graph: what it waits or waited for (GET /jobs/{id}/parents).
        List<io.pgjobs.JobParent> parents = db.client().parents(id);
        if (!parents.isEmpty()) {
          out().println("waits for:");
          for (io.pgjobs.JobParent p : parents) {
            out()
                .printf(
                    "  %s %s: %s, %s%n",
                    p.id(),
                    p.type(),
                    p.state() == null ? "not ended" : p.state().value(),
                    switch (p.onFailure()) {
                      case CANCEL -> "cancelled if it fails";
                      case RUN -> "runs anyway if it fails";
                      case ONLY -> "runs only if it fails";
                    });
          }
        }
      }
    }
    return PgJobsCommand.OK;
  }
}
