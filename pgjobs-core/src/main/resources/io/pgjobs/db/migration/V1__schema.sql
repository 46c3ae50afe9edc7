-- The pgjobs schema.
--
-- Flyway runs this with search_path set to the pgjobs schema (configurable, default "pgjobs"), so names
-- below are unqualified. ${flyway:defaultSchema} is that schema's name; it also names the notification
-- channels, so two pgjobs installations in one database do not wake each other.
--
-- Released migrations are append-only: a change to the schema is a new V<n>__*.sql file, never an edit
-- of this one (docs/operations.md, "Schema").
--
-- Two tables hold jobs, by design:
--   jobs           the HOT table: only jobs that can still run (queued, scheduled, retrying, running).
--                  Every claim scans it, so it is kept small: a finished job leaves it in the same
--                  statement that finishes it.
--   finished_jobs  succeeded, failed (the dead letters) and cancelled jobs, kept for the retention
--                  period, append-only, written by the worker in batches.
-- A job is in exactly one of them at any moment; every move is one statement (DELETE ... RETURNING
-- feeding an INSERT), so no process crash can leave it in both or in neither.


-- ============================================================================================== jobs

-- The hot table's single-column rules are domains, not table CHECKs: PostgreSQL parses and plans a
-- table's CHECK expressions again for every statement that writes the table (a third of a single-row
-- enqueue's server time when jobs had twelve), while a domain's constraints are planned once per
-- connection and checked only where a statement writes that column: a claim writes none of them. The
-- constraint names are the ones the errors report ('value for domain ... violates check constraint
-- "jobs_queue_check"', SQLSTATE 23514). What stays a table CHECK: the rules over two or more columns,
-- and state (every claim, retry and completion writes it, and the ready indexes' predicates use it).
CREATE DOMAIN job_type_name AS text
    CONSTRAINT jobs_type_check CHECK (length(VALUE) BETWEEN 1 AND 255);
CREATE DOMAIN job_queue_name AS text
    CONSTRAINT jobs_queue_check CHECK (length(VALUE) BETWEEN 1 AND 255);
CREATE DOMAIN job_max_attempts AS integer
    CONSTRAINT jobs_max_attempts_check CHECK (VALUE >= 1);
CREATE DOMAIN job_progress_percent AS smallint
    CONSTRAINT jobs_progress_check CHECK (VALUE BETWEEN 0 AND 100);
CREATE DOMAIN job_timeout_ms AS bigint
    CONSTRAINT jobs_timeout_check CHECK (VALUE > 0);
CREATE DOMAIN job_errors AS jsonb
    CONSTRAINT jobs_errors_is_array CHECK (jsonb_typeof(VALUE) = 'array');
CREATE DOMAIN job_capability AS text
    CONSTRAINT jobs_capability_check CHECK (VALUE ~ '^[A-Za-z0-9_.-]{1,64}$');
-- 1024 characters hold a traceparent (55) and a tracestate of the 512 characters W3C asks vendors to pass on.
CREATE DOMAIN job_trace_context AS text
    CONSTRAINT jobs_trace_context_length CHECK (length(VALUE) <= 1024);

-- The claim fence: every claim statement draws one number from here and writes it to every job it claims.
-- Every later write to a running job (success, failure, retry, snooze, release, progress, heartbeat)
-- matches on (id, claim_token), so a write from a claim that is no longer the job's current one (its
-- worker was cut off, the job was rescued, retried by an operator and claimed again) changes nothing,
-- and the writer learns that from the row count. The attempt number cannot be this fence: retrying a
-- finished job starts its attempts from 0 again.
CREATE SEQUENCE claim_tokens AS bigint;

CREATE TABLE jobs (
    id               uuid                 PRIMARY KEY,     -- UUIDv7: time-ordered, unguessable
    type             job_type_name        NOT NULL,        -- the job type's stable name (routing key)
    queue            job_queue_name       NOT NULL,
    payload          jsonb                NOT NULL,
    priority         integer              NOT NULL,        -- higher runs first
    -- The defaults of state and the times let a bulk enqueue of jobs due now (COPY) send neither:
    -- parsing two timestamps per row was a quarter of the server's time for such a COPY.
    state            text                 NOT NULL DEFAULT 'queued',
    attempts         integer              NOT NULL DEFAULT 0,  -- claims so far, including the running one
    max_attempts     job_max_attempts     NOT NULL,
    run_at           timestamptz          NOT NULL DEFAULT now(),  -- earliest time the job may be claimed
    created_at       timestamptz          NOT NULL DEFAULT now(),
    attempted_at     timestamptz,                          -- when the latest attempt was claimed
    locked_by        text,                                 -- worker id holding the running job
    heartbeat_at     timestamptz,                          -- last sign of life of that worker for this job
    context          text,                                 -- free text for debugging ("user-signup")
    idempotency_key  text,
    timeout_ms       job_timeout_ms,                       -- per-job override of the type's timeout
    progress_percent job_progress_percent,
    progress_message text,
    errors           job_errors           NOT NULL DEFAULT '[]',  -- one object per failed attempt, oldest first
    cancel_requested boolean              NOT NULL DEFAULT false,
    -- The claim's token (claim_tokens above). A worker's own writes keep it on the row they leave behind
    -- (here or in finished_jobs), so a write whose reply was lost can be recognised afterwards; rescue
    -- and administrative moves clear it.
    claim_token      bigint,
    -- Set by the worker's heartbeat on jobs it has claimed but not started. When the worker is found
    -- dead, such jobs go back to the queue as they were (the claim's attempt taken back): they never ran.
    prefetched       boolean              NOT NULL DEFAULT false,
    parent_id        uuid,                                 -- the job whose handler enqueued this one (ctx.enqueue)
    -- A unique job's key (EnqueueOptions.unique): a SHA-256 of its type, optionally its queue, the chosen
    -- part of its payload and, with a period, the period's start. NULL for every other job, which then
    -- pays nothing: jobs_unique_key_uidx is partial.
    unique_key       bytea,
    -- The capability a worker must declare to claim the job ('media', 'gpu'); NULL: any worker of the queue.
    capability       job_capability,
    -- The W3C trace context of the enqueue (traceparent, then ';' and the tracestate if any), stored only
    -- when tracing is on, so the worker's run span joins the enqueuing trace.
    trace_context    job_trace_context,
    -- Snoozes so far. A snooze gives its attempt back, so without this a handler could not tell a first
    -- run from a run after a snooze (JobContext.snoozes()). Starts at 0 again when a finished job is
    -- retried by hand. No CHECK: only the snooze writes it (+1).
    snoozes          int                  NOT NULL DEFAULT 0,

    CONSTRAINT jobs_state_check CHECK (state IN ('queued', 'retrying', 'running')),
    CONSTRAINT jobs_attempts_check CHECK (attempts >= 0 AND attempts <= max_attempts),
    CONSTRAINT jobs_running_is_locked CHECK ((state = 'running') = (locked_by IS NOT NULL)),
    CONSTRAINT jobs_running_has_token CHECK (state <> 'running' OR claim_token IS NOT NULL)
) WITH (
    -- Updates on the hot table are HOT-friendly when the page has room.
    fillfactor = 80,
    -- The hot table turns over its whole content every few seconds under load: every claim and every
    -- finish leaves a dead row version, and dead entries in jobs_ready_idx are what a claim has to step
    -- over. Vacuum it after a small absolute number of dead rows rather than a fifth of the table, and
    -- without the cost-based sleeps (it is small by design, so a vacuum is short).
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.05,
    -- No vacuum, autovacuum included, cuts the empty pages off the table's end. The cut takes an ACCESS
    -- EXCLUSIVE lock that stalls every claim, completion and heartbeat, and a table cut back to a few MB
    -- is what every worker connection's prepared statements are re-planned on (a lookup by id becomes a
    -- sequential scan, kept while the table grows again). Kept pages are not lost: the free space map
    -- hands them to the next rows. To give the space back after a one-off peak, run
    -- VACUUM (TRUNCATE true) on the table at a quiet time (docs/operations.md).
    vacuum_truncate = false
);

-- The claim of a worker without capabilities reads this and nothing else: waiting jobs of one queue in
-- claim order. The id makes a position exact (jobs enqueued in one bulk insert share one run_at), so a
-- claim resumes each priority level just past the last job it claimed there instead of stepping over the
-- dead entries at the range's low end that a long transaction elsewhere keeps. Jobs that need a
-- capability are left out, so that claim's plan and buffers do not depend on how many of them wait.
CREATE INDEX jobs_ready_idx ON jobs (queue, priority DESC, run_at, id)
    WHERE state IN ('queued', 'retrying') AND capability IS NULL;
-- Ready jobs that need a capability: the extra part of a capable worker's claim, and the report of jobs
-- no live worker can run (GET /queues). Small while such jobs are few.
CREATE INDEX jobs_ready_capability_idx ON jobs (capability, queue, priority DESC, run_at, id)
    WHERE state IN ('queued', 'retrying') AND capability IS NOT NULL;
-- Running jobs by heartbeat: rescue of jobs whose worker went silent.
CREATE INDEX jobs_running_idx ON jobs (heartbeat_at) WHERE state = 'running';
-- Belt and braces for idempotency: job_keys is the guarantee (it outlives the job's move between
-- tables); this makes a second live job with the same key impossible even for a row written around pgjobs.
CREATE UNIQUE INDEX jobs_idempotency_key_uidx ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
-- Child jobs of a job (the job detail links both ways).
CREATE INDEX jobs_parent_idx ON jobs (parent_id) WHERE parent_id IS NOT NULL;
-- Unique jobs among the unfinished states (the default rule). The hot table holds exactly the unfinished
-- jobs, so a job that finishes leaves the index in the statement that finishes it. The enqueue is one
-- INSERT ... ON CONFLICT on this index: concurrent enqueues of one key wait for each other (speculative
-- insertion) and yield one job, with no read-then-insert race. Rules that count finished states use
-- unique_keys instead.
CREATE UNIQUE INDEX jobs_unique_key_uidx ON jobs (unique_key) WHERE unique_key IS NOT NULL;


-- ===================================================================================== finished_jobs

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
    claim_token      bigint,                              -- kept by the worker's own write (jobs.claim_token)
    parent_id        uuid,
    capability       text,
    trace_context    text,
    snoozes          int         NOT NULL DEFAULT 0,

    CONSTRAINT finished_jobs_state_check CHECK (state IN ('succeeded', 'failed', 'cancelled')),
    CONSTRAINT finished_jobs_attempts_check CHECK (attempts >= 0 AND max_attempts >= 1),
    CONSTRAINT finished_jobs_errors_is_array CHECK (jsonb_typeof(errors) = 'array'),
    CONSTRAINT finished_jobs_output_only_on_success CHECK (output IS NULL OR state = 'succeeded')
);

-- Pruning by age, and the dead-letter view (failed jobs, newest first).
CREATE INDEX finished_jobs_finished_at_idx ON finished_jobs (finished_at);
CREATE INDEX finished_jobs_failed_idx ON finished_jobs (type, finished_at DESC) WHERE state = 'failed';
-- The job list's filters. The list reads newest first (ORDER BY id DESC LIMIT n); without these, a filter
-- few finished jobs match walks the primary key through the whole table. Each costs one index entry per
-- finished job (docs/BENCHMARKS.md, "Dashboard at 1,000,000 jobs").
--   ?type= and ?queue=: the matching rows newest first, straight from the index.
CREATE INDEX finished_jobs_type_id_idx ON finished_jobs (type, id);
CREATE INDEX finished_jobs_queue_id_idx ON finished_jobs (queue, id);
--   ?created_after= / ?created_before=: a date range that holds few rows is read from here, then sorted.
CREATE INDEX finished_jobs_created_at_idx ON finished_jobs (created_at);
-- Child jobs of a job, as on jobs.
CREATE INDEX finished_jobs_parent_idx ON finished_jobs (parent_id) WHERE parent_id IS NOT NULL;

-- ?text= may use a trigram index, finished_jobs_text_trgm_idx, which is the operator's to create: every
-- finished job would pay it on the worker's write path (docs/operations.md gives the statement and its
-- cost). The index needs the pg_trgm extension: it is created here (in this schema) when the role may,
-- so creating the index later needs no superuser; when it may not, nothing fails.
DO $pgjobs$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_trgm')
       AND EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS pg_trgm;
        EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR undefined_file THEN
            RAISE NOTICE 'pgjobs: pg_trgm cannot be created by this role (%); a trigram index for ?text= needs it installed first', SQLERRM;
        END;
    END IF;
END
$pgjobs$;


-- ========================================================================================== job_keys

-- Idempotency keys live apart from both job tables: a job moves between them, but its key must keep
-- answering "this job already exists" for as long as the job is kept. The primary key is the
-- uniqueness guarantee; enqueue inserts here first with ON CONFLICT DO NOTHING.
CREATE TABLE job_keys (
    idempotency_key text        PRIMARY KEY,
    job_id          uuid        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- What was asked under the key: a SHA-256 of the request (type, payload as canonical JSON, and the
    -- options the caller gave; see IdempotencyFingerprint). A second enqueue under the key with another
    -- fingerprint is refused. NULL: no fingerprint recorded; such a key answers any request.
    fingerprint     text,
    CONSTRAINT job_keys_key_check CHECK (length(idempotency_key) BETWEEN 1 AND 255)
);
CREATE INDEX job_keys_job_id_idx ON job_keys (job_id);


-- ======================================================================================= unique_keys

-- Unique jobs whose rule also counts finished states (UniqueOptions.states), e.g. "not again if one is
-- waiting, running or succeeded within the last 10 minutes". Such jobs never carry jobs.unique_key: this
-- table is their only constraint, and their key also names the rule's finished states (UniqueKeys.base),
-- so a rule with states and one without never share a key.
--
-- One row per key names the job that holds it. An enqueue is one INSERT ... ON CONFLICT (unique_key)
-- DO UPDATE here (EnqueueSql.INSERT_UNIQUE_STATES): the key row's lock serializes concurrent enqueuers of
-- one key, and the update hands the key to the new job only when the holder no longer counts: it is
-- neither in jobs nor in finished_jobs in one of the row's finished_states.
--
-- writer is the transaction that made job_id the holder. The holder check reads with the statement's
-- snapshot, so an enqueuer that waited for the key row's lock cannot see a holder inserted meanwhile;
-- when writer is not visible in its snapshot (pg_visible_in_snapshot), the holder counts. Maintenance
-- (WorkerSql.PRUNE_UNIQUE_KEYS) uses the same guard.
--
-- expires_at is the end of the key's period (NULL: no period). The period is part of the key, so an
-- enqueue never meets an expired row of its own period; maintenance deletes rows past it, and rows whose
-- holder no longer counts, in bounded batches.
CREATE TABLE unique_keys (
    unique_key      bytea PRIMARY KEY,
    job_id          uuid NOT NULL,
    finished_states text[] NOT NULL,
    expires_at      timestamptz,
    writer          xid8 NOT NULL,
    CONSTRAINT unique_keys_finished_states_check
        CHECK (finished_states <@ ARRAY['succeeded', 'failed', 'cancelled']::text[]
               AND cardinality(finished_states) >= 1)
);

-- Maintenance finds expired rows by this index.
CREATE INDEX unique_keys_expires_at_idx ON unique_keys (expires_at) WHERE expires_at IS NOT NULL;


-- =========================================================================================== workers

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
    -- Lanes held by a handler the worker had to let go (one that ignored its timeout, cancellation or
    -- shutdown), so a stuck lane shows in GET /workers and on the dashboard, not only in that worker's log.
    stuck_lanes    integer     NOT NULL DEFAULT 0,
    capabilities   text[]      NOT NULL DEFAULT '{}',  -- the capabilities it declared ('{}' for none)
    -- Jobs it holds whose rows were locked at its last beat, so the heartbeat could not renew them
    -- (a handler's own transaction on its row must not stall every other job's beat). Rescue leaves
    -- these to the worker while it lives; the stale threshold still applies to them.
    held_locked    uuid[]      NOT NULL DEFAULT '{}',
    -- The worker's own dead-worker threshold, so that what the API and dashboard call a live worker is
    -- what rescue believes. NULL: the default threshold.
    dead_after_ms  bigint,
    CONSTRAINT workers_queues_is_object CHECK (jsonb_typeof(queues) = 'object'),
    CONSTRAINT workers_job_types_is_array CHECK (jsonb_typeof(job_types) = 'array'),
    CONSTRAINT workers_stuck_lanes_check CHECK (stuck_lanes >= 0),
    CONSTRAINT workers_dead_after_ms_check CHECK (dead_after_ms > 0)
);


-- ============================================================================================ leases

-- One row per singleton duty (e.g. 'maintenance'). Whoever holds an unexpired lease does the duty; the
-- holder renews it well before it expires, and anyone may take an expired one. A lease rather than an
-- advisory lock, so a leader that is cut off (not just dead) loses the duty too.
CREATE TABLE leases (
    name       text        PRIMARY KEY,
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);


-- ============================================================================================ queues

-- A queue exists as soon as a job names it; a row here only records that it is paused. Workers skip
-- paused queues in the claim statement itself, so a pause takes effect on the very next claim.
CREATE TABLE queues (
    name       text        PRIMARY KEY,
    paused     boolean     NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT queues_name_check CHECK (length(name) BETWEEN 1 AND 255)
);


-- ========================================================================================= recurring

-- Recurring (cron) schedules, one row each. The maintenance leader fires each slot by enqueueing one job
-- whose idempotency key is derived from (schedule, slot): job_keys' primary key makes a second enqueue of
-- the same slot impossible, whichever node or leader tries, and last_slot (written in the same
-- transaction) records the newest slot handled, so a new leader knows where the schedule stands and a
-- slot missed while nothing ran is detected.
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
    -- The schedule's last job, written in the transaction that enqueues it, so showing the last run is a
    -- primary-key lookup in jobs or finished_jobs. No foreign key: finished jobs are pruned after their
    -- retention, and the schedule then shows its last run as no longer kept.
    last_job_id  uuid,
    CONSTRAINT recurring_name_check CHECK (length(name) BETWEEN 1 AND 200),
    CONSTRAINT recurring_queue_check CHECK (length(queue) BETWEEN 1 AND 255),
    CONSTRAINT recurring_type_check CHECK (length(job_type) BETWEEN 1 AND 255),
    CONSTRAINT recurring_missed_check CHECK (missed IN ('skip', 'latest', 'catch_up')),
    CONSTRAINT recurring_catch_up_check CHECK (catch_up BETWEEN 1 AND 1000),
    CONSTRAINT recurring_max_attempts_check CHECK (max_attempts >= 1),
    CONSTRAINT recurring_source_check CHECK (source IN ('code', 'api'))
);


-- ===================================================================================== notifications

-- Job events for live views (the HTTP event stream, the dashboard): one notification per statement on
-- <schema>_job_events, never one per row, so bulk statements stay cheap. Statements that insert jobs
-- (enqueue, bulk enqueue, retry of finished jobs) and claims announce their jobs themselves, in the
-- statement (JobSql builds those events the same way); the triggers below cover every other change.
--
-- An event lists the first jobs (at most 50, in the order the statement produced them) only while the
-- running total of their JSON entries' bytes stays within 7,000: PostgreSQL refuses a NOTIFY payload of
-- 8,000 bytes or more, and that error would abort the state transition itself. An entry is at most about
-- 3,200 bytes (names are cut to 255 characters, a character takes at most 6 bytes in JSON), so the first
-- job is always listed. "count" is the number of jobs the statement changed and "truncated" says whether
-- some were left out; a listener that must see every job re-reads then.
--
-- Every statement of pgjobs changes the state of all the rows it updates or of none (heartbeats,
-- progress, cancel flags), so comparing one row's old and new state tells which kind fired. (A column
-- list, AFTER UPDATE OF state, would say it more simply, but PostgreSQL allows no transition tables on
-- such triggers.) Cost per statement: one count of the transition table and JSON for 50 rows at most.
CREATE FUNCTION notify_job_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total bigint;
    listed bigint;
    listed_jobs json;
    first_id uuid;
    new_state text;
    old_state text;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        SELECT id, state INTO first_id, new_state FROM changed_new LIMIT 1;
        SELECT state INTO old_state FROM changed_old WHERE id = first_id LIMIT 1;
        IF new_state IS NOT DISTINCT FROM old_state THEN
            RETURN NULL; -- heartbeat, progress or cancel flag: no state changed
        END IF;
    END IF;
    SELECT count(*) INTO total FROM changed_new;
    IF total = 0 THEN
        RETURN NULL;
    END IF;
    SELECT count(*), json_agg(e.entry ORDER BY e.n)
      INTO listed, listed_jobs
      FROM (SELECT n, entry, sum(octet_length(entry::text)) OVER (ORDER BY n) AS listed_bytes
              FROM (SELECT row_number() OVER () AS n,
                           json_build_object('id', c.id, 'state', c.state, 'type', left(c.type, 255),
                                             'queue', left(c.queue, 255), 'attempts', c.attempts) AS entry
                      FROM (SELECT id, state, type, queue, attempts FROM changed_new LIMIT 50) AS c) AS numbered
           ) AS e
     WHERE e.listed_bytes <= 7000;
    PERFORM pg_notify('${flyway:defaultSchema}_job_events', json_build_object(
                'op', 'state', 'count', total, 'truncated', listed < total,
                'jobs', COALESCE(listed_jobs, '[]'::json))::text);
    RETURN NULL;
END
$$;

-- Fires for every update of jobs except a claim's: a claim statement sets the transaction-local setting
-- pgjobs.claim_announces to 'on' and sends the same event from its own rows, so the event commits, or
-- not, with the claim. (Firing this trigger, with its transition tables, cost a single-row claim more
-- than half of its server time.) Outside a claim's own transaction the setting is unset or ''.
CREATE TRIGGER jobs_events_update
    AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS changed_old NEW TABLE AS changed_new
    FOR EACH STATEMENT
    WHEN (current_setting('pgjobs.claim_announces', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION notify_job_events();

CREATE TRIGGER finished_jobs_events_insert
    AFTER INSERT ON finished_jobs REFERENCING NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION notify_job_events();

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
