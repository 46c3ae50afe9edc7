-- pgjobs schema, version 2: liveness and maintenance.

-- Every running worker registers itself and heartbeats. A row whose heartbeat is older than the stale
-- threshold belongs to a dead process; maintenance removes it (a clean shutdown removes its own).
CREATE TABLE workers (
    id             text        PRIMARY KEY,
    host           text        NOT NULL,
    pid            bigint      NOT NULL,
    queues         jsonb       NOT NULL,          -- {"queue": concurrency, ...}
    job_types      jsonb       NOT NULL,          -- ["send_email", ...]: the types it can run
    started_at     timestamptz NOT NULL DEFAULT now(),
    last_heartbeat timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT workers_queues_is_object CHECK (jsonb_typeof(queues) = 'object'),
    CONSTRAINT workers_job_types_is_array CHECK (jsonb_typeof(job_types) = 'array')
);

-- Leases: one row per singleton duty (e.g. 'maintenance'). Whoever holds an unexpired lease does the
-- duty; the holder renews it well before it expires, and anyone may take an expired one. A lease
-- rather than an advisory lock, so a leader that is cut off (not just dead) loses the duty too.
CREATE TABLE leases (
    name       text        PRIMARY KEY,
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Running jobs whose cancellation was asked: the worker is told by NOTIFY on <schema>_jobs_cancel
-- (payload: job id) and, as a fallback, sees the flag in its heartbeat.
CREATE FUNCTION notify_job_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('${flyway:defaultSchema}_jobs_cancel', NEW.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_cancel
    AFTER UPDATE OF cancel_requested ON jobs
    FOR EACH ROW WHEN (NEW.cancel_requested AND NOT OLD.cancel_requested)
    EXECUTE FUNCTION notify_job_cancel();
