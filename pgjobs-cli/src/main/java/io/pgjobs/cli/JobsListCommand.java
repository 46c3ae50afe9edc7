package io.pgjobs.cli;

import io.pgjobs.JobFilter;
import io.pgjobs.JobPage;
import io.pgjobs.JobState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code pgjobs jobs list}: a page of jobs, newest first, with filters and a cursor for the next page. */
@Command(
    name = "list",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = "List jobs, newest first, a page at a time.")
final class JobsListCommand extends Subcommand {
  @Option(
      names = "--state",
      paramLabel = "<state>",
      split = ",",
      description =
          "Only these states (repeat or comma-separate): queued, running, retrying, succeeded, failed, cancelled, blocked.")
  List<String> states = new ArrayList<>();

  @Option(
      names = "--type",
      paramLabel = "<type>",
      split = ",",
      description = "Only these job types.")
  List<String> types = new ArrayList<>();

  @Option(
      names = "--queue",
      paramLabel = "<queue>",
      split = ",",
      description = "Only these queues.")
  List<String> queues = new ArrayList<>();

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

  @Option(
      names = "--json",
      description =
          "Print the page as JSON ({\"jobs\": [...], \"next_cursor\": ...}, names as in the HTTP API).")
  boolean json;

  @Override
  public Integer call() {
    JobFilter.Builder filter = JobFilter.builder();
    for (String state : states) {
      try {
        filter.state(JobState.parse(state));
      } catch (IllegalArgumentException e) {
        throw usage("invalid --state: " + e.getMessage());
      }
    }
    filter
        .type(types.toArray(String[]::new))
        .queue(queues.toArray(String[]::new))
        .limit(limit)
        .cursor(cursor);
    JobFilter built;
    try {
      built = filter.build();
    } catch (io.pgjobs.InvalidJobException e) {
      throw usage("invalid --" + e.field() + ": " + e.getMessage());
    }
    try (Database db = Database.open(settings(Map.of()), false, List.of())) {
      JobPage page = db.client().list(built);
      if (json) {
        out().println(JobFormat.json(page));
        return PgJobsCommand.OK;
      }
      if (page.jobs().isEmpty()) {
        out().println("no jobs");
      } else {
        JobFormat.table(out(), page.jobs());
      }
      if (page.nextCursor() != null) {
        out().println("next page: --cursor " + page.nextCursor());
      }
    }
    return PgJobsCommand.OK;
  }
}
