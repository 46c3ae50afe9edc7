package io.pgjobs;

import io.pgjobs.store.LimitsStore;
import io.pgjobs.store.NewJob;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The partition rules of the partitioned queues ({@link QueueLimits#partitionBy()}), as a client keys the
 * jobs it enqueues: read from the database at most once per {@link #MAX_AGE_NANOS}, so an enqueue pays a map
 * lookup. A rule set meanwhile reaches this client within that time; the limited claim keys the waiting
 * jobs a stale client left without one (claim_limited, V2__flow_control.sql).
 */
final class PartitionRules {
  /** How long the rules read are used before they are read again: 1 s. */
  static final long MAX_AGE_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final LimitsStore store;
  private final JsonMapper mapper;
  private volatile Map<String, String> rules = Map.of();
  private volatile long readAt;
  private volatile boolean read;

  PartitionRules(LimitsStore store, JsonMapper mapper) {
    this.store = store;
    this.mapper = mapper;
  }

  /** {@code job} with its partition key: the one given at enqueue, else its queue's rule's, else none. */
  NewJob keyed(NewJob job, Connection connection) throws SQLException {
    if (job.limitKey() != null) {
      return job;
    }
    String rule = rules(connection).get(job.queue());
    return rule == null ? job : job.withLimitKey(keyOf(rule, job.type(), job.payloadJson()));
  }

  /** {@link #keyed} for each job. */
  List<NewJob> keyed(List<NewJob> jobs, Connection connection) throws SQLException {
    if (jobs.isEmpty()) {
      return jobs;
    }
    Map<String, String> current = rules(connection);
    if (current.isEmpty()) {
      return jobs;
    }
    java.util.function.UnaryOperator<NewJob> keyed = j -> {
      String rule = j.limitKey() == null ? current.get(j.queue()) : null;
      return rule == null ? j : j.withLimitKey(keyOf(rule, j.type(), j.payloadJson()));
    };
    // Streamed jobs are keyed as the COPY reads them, like the rest of their making.
    return jobs instanceof io.pgjobs.store.StreamedJobs streamed
        ? streamed.map(keyed)
        : jobs.stream().map(keyed).toList();
  }

  /**
   * A job's key under {@code rule}, as SQL's {@code partition_key} computes it: the type, or the payload
   * field as text (a string without quotes, a number or boolean as written); {@code ""} when the field is
   * missing or null, or the rule takes only keys given at enqueue. At most 255 characters.
   */
  String keyOf(String rule, String type, String payloadJson) {
    String key;
    if (rule.equals("type")) {
      key = type;
    } else if (rule.startsWith("input.")) {
      JsonNode node = mapper.readTree(payloadJson);
      for (String field : rule.substring("input.".length()).split("\\.")) {
        node = node == null || !node.isObject() ? null : node.get(field);
      }
      key = node == null || node.isNull()
          ? ""
          : node.isValueNode() ? node.asString() : node.toString();
    } else {
      key = "";
    }
    return key.length() > 255 ? key.substring(0, 255) : key;
  }

  /** Reads the rules again at the next enqueue (this client changed them). */
  void forget() {
    read = false;
  }

  private Map<String, String> rules(Connection connection) throws SQLException {
    long now = System.nanoTime();
    if (!read || now - readAt > MAX_AGE_NANOS) {
      rules = connection == null ? store.partitionRules() : store.partitionRules(connection);
      readAt = now;
      read = true;
    }
    return rules;
  }
}
