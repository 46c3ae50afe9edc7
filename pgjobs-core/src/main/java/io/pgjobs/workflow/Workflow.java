package io.pgjobs.workflow;

/**
 * A workflow's code: calls its steps through {@code ctx} and returns its output. It must be deterministic
 * given its input and its steps' results (the same steps, by name, in the same order every time it runs):
 * it runs again from the start whenever its run resumes, and the steps that finished return their
 * recorded results.
 *
 * @param <I> its input
 * @param <O> its output
 */
@FunctionalInterface
public interface Workflow<I, O> {
  /** Runs (or resumes) the workflow. A throw fails this attempt; the last attempt's failure compensates. */
  O run(WorkflowContext ctx, I input) throws Exception;
}
