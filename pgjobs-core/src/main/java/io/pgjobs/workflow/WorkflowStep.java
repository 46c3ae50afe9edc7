package io.pgjobs.workflow;

import java.time.Instant;

/**
 * A recorded step of a workflow run, as {@code JobClient.workflowSteps} reads it.
 *
 * @param name its name ({@code sleep#n}, {@code signal:<name>} and {@code signal-deadline:<name>} for
 *     sleeps and signal waits, {@code (started)} for the workflow clock)
 * @param kind {@code step}, {@code sleep}, {@code signal} or {@code jobs} (awaitJobs)
 * @param state {@code done}, {@code skipped}, {@code compensated} or {@code compensation_failed}
 * @param resultJson its result as JSON text (a sleep's: when it wakes; a signal's: its payload), or null
 * @param error a skipped step's or failed compensation's error, or null
 * @param seq the order in which it first ran, from 1
 * @param finishedAt when it was recorded, or its compensation ended
 */
public record WorkflowStep(
    String name,
    String kind,
    String state,
    String resultJson,
    String error,
    int seq,
    Instant finishedAt) {}
