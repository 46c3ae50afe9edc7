package io.pgjobs.cli;

import io.pgjobs.Job;
import io.pgjobs.JobError;
import io.pgjobs.JobState;
import io.pgjobs.config.DurationText;
import io.pgjobs.server.ApiServer;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JsonGenerator;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.SerializationContext;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.module.SimpleModule;
import tools.jackson.databind.ser.std.StdSerializer;

/** How jobs look on the terminal: a table for lists, labelled lines for one job, or JSON. */
final class JobFormat {
  /**
   * JSON for {@code --json}: the HTTP API's representation ({@link ApiServer#jobJson}, snake_case names,
   * ISO instants), indented.
   */
  static final JsonMapper JSON = JsonMapper.builder()
      .enable(SerializationFeature.INDENT_OUTPUT)
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .disable(tools.jackson.databind.cfg.DateTimeFeature.WRITE_DATES_AS_TIMESTAMPS)
      .addModule(
          new SimpleModule("pgjobs-cli").addSerializer(JobState.class, new StateSerializer()))
      .build();

  private JobFormat() {}

  /** One job as {@code GET /jobs/{id}} answers it. */
  static String json(Job job) {
    return JSON.writeValueAsString(JSON.readTree(ApiServer.jobJson(job)));
  }

  /** A page as {@code GET /jobs} answers it: {@code {"jobs": [...], "next_cursor": ...}}. */
  static String json(io.pgjobs.JobPage page) {
    return JSON.writeValueAsString(JSON.readTree(ApiServer.jobPageJson(page)));
  }

  /** Writes states as the API and the database name them: {@code queued}, {@code running}, ... */
  private static final class StateSerializer extends StdSerializer<JobState> {
    StateSerializer() {
      super(JobState.class);
    }

    @Override
    public void serialize(JobState state, JsonGenerator gen, SerializationContext context) {
      gen.writeString(state.value());
    }
  }

  /** A table with one row per job. */
  static void table(PrintWriter out, List<Job> jobs) {
    List<String[]> rows = new ArrayList<>();
    rows.add(
        new String[] {"ID", "TYPE", "QUEUE", "STATE", "ATTEMPTS", "PRIORITY", "RUN AT", "CREATED"});
    for (Job job : jobs) {
      rows.add(new String[] {
        job.id().toString(),
        job.type(),
        job.queue(),
        state(job),
        job.attempts() + "/" + job.maxAttempts(),
        String.valueOf(job.priority()),
        String.valueOf(time(job.runAt())),
        String.valueOf(time(job.createdAt()))
      });
    }
    int[] widths = new int[rows.get(0).length];
    for (String[] row : rows) {
      for (int i = 0; i < row.length; i++) {
        widths[i] = Math.max(widths[i], row[i].length());
      }
    }
    for (String[] row : rows) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < row.length; i++) {
        line.append(i == row.length - 1 ? row[i] : String.format("%-" + widths[i] + "s  ", row[i]));
      }
      out.println(line.toString().stripTrailing());
    }
  }

  /** Every field of one job, one per line. */
  static void details(PrintWriter out, Job job) {
    line(out, "id", job.id().toString());
    line(out, "type", job.type());
    line(out, "queue", job.queue());
    line(out, "state", state(job) + (job.cancelRequested() ? " (cancellation requested)" : ""));
    line(out, "priority", String.valueOf(job.priority()));
    line(out, "attempts", job.attempts() + " of " + job.maxAttempts());
    line(out, "run at", time(job.runAt()));
    line(out, "created at", time(job.createdAt()));
    line(out, "attempted at", time(job.attemptedAt()));
    line(out, "finished at", time(job.finishedAt()));
    line(out, "worker", job.lockedBy());
    line(out, "heartbeat at", time(job.heartbeatAt()));
    line(out, "timeout", job.timeout() == null ? null : DurationText.format(job.timeout()));
    line(out, "context", job.context());
    line(out, "idempotency key", job.idempotencyKey());
    if (job.progressPercent() != null) {
      line(
          out,
          "progress",
          job.progressPercent() + "%"
              + (job.progressMessage() == null ? "" : " " + job.progressMessage()));
    }
    line(out, "payload", job.payload() == null ? null : job.payload().toString());
    line(out, "output", job.output() == null ? null : job.output().toString());
    if (!job.errors().isEmpty()) {
      out.println("errors:");
      for (JobError error : job.errors()) {
        out.println(
            "  attempt " + error.attempt() + " at " + time(error.at()) + " (" + error.kind() + ")"
                + (error.worker() == null ? "" : " on " + error.worker()) + ": "
                + (error.errorClass() == null ? "" : error.errorClass() + ": ") + error.message());
        if (error.cause() != null) {
          error.cause().lines().forEach(cause -> out.println("    caused by " + cause));
        }
      }
    }
  }

  /** The state, with "scheduled" for a queued job due in the future. */
  static String state(Job job) {
    return job.isScheduled()
        ? job.state().value() + " (scheduled)"
        : job.state().value();
  }

  private static void line(PrintWriter out, String label, String value) {
    if (value != null) {
      out.println(String.format("%-16s %s", label + ":", value));
    }
  }

  private static String time(Instant instant) {
    return instant == null ? null : instant.truncatedTo(ChronoUnit.MILLIS).toString();
  }
}
