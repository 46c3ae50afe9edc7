-- pgjobs schema, version 1.
--
-- Flyway runs this with search_path set to the pgjobs schema (configurable, default "pgjobs"),
-- so names below are unqualified. ${flyway:defaultSchema} is that schema's name.
--
-- Two tables hold jobs, by design:
--   jobs           the HOT table: only jobs that can still run (queued, scheduled, retrying, running).
--                  Every claim scans it, so it is kept small: a finished job leaves it in the same
--                  statement that finishes it.
--   finished_jobs  succeeded, failed (the dead letters) and cancelled jobs, kept for the retention
--                  period, append-only, written by the worker in batches.
-- A job is in exactly one of them at any moment; every move is one statement (DELETE ... RETURNING
-- feeding an INSERT), so no process crash can leave it in both or in neither.

CREATE TABLE jobs (
    id               uuid        PRIMARY KEY,             -- UUIDv7: time-ordered, unguessable
    type             text        NOT NULL,                -- the job type's stable name (routing key)
    queue            text        NOT NULL,
    payload          jsonb       NOT NULL,
    priority         integer     NOT NULL,                -- higher runs first
    state            text        NOT NULL,
    attempts         integer     NOT NULL DEFAULT 0,      -- claims so far, including the running one
    max_attempts     integer     NOT NULL,
    run_at           timestamptz NOT NULL,                -- earliest time the job may be claimed
    created_at       timestamptz NOT NULL,
    attempted_at     timestamptz,                         -- when the latest attempt was claimed
    locked_by        text,                                -- worker id holding the running job
    heartbeat_at     timestamptz,                         -- last sign of life of that worker for this job
    context          text,                                -- free text for debugging ("user-signup")
    idempotency_key  text,
    timeout_ms       bigint,                              -- per-job override of the type's timeout
    progress_percent smallint,
    progress_message text,
    errors           jsonb       NOT NULL DEFAULT '[]',   -- one object per failed attempt, oldest first
    cancel_requested boolean     NOT NULL DEFAULT false,

    CONSTRAINT jobs_state_check CHECK (state IN ('queued', 'retrying', 'running')),
    CONSTRAINT jobs_type_check CHECK (length(type) BETWEEN 1 AND 255),
    CONSTRAINT jobs_queue_check CHECK (length(queue) BETWEEN 1 AND 255),
    CONSTRAINT jobs_attempts_check CHECK (attempts >= 0 AND attempts <= max_attempts),
    CONSTRAINT jobs_max_attempts_check CHECK (max_attempts >= 1),
    CONSTRAINT jobs_running_is_locked CHECK ((state = 'running') = (locked_by IS NOT NULL)),
    CONSTRAINT jobs_progress_check CHECK (progress_percent IS NULL OR progress_percent BETWEEN 0 AND 100),
    CONSTRAINT jobs_timeout_check CHECK (timeout_ms IS NULL OR timeout_ms > 0),
    CONSTRAINT jobs_errors_is_array CHECK (jsonb_typeof(errors) = 'array')
);

-- The claim scans this and nothing else: waiting jobs of one queue in claim order.
CREATE INDEX jobs_ready_idx ON jobs (queue, priority DESC, run_at) WHERE state IN ('queued', 'retrying');
-- Running jobs by worker and heartbeat: rescue of jobs whose worker went silent.
CREATE INDEX jobs_running_idx ON jobs (heartbeat_at) WHERE state = 'running';

-- Updates on the hot table are HOT-friendly when the page has room.
ALTER TABLE jobs SET (fillfactor = 80);

CREATE TABLE finished_jobs (
    id               uuid        PRIMARY KEY,
    type             text        NOT NULL,
    queue            text        NOT NULL,
    payload          jsonb       NOT NULL,
    priority         integer     NOT NULL,
    state            text        NOT NULL,
    attempts         integer     NOT NULL,
    max_attempts     integer     NOT NULL,
    run_at           timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    attempted_at     timestamptz,
    locked_by        text,                                -- worker that ran the last attempt
    context          text,
    idempotency_key  text,
    timeout_ms       bigint,
    progress_percent smallint,
    progress_message text,
    errors           jsonb       NOT NULL,
    output           jsonb,                               -- what the handler returned, if anything
    finished_at      timestamptz NOT NULL,

    CONSTRAINT finished_jobs_state_check CHECK (state IN ('succeeded', 'failed', 'cancelled')),
    CONSTRAINT finished_jobs_attempts_check CHECK (attempts >= 0 AND max_attempts >= 1),
    CONSTRAINT finished_jobs_errors_is_array CHECK (jsonb_typeof(errors) = 'array'),
    CONSTRAINT finished_jobs_output_only_on_success CHECK (output IS NULL OR state = 'succeeded')
);

-- Pruning by age, and the dead-letter view (failed jobs, newest first).
CREATE INDEX finished_jobs_finished_at_idx ON finished_jobs (finished_at);
CREATE INDEX finished_jobs_failed_idx ON finished_jobs (type, finished_at DESC) WHERE state = 'failed';

-- Idempotency keys live apart from both job tables: a job moves between them, but its key must keep
-- answering "this job already exists" for as long as the job is kept. The primary key is the
-- uniqueness guarantee; enqueue inserts here first with ON CONFLICT DO NOTHING.
CREATE TABLE job_keys (
    idempotency_key text        PRIMARY KEY,
    job_id          uuid        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT job_keys_key_check CHECK (length(idempotency_key) BETWEEN 1 AND 255)
);
CREATE INDEX job_keys_job_id_idx ON job_keys (job_id);

-- Wake idle workers: one notification per statement and queue (not per row), and only for jobs
-- that are ready now. The payload is the queue name; the channel is per schema so two pgjobs
-- installations in one database do not wake each other.
CREATE FUNCTION notify_jobs_ready() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    q text;
BEGIN
    FOR q IN SELECT DISTINCT queue FROM new_jobs WHERE run_at <= now() AND state <> 'running' LOOP
        PERFORM pg_notify('${flyway:defaultSchema}_jobs_ready', q);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_insert
    AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION notify_jobs_ready();
