package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.QueueLimits;
import io.pgjobs.QueueLimitsStatus;
import io.pgjobs.config.DurationText;
import io.pgjobs.server.problem.ApiProblem;
import io.pgjobs.server.problem.Problem.FieldError;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A queue's limits ({@link QueueLimits}) as the API reads them from a {@code PUT /queues/{name}/limits} body
 * and writes them in {@code GET /queues} and {@code /queues/{name}/limits}. Durations are written as the
 * rest of the API writes them ({@code 1s}, {@code 250ms}, {@code 1m}).
 */
public final class LimitsJson {
  /** The members of a limits body, in the order problems list them. */
  static final Set<String> FIELDS = new LinkedHashSet<>(List.of(
      "global_concurrency", "rate", "partition_by", "partition_concurrency", "partition_rate"));

  /** The members of a rate. */
  static final Set<String> RATE_FIELDS = new LinkedHashSet<>(List.of("limit", "period", "burst"));

  /** Longest {@code partition_by} read before it is refused (the rule allows far less). */
  private static final int MAX_RULE_LENGTH = 1000;

  private LimitsJson() {}

  /**
   * The limits in the body of {@code ctx}, every problem reported at once and nothing stored before this
   * returned: 400 for a member of the wrong JSON type or an unknown member (also inside a rate), 422 for a
   * value out of its range, partition limits without {@code partition_by}, and a body that sets no limit
   * ({@code DELETE} removes them).
   *
   * @param queue the queue, for the message of an empty body
   */
  static QueueLimits read(Context ctx, JsonMapper json, String queue) {
    JsonBody body = JsonBody.read(ctx, json, FIELDS);
    Long global = body.integer("global_concurrency", 1, QueueLimits.MAX_CONCURRENCY);
    QueueLimits.Rate rate = rate(body, "rate");
    String partitionBy = body.text("partition_by", false, MAX_RULE_LENGTH);
    if (partitionBy != null) {
      try {
        QueueLimits.checkPartitionBy(partitionBy);
      } catch (IllegalArgumentException e) {
        body.reject("partition_by", withoutName("partition_by", e.getMessage()));
        partitionBy = null;
      }
    }
    Long partitionConcurrency =
        body.integer("partition_concurrency", 1, QueueLimits.MAX_CONCURRENCY);
    QueueLimits.Rate partitionRate = rate(body, "partition_rate");
    boolean anySet = FIELDS.stream().anyMatch(f -> body.any(f, false) != null);
    if (!anySet) {
      body.reject(
          "body",
          "give at least one limit (" + String.join(", ", FIELDS) + "), or DELETE /queues/" + queue
              + "/limits to remove them");
    }
    if (body.any("partition_by", false) == null
        && (body.any("partition_concurrency", false) != null
            || body.any("partition_rate", false) != null)) {
      // Per-partition limits need to know what a job's partition is.
      body.reject(
          "partition_by",
          "is required with partition_concurrency or partition_rate: 'type' (the job's type),"
              + " 'partition' (the key given at enqueue) or 'input.<field>' (a payload field)");
    }
    body.done();
    try {
      return new QueueLimits(
          global == null ? null : global.intValue(),
          rate,
          partitionBy,
          partitionConcurrency == null ? null : partitionConcurrency.intValue(),
          partitionRate);
    } catch (IllegalArgumentException e) {
      // Every rule QueueLimits applies was checked above; this is a rule added there since.
      throw ApiProblem.validation(e.getMessage(), List.of(new FieldError("body", e.getMessage())));
    }
  }

  /** The rate in member {@code field} ({@code {limit, period, burst?}}), or null when absent or invalid. */
  private static QueueLimits.Rate rate(JsonBody body, String field) {
    JsonNode value = body.any(field, false);
    if (value == null) {
      return null;
    }
    if (!value.isObject()) {
      body.malformed(
          field, "must be an object {limit, period, burst?}, was " + JsonBody.kind(value));
      return null;
    }
    boolean ok = true;
    for (String name : value.propertyNames()) {
      if (!RATE_FIELDS.contains(name)) {
        body.malformed(
            field + "." + name, "unknown field; allowed: " + String.join(", ", RATE_FIELDS));
        ok = false;
      }
    }
    JsonNode limitNode = value.get("limit");
    Long limit = null;
    if (limitNode == null || limitNode.isNull()) {
      body.reject(field + ".limit", "is required: starts per period, 1 to " + QueueLimits.MAX_RATE);
    } else {
      limit = body.integer(field + ".limit", limitNode, 1, QueueLimits.MAX_RATE);
    }
    String periodText = body.text(field + ".period", value.get("period"), true, 100);
    Duration period = periodText == null ? null : period(body, field + ".period", periodText);
    JsonNode burstNode = value.get("burst");
    Long burst = body.integer(field + ".burst", burstNode, 1, QueueLimits.MAX_RATE);
    boolean burstRefused = burstNode != null && !burstNode.isNull() && burst == null;
    if (!ok || limit == null || period == null || burstRefused) {
      return null;
    }
    return burst == null
        ? QueueLimits.Rate.of(limit.intValue(), period)
        : new QueueLimits.Rate(limit.intValue(), period, burst.intValue());
  }

  /** A rate's period: a duration ({@code 1s}, {@code 250ms}, {@code 1m}) of whole milliseconds, 1 ms to 24 h. */
  private static Duration period(JsonBody body, String field, String text) {
    Duration period;
    try {
      period = DurationText.parse(text);
    } catch (IllegalArgumentException e) {
      body.reject(
          field, "must be a duration from 1ms to 24h (250ms, 1s, 1m, 1h), was '" + text + "'");
      return null;
    }
    if (period.compareTo(QueueLimits.MIN_PERIOD) < 0
        || period.compareTo(QueueLimits.MAX_PERIOD) > 0
        || period.toNanos() % 1_000_000 != 0) {
      body.reject(field, "must be whole milliseconds from 1ms to 24h, was '" + text + "'");
      return null;
    }
    return period;
  }

  /** {@code message} without its leading {@code name } (the problem names the field already). */
  private static String withoutName(String name, String message) {
    return message.startsWith(name + " ") ? message.substring(name.length() + 1) : message;
  }

  // ---------------------------------------------------------------- views

  /**
   * A queue's limits and their usage now.
   *
   * @param globalConcurrency most of its jobs running at once in the fleet, or null
   * @param rate most of its jobs started per period, or null
   * @param partitionBy what a job's partition is, or null
   * @param partitionConcurrency most jobs of one partition running at once, or null
   * @param partitionRate most jobs of one partition started per period, or null
   * @param source {@code api} (set at run time) or {@code code} (a worker's declaration)
   * @param updatedAt when they were last set
   * @param usage what they hold back now
   */
  public record LimitsView(
      Integer globalConcurrency,
      RateView rate,
      String partitionBy,
      Integer partitionConcurrency,
      RateView partitionRate,
      String source,
      Instant updatedAt,
      UsageView usage) {
    static LimitsView of(QueueLimitsStatus s) {
      QueueLimits l = s.limits();
      return new LimitsView(
          l.globalConcurrency(),
          RateView.of(l.rate()),
          l.partitionBy(),
          l.partitionConcurrency(),
          RateView.of(l.partitionRate()),
          s.source(),
          s.updatedAt(),
          new UsageView(
              s.running(),
              s.waiting(),
              s.nextStart(),
              s.waitingFor(),
              s.partitions().stream()
                  .map(p -> new PartitionView(
                      p.partition(), p.running(), p.waiting(), p.nextStart(), p.waitingFor()))
                  .toList()));
    }
  }

  /**
   * A rate limit.
   *
   * @param limit starts per period
   * @param period the period ({@code 1s}, {@code 1m})
   * @param burst starts allowed at once after a quiet spell
   */
  public record RateView(int limit, String period, int burst) {
    static RateView of(QueueLimits.Rate rate) {
      return rate == null
          ? null
          : new RateView(rate.limit(), DurationText.format(rate.period()), rate.burst());
    }
  }

  /**
   * What a queue's limits hold back now.
   *
   * @param running its jobs running now
   * @param waiting its due jobs waiting to start
   * @param nextStart when its rate allows the next start, or null if now
   * @param waitingFor why due jobs wait ({@code at_global_limit}, {@code rate_limited},
   *     {@code partitions_busy}), or null
   * @param partitions the busiest partitions (at most 50), busiest first
   */
  public record UsageView(
      long running,
      long waiting,
      Instant nextStart,
      String waitingFor,
      List<PartitionView> partitions) {}

  /**
   * One partition's usage.
   *
   * @param waitingFor {@code partition_busy}, {@code rate_limited}, or null
   */
  public record PartitionView(
      String partition, long running, long waiting, Instant nextStart, String waitingFor) {}
}
