package io.pgjobs;

import java.util.List;

/**
 * Checks a payload before it is stored, beyond what its class's shape says (required fields, ranges,
 * formats). Declared on a {@link JobType} with {@link JobType#withValidator}; enqueue (by type or by
 * name, and the HTTP API) rejects a payload with problems with an {@link InvalidPayloadException}
 * listing them, and stores nothing.
 *
 * <pre>{@code
 * JobType.of("send_email", SendEmail.class).withValidator(email ->
 *     email.to() == null || !email.to().contains("@")
 *         ? List.of(new FieldProblem("to", "must be an e-mail address")) : List.of());
 * }</pre>
 *
 * @param <P> the payload type
 */
@FunctionalInterface
public interface PayloadValidator<P> {
  /** The problems of {@code payload}; empty when it is valid. */
  List<FieldProblem> validate(P payload);

  /**
   * One problem with one field.
   *
   * @param field the field's name, dotted for nested fields ({@code payload.to})
   * @param reason what is wrong and what is allowed
   */
  record FieldProblem(String field, String reason) {}
}
