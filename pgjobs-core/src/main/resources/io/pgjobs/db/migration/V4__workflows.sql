-- Durable step workflows (io.pgjobs.workflow): a workflow run is a job of the workflow's type whose
-- handler calls its steps through a WorkflowContext. Each step's outcome is recorded here the moment it
-- ends, in a statement of its own, so that when the run's job runs again (a retry, a worker that died, a
-- sleep that ended) a step that finished returns its recorded result instead of running again.
--
-- Keyed by the run (the job's id) and the step's name: a workflow names its steps, and runs them in the
-- same order every time (a workflow must be deterministic given its input and its steps' results).
CREATE TABLE workflow_steps (
    run_id       uuid        NOT NULL,
    name         text        NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    seq          integer     NOT NULL,             -- the order in which the steps first ran, from 1
    kind         text        NOT NULL CHECK (kind IN ('step', 'sleep', 'signal')),
    -- done: its result is recorded (a signal's: its payload); skipped: an optional step that failed, or a
    -- signal that did not come in time; compensated: done, then
    -- undone by its compensation when the workflow failed for good; compensation_failed: that failed.
    state        text        NOT NULL CHECK (state IN ('done', 'skipped', 'compensated', 'compensation_failed')),
    result       jsonb,                            -- the step's result as JSON; a sleep's wake-up instant
    error        text,                             -- a skipped step's or a failed compensation's error
    finished_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, name)
);

-- Signals sent to runs (JobClient.signalWorkflow): what ctx.awaitSignal(name, ...) waits for. The first
-- signal of a name counts; a run reads it when it reaches the wait, or is woken by the sender if it is
-- waiting already (its job snoozed: made due at once).
CREATE TABLE workflow_signals (
    run_id      uuid        NOT NULL,
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    payload     jsonb       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, name)
);
