package io.pgjobs.cli.demo;

import io.pgjobs.PayloadValidator.FieldProblem;
import java.util.ArrayList;
import java.util.List;

/** Collects the problems of one payload, field by field, for the demo kinds' validators. */
final class PayloadProblems {
  private final List<FieldProblem> problems = new ArrayList<>();

  /** Adds a problem. */
  PayloadProblems add(String field, String reason) {
    problems.add(new FieldProblem(field, reason));
    return this;
  }

  /**
   * Checks a required text: present, not blank, at most {@code maxLength} characters, and (when
   * {@code singleLine}) without line breaks. Returns true when it passed.
   */
  boolean text(String field, String value, int maxLength, boolean singleLine) {
    if (value == null) {
      add(field, "is required");
      return false;
    }
    if (value.isBlank()) {
      add(field, "must not be blank");
      return false;
    }
    if (value.length() > maxLength) {
      add(field, "must be at most " + maxLength + " characters, was " + value.length());
      return false;
    }
    if (singleLine && (value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0)) {
      add(field, "must be a single line (no CR or LF)");
      return false;
    }
    return true;
  }

  /** Checks a required integer between {@code min} and {@code max}. */
  boolean range(String field, Integer value, int min, int max) {
    if (value == null) {
      add(field, "is required (an integer from " + min + " to " + max + ")");
      return false;
    }
    if (value < min || value > max) {
      add(field, "must be from " + min + " to " + max + ", was " + value);
      return false;
    }
    return true;
  }

  /** The problems found; empty when the payload is valid. */
  List<FieldProblem> list() {
    return List.copyOf(problems);
  }

  /** The problems of a missing payload. */
  static List<FieldProblem> missingPayload(String fields) {
    return List.of(new FieldProblem("payload", "is required: a JSON object with " + fields));
  }
}
