package io.pgjobs;

import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Idempotency keys taken from a payload field ({@link JobType#withIdempotencyKeyFrom}). */
final class IdempotencyKeys {
  private static final Pattern FIELD =
      Pattern.compile("[A-Za-z_][A-Za-z0-9_.\\-]{0,99}|(/[^/]{1,100}){1,10}");
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private IdempotencyKeys() {}

  /** A field name ({@code payment_id}) or a JSON pointer ({@code /input/payment_id}). */
  static String requireField(String field) {
    return requireField("idempotencyKey", field);
  }

  /** Same, reporting a bad name under {@code option}. */
  static String requireField(String option, String field) {
    if (!FIELD.matcher(field).matches()) {
      throw new InvalidJobException(
          option,
          "the payload field '" + field + "' is neither a field name"
              + " (letters, digits, _ . -) nor a JSON pointer (/a/b)");
    }
    return field;
  }

  /** The value of a field name or JSON pointer in {@code root}: missing node if absent. */
  static JsonNode fieldOf(JsonNode root, String field) {
    return field.startsWith("/") ? root.at(field) : root.path(field);
  }

  /**
   * The key of a job of {@code type} with {@code payloadJson}: {@code <type>:<value of the field>}.
   *
   * @throws InvalidJobException naming the field when the payload has none (or it is null), or when the
   *     key would be longer than 255 characters
   */
  static String fromPayload(String type, String field, String payloadJson) {
    JsonNode root;
    try {
      root = JSON.readTree(payloadJson);
    } catch (JacksonException e) {
      throw new InvalidJobException("payload", "is not JSON: " + e.getOriginalMessage(), e);
    }
    JsonNode value = fieldOf(root, field);
    if (value.isMissingNode() || value.isNull()) {
      throw new InvalidJobException(
          "payload",
          "has no field '" + field + "', which job type '" + type
              + "' takes its idempotency key from");
    }
    String text = value.isValueNode() ? value.asString() : JSON.writeValueAsString(value);
    String key = type + ":" + text;
    if (key.length() > 255) {
      throw new InvalidJobException(
          "payload",
          "field '" + field + "' makes an idempotency key of " + key.length()
              + " characters; at most 255 (with the type's name and a colon) are allowed");
    }
    return key;
  }
}
