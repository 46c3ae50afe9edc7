package io.pgjobs.server.api;

import io.pgjobs.InvalidJobException;
import io.pgjobs.JobState;
import io.pgjobs.UniqueOptions;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import tools.jackson.databind.JsonNode;

/**
 * The {@code unique} object of an enqueue request ({@link UniqueOptions}):
 *
 * <pre>{@code
 * "unique": {"by_args": ["customer_id"], "by_queue": false, "period": "PT10M", "replace": ["run_at"],
 *            "states": ["queued", "running", "retrying", "succeeded"]}
 * }</pre>
 *
 * {@code by_args} is {@code true} (the whole payload) or an array of payload field names / JSON pointers;
 * {@code period} is seconds (an integer) or an ISO-8601 duration; {@code replace} lists {@code run_at}
 * and/or {@code payload}; {@code states} lists the states in which an existing job counts (every
 * unfinished one, plus any finished ones). Problems are recorded on the body under {@code unique.<member>}.
 */
final class UniqueJson {
  static final Set<String> MEMBERS =
      new LinkedHashSet<>(List.of("by_args", "by_queue", "period", "replace", "states"));

  private UniqueJson() {}

  /** The rule in member {@code unique} of {@code body}, or null when absent (or when it has problems). */
  static UniqueOptions read(JsonBody body) {
    JsonNode u = body.any("unique", false);
    if (u == null) {
      return null;
    }
    if (!u.isObject()) {
      body.malformed(
          "unique",
          "must be an object with by_args, by_queue, period, replace, states; was "
              + JsonBody.kind(u));
      return null;
    }
    boolean ok = true;
    for (String name : u.propertyNames()) {
      if (!MEMBERS.contains(name)) {
        body.malformed("unique." + name, "unknown field; allowed: " + String.join(", ", MEMBERS));
        ok = false;
      }
    }
    UniqueOptions.Builder b = UniqueOptions.builder();
    JsonNode byArgs = u.get("by_args");
    if (byArgs != null && !byArgs.isNull()) {
      if (byArgs.isBoolean()) {
        if (byArgs.asBoolean()) {
          b.byArgs();
        }
      } else if (byArgs.isArray()) {
        List<String> fields = new ArrayList<>();
        for (int i = 0; i < byArgs.size(); i++) {
          JsonNode f = byArgs.get(i);
          if (!f.isString()) {
            body.malformed(
                "unique.by_args[" + i + "]", "must be a string, was " + JsonBody.kind(f));
            ok = false;
          } else {
            fields.add(f.asString());
          }
        }
        if (byArgs.isEmpty()) {
          body.reject(
              "unique.by_args",
              "lists no field; give true for the whole payload or at least one field");
          ok = false;
        }
        b.byFields(fields.toArray(String[]::new));
      } else {
        body.malformed(
            "unique.by_args",
            "must be true, false or an array of field names, was " + JsonBody.kind(byArgs));
        ok = false;
      }
    }
    JsonNode byQueue = u.get("by_queue");
    if (byQueue != null && !byQueue.isNull()) {
      if (!byQueue.isBoolean()) {
        body.malformed("unique.by_queue", "must be true or false, was " + JsonBody.kind(byQueue));
        ok = false;
      } else if (byQueue.asBoolean()) {
        b.byQueue();
      }
    }
    JsonNode period = u.get("period");
    if (period != null && !period.isNull()) {
      Duration d = null;
      if (period.isIntegralNumber() && period.canConvertToLong()) {
        d = Duration.ofSeconds(period.asLong());
      } else if (period.isString()) {
        try {
          d = Duration.parse(period.asString());
        } catch (DateTimeParseException e) {
          body.reject(
              "unique.period",
              "must be seconds (an integer) or an ISO-8601 duration such as PT1H, was '"
                  + period.asString() + "'");
          ok = false;
        }
      } else {
        body.malformed(
            "unique.period",
            "must be seconds (an integer) or an ISO-8601 duration string, was "
                + JsonBody.kind(period));
        ok = false;
      }
      if (d != null) {
        b.period(d);
      }
    }
    JsonNode replace = u.get("replace");
    if (replace != null && !replace.isNull()) {
      if (!replace.isArray()) {
        body.malformed(
            "unique.replace", "must be an array of run_at, payload; was " + JsonBody.kind(replace));
        ok = false;
      } else {
        for (int i = 0; i < replace.size(); i++) {
          JsonNode r = replace.get(i);
          if (!r.isString()) {
            body.malformed(
                "unique.replace[" + i + "]", "must be a string, was " + JsonBody.kind(r));
            ok = false;
            continue;
          }
          try {
            b.replace(UniqueOptions.Replace.parse(r.asString()));
          } catch (InvalidJobException e) {
            body.reject(
                "unique.replace[" + i + "]",
                "unknown value '" + r.asString() + "'; allowed: run_at, payload");
            ok = false;
          }
        }
      }
    }
    JsonNode states = u.get("states");
    if (states != null && !states.isNull()) {
      if (!states.isArray()) {
        body.malformed(
            "unique.states", "must be an array of job states; was " + JsonBody.kind(states));
        ok = false;
      } else {
        for (int i = 0; i < states.size(); i++) {
          JsonNode st = states.get(i);
          if (!st.isString()) {
            body.malformed(
                "unique.states[" + i + "]", "must be a string, was " + JsonBody.kind(st));
            ok = false;
            continue;
          }
          try {
            b.states(JobState.parse(st.asString()));
          } catch (IllegalArgumentException e) {
            // Names other queues use: a scheduled job is a queued one with a future run_at, a
            // discarded one failed.
            body.reject(
                "unique.states[" + i + "]",
                "unknown state '" + st.asString() + "'; allowed: "
                    + JobState.allowedValues()
                    + " (a scheduled job is queued with a later run_at; a discarded one is failed)");
            ok = false;
          }
        }
      }
    }
    if (!ok) {
      return null;
    }
    try {
      return b.build();
    } catch (InvalidJobException e) {
      String field =
          e.field().replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase(java.util.Locale.ROOT);
      body.reject(field, e.getMessage().substring(e.field().length() + 2));
      return null;
    }
  }
}
