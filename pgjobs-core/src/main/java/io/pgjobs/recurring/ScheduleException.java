package io.pgjobs.recurring;

import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.PgJobsException;
import java.util.List;

/**
 * A run-time change of a recurring schedule ({@link RecurringSchedules}) that was refused; nothing was
 * stored. {@link #kind()} says why; {@link #problems()} lists every rejected field of an invalid one.
 */
public final class ScheduleException extends PgJobsException {
  /** Why the change was refused. */
  public enum Kind {
    /** Some fields are not allowed (see {@link #problems()}). */
    INVALID,
    /** No schedule has that name. */
    NOT_FOUND,
    /** A schedule of that name exists already (adding). */
    ALREADY_EXISTS,
    /**
     * The schedule is declared in code ({@code JobWorker.Builder.recurring}): its definition belongs to the
     * code, which would put it back at the next worker start, so it cannot be edited or removed at run time
     * (it can be paused, resumed and run now).
     */
    DECLARED_IN_CODE
  }

  private final Kind kind;
  private final String name;
  private final List<FieldProblem> problems;

  ScheduleException(Kind kind, String name, String message, List<FieldProblem> problems) {
    super(message);
    this.kind = kind;
    this.name = name;
    this.problems = List.copyOf(problems);
  }

  static ScheduleException invalid(String name, List<FieldProblem> problems) {
    return new ScheduleException(
        Kind.INVALID,
        name,
        String.join(
            "; ", problems.stream().map(p -> p.field() + ": " + p.reason()).toList()),
        problems);
  }

  static ScheduleException notFound(String name) {
    return new ScheduleException(
        Kind.NOT_FOUND, name, "no recurring schedule named '" + name + "'", List.of());
  }

  static ScheduleException exists(String name) {
    return new ScheduleException(
        Kind.ALREADY_EXISTS,
        name,
        "a recurring schedule named '" + name
            + "' exists already; change it with update (PUT /recurring/" + name
            + ") or choose another name",
        List.of());
  }

  static ScheduleException declaredInCode(String name, String what) {
    return new ScheduleException(
        Kind.DECLARED_IN_CODE,
        name,
        "recurring schedule '" + name + "' is declared in code"
            + " (JobWorker.Builder.recurring) and cannot be " + what
            + " at run time: change or remove it in the code;"
            + " it can be paused, resumed and run now",
        List.of());
  }

  /** Why the change was refused. */
  public Kind kind() {
    return kind;
  }

  /** The schedule's name as given. */
  public String name() {
    return name;
  }

  /**
   * With {@link Kind#INVALID}: one entry per rejected field, named as in the HTTP API ({@code name},
   * {@code cron}, {@code zone}, {@code type}, {@code payload} or {@code payload.<field>}, {@code queue},
   * {@code priority}, {@code max_attempts}, {@code missed}, {@code catch_up}); else empty.
   */
  public List<FieldProblem> problems() {
    return problems;
  }
}
