package io.pgjobs;

import io.pgjobs.json.PayloadCodec;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * The unique key of a job ({@link UniqueOptions}) before its period is applied: a SHA-256 of a versioned
 * text naming the type, the queue if it counts, the chosen part of the payload as canonical JSON, the
 * period's length (so that two rules with other periods never share a key) and, when the rule counts
 * finished states, those states. The store appends the period
 * the enqueue falls in and hashes again (see {@code EnqueueSql.INSERT_UNIQUE}).
 */
final class UniqueKeys {
  private UniqueKeys() {}

  /**
   * The base key of a job of {@code type} in {@code queue} with {@code payloadJson}.
   *
   * @throws InvalidJobException naming a listed field the payload does not have (or has as null)
   */
  static byte[] base(String type, String queue, String payloadJson, UniqueOptions u) {
    StringBuilder b = new StringBuilder(128);
    b.append("pgjobs-unique-v1\n").append(type).append('\n');
    b.append(u.byQueue() ? "q:" + queue : "-").append('\n');
    if (u.byArgs() || !u.byFields().isEmpty()) {
      JsonNode root;
      try {
        root = PayloadCodec.DEFAULT_MAPPER.readTree(payloadJson);
      } catch (JacksonException e) {
        throw new InvalidJobException("payload", "is not JSON: " + e.getOriginalMessage(), e);
      }
      if (u.byArgs()) {
        b.append("args:");
        IdempotencyFingerprint.canonical(root, b);
      } else {
        b.append("fields:");
        for (String field : u.byFields()) {
          JsonNode value = IdempotencyKeys.fieldOf(root, field);
          if (value.isMissingNode() || value.isNull()) {
            throw new InvalidJobException(
                "payload",
                "has no field '" + field + "', which job type '" + type + "' is unique by");
          }
          b.append(PayloadCodec.DEFAULT_MAPPER.writeValueAsString(field)).append('=');
          IdempotencyFingerprint.canonical(value, b);
          b.append(';');
        }
      }
    } else {
      b.append('-');
    }
    b.append('\n').append(u.period() == null ? "-" : Long.toString(u.period().toMillis()));
    if (!u.finishedStates().isEmpty()) {
      // Only for sets with finished states: default keys are left without it, so the two kinds of
      // rule (the hot table's unique index versus the unique_keys table) never share a key.
      b.append("\nstates:")
          .append(
              String.join(",", u.finishedStates().stream().map(JobState::value).toList()));
    }
    try {
      return MessageDigest.getInstance("SHA-256")
          .digest(b.toString().getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }
}
