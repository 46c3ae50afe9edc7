package io.pgjobs.workflow;

import io.pgjobs.DiscardJobException;

/**
 * Ends an execution of a workflow run that reached a step, a sleep or a wait after its deadline
 * ({@link WorkflowType#withDeadline}): the steps that ended return their records, so their compensations
 * are registered, and the first one that has not run throws this instead; the compensations then run, the
 * last first, and the run's job ends {@code failed} with this message, without another attempt (a
 * {@link DiscardJobException}). A workflow should let it pass.
 */
public class WorkflowDeadlineException extends DiscardJobException {
  /** @param message which run, which deadline, and what it stopped */
  public WorkflowDeadlineException(String message) {
    super(message);
  }
}
