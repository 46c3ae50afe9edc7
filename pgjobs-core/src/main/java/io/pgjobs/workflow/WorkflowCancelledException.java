package io.pgjobs.workflow;

/**
 * Ends an execution of a workflow run whose cancellation was asked ({@code JobClient.cancelWorkflow}): the
 * steps that ended return their records, so their compensations are registered, and the first step that
 * has not run throws this instead of running; the run's compensations then run and its job ends
 * cancelled. A workflow should let it pass.
 */
public class WorkflowCancelledException extends RuntimeException {
  /** @param message what was stopped */
  public WorkflowCancelledException(String message) {
    super(message);
  }
}
