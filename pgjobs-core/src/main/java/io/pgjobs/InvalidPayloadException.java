package io.pgjobs;

import java.util.List;
import java.util.stream.Collectors;

/** A payload failed its type's {@link PayloadValidator}: nothing was stored. */
public class InvalidPayloadException extends InvalidJobException {
  private final List<PayloadValidator.FieldProblem> problems;

  /** @param problems at least one */
  public InvalidPayloadException(String type, List<PayloadValidator.FieldProblem> problems) {
    super("payload", "invalid for job type '" + type + "': "
        + problems.stream().map(p -> p.field() + " " + p.reason()).collect(Collectors.joining("; ")));
    this.problems = List.copyOf(problems);
  }

  /** Every problem found. */
  public List<PayloadValidator.FieldProblem> problems() {
    return problems;
  }
}
