package io.pgjobs;

import java.util.List;
import java.util.stream.Collectors;

/**
 * A payload does not fit its job type: it failed the type's {@link PayloadValidator}, or (when
 * {@link #malformed()}) its JSON does not have the shape of the type's payload class (a member of
 * the wrong JSON type, or one the class does not have). Nothing was stored.
 */
public class InvalidPayloadException extends InvalidJobException {
  private final List<PayloadValidator.FieldProblem> problems;
  private final boolean malformed;

  /** A payload that failed its validator; {@code problems} has at least one. */
  public InvalidPayloadException(String type, List<PayloadValidator.FieldProblem> problems) {
    this(type, problems, false);
  }

  /**
   * @param problems at least one
   * @param malformed true if the JSON does not have the payload class's shape, false if a validator
   *     rejected a value
   */
  public InvalidPayloadException(
      String type, List<PayloadValidator.FieldProblem> problems, boolean malformed) {
    super(
        "payload",
        (malformed ? "does not fit job type '" : "invalid for job type '") + type + "': "
            + problems.stream()
                .map(p -> p.field() + " " + p.reason())
                .collect(Collectors.joining("; ")));
    this.problems = List.copyOf(problems);
    this.malformed = malformed;
  }

  /** True if the JSON does not have the payload class's shape (rather than failing its validator). */
  public boolean malformed() {
    return malformed;
  }

  /** Every problem found. */
  public List<PayloadValidator.FieldProblem> problems() {
    return problems;
  }
}
