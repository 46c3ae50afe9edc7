package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobError;
import io.pgjobs.JobFilter;
import io.pgjobs.JobPage;
import io.pgjobs.JobState;
import io.pgjobs.RetryResult;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

/**
 * {@code /dead-letters}: failed jobs grouped by type and what their last error was (its exception class,
 * or its kind when it had none), newest failures first within a group. Messages are not part of the key:
 * "connection refused to 127.0.0.1:41213" and "…:41977" are one problem. Computed by reading failed jobs page by page, at most
 * {@value #MAX_SCANNED} of them (the newest).
 */
public final class DeadLettersApi {
  /** Most failed jobs read per request: {@value}. */
  static final int MAX_SCANNED = 10_000;
  /** Job ids listed per group: {@value}. */
  static final int SAMPLE_IDS = 5;

  private static final Set<String> RETRY_FIELDS =
      new java.util.LinkedHashSet<>(List.of("type", "error"));

  private final JobClient client;

  /** Serves {@code client}'s dead letters. */
  public DeadLettersApi(JobClient client) {
    this.client = client;
  }

  /** Registers the routes. */
  public void register(Routes routes) {
    routes.get("/dead-letters", this::deadLetters);
    routes.post("/dead-letters/retry", ctx -> retryGroup(ctx, routes));
  }

  /**
   * Queues again every failed job of one group (type and error class or kind) among the newest
   * {@value #MAX_SCANNED} failed jobs of that type; each gets a full set of attempts.
   */
  private Reply retryGroup(Context ctx, Routes routes) {
    JsonBody body = JsonBody.read(ctx, routes.json(), RETRY_FIELDS);
    String type = body.text("type", true, 255);
    String error = body.text("error", true, 100_000);
    body.done();
    List<UUID> ids = new ArrayList<>();
    String cursor = null;
    int scanned = 0;
    do {
      JobPage page = client.list(JobFilter.builder()
          .state(JobState.FAILED)
          .type(type)
          .limit(Math.min(JobFilter.MAX_LIMIT, MAX_SCANNED - scanned))
          .cursor(cursor)
          .build());
      for (Job job : page.jobs()) {
        if (groupError(job).equals(error)) {
          ids.add(job.id());
        }
      }
      scanned += page.jobs().size();
      cursor = page.nextCursor();
    } while (cursor != null && scanned < MAX_SCANNED);
    long retried = 0;
    for (UUID id : ids) {
      if (client.retry(id) == RetryResult.RETRIED) {
        retried++;
      }
    }
    return Reply.ok(new JobsApi.RetryCountsView(retried, false));
  }

  private Reply deadLetters(Context ctx) {
    List<String> types = QueryParams.list(ctx, "type");
    List<String> queues = QueryParams.list(ctx, "queue");
    Map<String, Group> groups = new LinkedHashMap<>();
    int scanned = 0;
    String cursor = null;
    boolean truncated = false;
    do {
      int limit = Math.min(JobFilter.MAX_LIMIT, MAX_SCANNED - scanned);
      JobPage page = client.list(JobFilter.builder()
          .state(JobState.FAILED)
          .type(types.toArray(String[]::new))
          .queue(queues.toArray(String[]::new))
          .limit(limit)
          .cursor(cursor)
          .build());
      for (Job job : page.jobs()) {
        String error = groupError(job);
        groups
            .computeIfAbsent(
                job.type() + "\u0000" + error,
                k -> new Group(job.type(), error, kind(job), firstLine(job)))
            .add(job);
      }
      scanned += page.jobs().size();
      cursor = page.nextCursor();
      if (cursor != null && scanned >= MAX_SCANNED) {
        truncated = true;
        break;
      }
    } while (cursor != null);
    List<DeadLetterGroupView> views = groups.values().stream()
        .sorted(
            Comparator.comparingLong((Group g) -> g.count).reversed().thenComparing(g -> g.type))
        .map(Group::view)
        .toList();
    return Reply.ok(new DeadLettersView(views, scanned, truncated));
  }

  /** The group key besides the type: the last error's exception class, else its kind. */
  static String groupError(Job job) {
    List<JobError> errors = job.errors();
    if (errors.isEmpty()) {
      return "(no error recorded)";
    }
    JobError last = errors.get(errors.size() - 1);
    if (last.errorClass() != null && !last.errorClass().isBlank()) {
      return last.errorClass();
    }
    return last.kind() == null ? "(no error recorded)" : last.kind();
  }

  private static String kind(Job job) {
    List<JobError> errors = job.errors();
    return errors.isEmpty() || errors.get(errors.size() - 1).kind() == null
        ? ""
        : errors.get(errors.size() - 1).kind();
  }

  private static String firstLine(Job job) {
    List<JobError> errors = job.errors();
    if (errors.isEmpty() || errors.get(errors.size() - 1).message() == null) {
      return "(no error recorded)";
    }
    String message = errors.get(errors.size() - 1).message().strip();
    int newline = message.indexOf('\n');
    String line = newline < 0 ? message : message.substring(0, newline).strip();
    return line.length() > 500 ? line.substring(0, 500) : line;
  }

  private static final class Group {
    final String type;
    final String error;
    final String kind;
    final String message;
    long count;
    Instant latest;
    final TreeSet<String> queues = new TreeSet<>();
    final List<UUID> sample = new ArrayList<>();

    Group(String type, String error, String kind, String message) {
      this.type = type;
      this.error = error;
      this.kind = kind;
      this.message = message;
    }

    void add(Job job) {
      count++;
      queues.add(job.queue());
      if (job.finishedAt() != null && (latest == null || job.finishedAt().isAfter(latest))) {
        latest = job.finishedAt();
      }
      if (sample.size() < SAMPLE_IDS) {
        sample.add(job.id());
      }
    }

    DeadLetterGroupView view() {
      return new DeadLetterGroupView(
          type, error, kind, message, count, List.copyOf(queues), latest, List.copyOf(sample));
    }
  }

  /**
   * Failed jobs of one type whose last error had the same exception class (or kind, without one).
   *
   * @param error the last error's exception class, or its kind when it had none
   * @param kind the last error's kind
   * @param message first line of the newest job's last error message, as an example
   * @param latestFailedAt when the newest of them failed
   * @param jobIds up to five of them, newest first
   */
  public record DeadLetterGroupView(
      String type,
      String error,
      String kind,
      String message,
      long count,
      List<String> queues,
      Instant latestFailedAt,
      List<UUID> jobIds) {}

  /**
   * The dead letters.
   *
   * @param scanned failed jobs read
   * @param truncated true when more failed jobs exist than were read
   */
  public record DeadLettersView(
      List<DeadLetterGroupView> groups, long scanned, boolean truncated) {}
}
