/**
 * Durable step workflows: a {@link io.pgjobs.workflow.Workflow} function whose steps
 * ({@link io.pgjobs.workflow.WorkflowContext#step}) are recorded as they finish, so that a run resumed after
 * a crash, a retry or a sleep returns the recorded results instead of running those steps again; steps
 * may register compensations, run in reverse order when the workflow fails for good. A run is a job of
 * the workflow's type ({@link io.pgjobs.workflow.WorkflowType#jobType()}), claimed, retried and rescued as
 * any job; its steps are in the table {@code workflow_steps} (V4__workflows.sql).
 */
package io.pgjobs.workflow;
