package io.pgjobs.bench.harness;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * The lines the independent harness (hardbyte/postgresql-job-queue-benchmarking) reads from an adapter's
 * stdout, as its CONTRIBUTING_ADAPTERS.md specifies: one descriptor at start, then one record per metric
 * per tick. Kept apart from the adapter's loops so that the format can be checked without a database.
 */
final class HarnessSamples {
  /** The system name the harness files our rows under; also {@code adapter.json}'s {@code system}. */
  static final String SYSTEM = "pgjobs";
  /** The database the harness creates for us; also {@code adapter.json}'s {@code db_name}. */
  static final String DB_NAME = "pgjobs_bench";
  /** The tables the harness's metrics daemon watches for bloat. */
  static final List<String> EVENT_TABLES = List.of("pgjobs.jobs", "pgjobs.finished_jobs");
  /** The rolling window of the latency percentiles, as the contract asks. */
  static final int LATENCY_WINDOW_S = 30;

  // The contract's timestamps carry milliseconds always ("2026-04-17T09:00:10.000Z");
  // Instant.toString drops them on a whole second.
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  private HarnessSamples() {}

  static String time(Instant t) {
    return TIME.format(t);
  }

  /** The startup descriptor line. */
  static String descriptor(String version, String schemaVersion, String dbName, Instant startedAt) {
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("kind", "descriptor");
    line.put("system", SYSTEM);
    line.put("event_tables", EVENT_TABLES);
    line.put("extensions", List.of());
    line.put("version", version);
    line.put("schema_version", schemaVersion);
    line.put("db_name", dbName);
    line.put("started_at", time(startedAt));
    return write(line);
  }

  /** One sample line: {@code metric} had {@code value} over the last {@code windowS} seconds at {@code t}. */
  static String sample(Instant t, String metric, double value, int windowS, int instanceId) {
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("t", time(t));
    line.put("system", SYSTEM);
    line.put("kind", "adapter");
    line.put("subject_kind", "adapter");
    line.put("subject", "");
    line.put("metric", metric);
    line.put("value", value);
    line.put("window_s", windowS);
    line.put("instance_id", instanceId);
    return write(line);
  }

  // Written by hand rather than with Jackson: the lines hold only strings, numbers and lists of
  // strings, and pgjobs-bench has no JSON library of its own (nor had the older builds it is
  // compiled into).
  private static String write(Map<String, Object> line) {
    StringBuilder json = new StringBuilder("{");
    line.forEach((key, value) -> {
      if (json.length() > 1) {
        json.append(',');
      }
      string(json, key).append(':');
      value(json, value);
    });
    return json.append('}').toString();
  }

  private static void value(StringBuilder json, Object value) {
    if (value == null) {
      json.append("null");
    } else if (value instanceof Double d) {
      // JSON has no NaN or infinity; a rate over a zero interval would be one.
      json.append(
          d.isNaN() || d.isInfinite()
              ? "0"
              : BigDecimal.valueOf(d).stripTrailingZeros().toPlainString());
    } else if (value instanceof Number n) {
      json.append(n);
    } else if (value instanceof List<?> list) {
      json.append('[');
      for (int i = 0; i < list.size(); i++) {
        if (i > 0) {
          json.append(',');
        }
        value(json, list.get(i));
      }
      json.append(']');
    } else {
      string(json, value.toString());
    }
  }

  private static StringBuilder string(StringBuilder json, String text) {
    json.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> json.append("\\\"");
        case '\\' -> json.append("\\\\");
        case '\n' -> json.append("\\n");
        case '\r' -> json.append("\\r");
        case '\t' -> json.append("\\t");
        default -> {
          if (c < 0x20) {
            json.append(String.format("\\u%04x", (int) c));
          } else {
            json.append(c);
          }
        }
      }
    }
    return json.append('"');
  }

  /**
   * Latencies in µs over the last {@code ticks} sample ticks, in bounded memory: one HdrHistogram (3
   * significant digits) per tick, the oldest dropped as a new one comes.
   */
  static final class RollingLatency {
    private final int ticks;
    private final Deque<Histogram> window = new ArrayDeque<>();

    RollingLatency(int ticks) {
      this.ticks = Math.max(1, ticks);
    }

    /** Adds the histogram of the tick that just ended (the caller hands over a copy it no longer uses). */
    void add(Histogram tick) {
      window.addLast(tick);
      while (window.size() > ticks) {
        window.removeFirst();
      }
    }

    /** The {@code percentile} (0-100) over the window in ms, 0 when nothing was recorded. */
    double percentileMs(double percentile) {
      Histogram sum = new Histogram(3);
      window.forEach(sum::add);
      return sum.getTotalCount() == 0 ? 0 : sum.getValueAtPercentile(percentile) / 1000.0;
    }
  }
}
