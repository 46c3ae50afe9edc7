package io.pgjobs;

import io.pgjobs.json.PayloadCodec;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import tools.jackson.databind.JsonNode;

/**
 * What an enqueue under an idempotency key asked for, as a SHA-256 hex string stored with the key. Two
 * requests have the same fingerprint when they have the same job type, the same payload (compared as
 * canonical JSON: object members sorted, no white space, so member order does not matter) and the
 * same options as the caller gave them: queue, priority, max attempts, run_at or delay, timeout.
 * Options the caller left out are compared as left out, not as the type's defaults, so a deploy that
 * changes a default does not turn a genuine retry into a conflict. The context is not part of it: it is
 * free text for debugging, and a retry may well carry another request id in it.
 */
final class IdempotencyFingerprint {
  private IdempotencyFingerprint() {}

  static String of(String type, String payloadJson, EnqueueOptions o) {
    StringBuilder b = new StringBuilder();
    b.append("v1\n").append(type).append('\n');
    canonical(PayloadCodec.DEFAULT_MAPPER.readTree(payloadJson), b);
    b.append('\n')
        .append(o.queue())
        .append('\n')
        .append(o.priority())
        .append('\n')
        .append(o.maxAttempts())
        .append('\n')
        .append(o.runAt())
        .append('\n')
        .append(o.delay() == null ? null : o.delay().toMillis())
        .append('\n')
        .append(o.timeout() == null ? null : o.timeout().toMillis());
    return sha256(b.toString());
  }

  /** The SHA-256 of {@code text} (UTF-8), in hex: a graph's fingerprint is that of its jobs' ones. */
  static String sha256(String text) {
    try {
      byte[] hash =
          MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(hash);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }

  /** Writes {@code node} as JSON with object members sorted by name. */
  static void canonical(JsonNode node, StringBuilder b) {
    if (node.isObject()) {
      List<String> names = new ArrayList<>(node.propertyNames());
      names.sort(null);
      b.append('{');
      for (int i = 0; i < names.size(); i++) {
        if (i > 0) {
          b.append(',');
        }
        b.append(PayloadCodec.DEFAULT_MAPPER.writeValueAsString(names.get(i))).append(':');
        canonical(node.get(names.get(i)), b);
      }
      b.append('}');
    } else if (node.isArray()) {
      b.append('[');
      for (int i = 0; i < node.size(); i++) {
        if (i > 0) {
          b.append(',');
        }
        canonical(node.get(i), b);
      }
      b.append(']');
    } else {
      b.append(node.toString());
    }
  }
}
