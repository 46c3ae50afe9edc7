-- pgjobs schema, version 12: recurring (cron) schedules.
--
-- One row per schedule. The maintenance leader fires each slot by enqueueing one job whose idempotency
-- key is derived from (schedule, slot): job_keys' primary key makes a second enqueue of the same slot
-- impossible, whichever node or leader tries, and last_slot (written in the same transaction) records
-- the newest slot handled, so a new leader knows where the schedule stands and a slot missed while
-- nothing ran is detected.
CREATE TABLE recurring (
    name         text        PRIMARY KEY,
    cron         text        NOT NULL,
    zone         text        NOT NULL,
    job_type     text        NOT NULL,
    queue        text        NOT NULL,
    payload      jsonb       NOT NULL,
    priority     integer     NOT NULL,
    max_attempts integer     NOT NULL,
    missed       text        NOT NULL DEFAULT 'latest',   -- what to do with missed slots: skip, latest, catch_up
    catch_up     integer     NOT NULL DEFAULT 1,          -- with catch_up: at most this many missed slots
    paused       boolean     NOT NULL DEFAULT false,
    source       text        NOT NULL,                    -- code (declared by a worker) or api
    disabled     boolean     NOT NULL DEFAULT false,      -- a code schedule its worker no longer declares
    last_slot    timestamptz,                             -- the newest slot handled (enqueued or skipped)
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT recurring_name_check CHECK (length(name) BETWEEN 1 AND 200),
    CONSTRAINT recurring_queue_check CHECK (length(queue) BETWEEN 1 AND 255),
    CONSTRAINT recurring_type_check CHECK (length(job_type) BETWEEN 1 AND 255),
    CONSTRAINT recurring_missed_check CHECK (missed IN ('skip', 'latest', 'catch_up')),
    CONSTRAINT recurring_catch_up_check CHECK (catch_up BETWEEN 1 AND 1000),
    CONSTRAINT recurring_max_attempts_check CHECK (max_attempts >= 1),
    CONSTRAINT recurring_source_check CHECK (source IN ('code', 'api'))
);
