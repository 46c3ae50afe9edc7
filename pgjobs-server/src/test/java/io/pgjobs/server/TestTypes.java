package io.pgjobs.server;

import io.pgjobs.JobType;
import io.pgjobs.PayloadValidator.FieldProblem;
import java.util.ArrayList;
import java.util.List;

/** Job types the tests' servers know. */
final class TestTypes {
  private TestTypes() {}

  /** A payload with a validator: {@code to} must be an e-mail address, {@code subject} is required. */
  record SendEmail(String to, String subject) {}

  /** A payload for jobs whose handler the test controls. */
  record Task(String note) {}

  static final JobType<SendEmail> SEND_EMAIL = JobType.of("send_email", SendEmail.class)
      .withValidator(email -> {
        List<FieldProblem> problems = new ArrayList<>();
        if (email.to() == null || !email.to().contains("@")) {
          problems.add(new FieldProblem("to", "must be an e-mail address"));
        }
        if (email.subject() == null || email.subject().isBlank()) {
          problems.add(new FieldProblem("subject", "is required"));
        }
        return problems;
      });

  static final JobType<Task> TASK = JobType.of("task", Task.class);

  /** A payment: its payment_id is its idempotency key. */
  record Charge(String payment_id, long cents) {}

  static final JobType<Charge> CHARGE =
      JobType.of("charge", Charge.class).withIdempotencyKeyFrom("payment_id");

  /** A type whose validator fails with an internal error, to see that such errors are not echoed. */
  static final JobType<Task> EXPLOSIVE = JobType.of("explosive", Task.class).withValidator(task -> {
    throw new IllegalStateException("secret internals: password=hunter2");
  });
}
