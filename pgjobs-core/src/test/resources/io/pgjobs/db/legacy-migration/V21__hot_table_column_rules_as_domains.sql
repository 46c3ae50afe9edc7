-- pgjobs schema, version 21: the hot table's single-column rules move from table CHECK constraints to
-- domains, with the same rules under the same constraint names.
--
-- Why: PostgreSQL parses and plans a table's CHECK expressions again for every statement that writes the
-- table (ExecRelCheck reads each constraint's stored node tree, pg_constraint.conbin, with stringToNode
-- and runs it through the planner, per statement). The twelve CHECKs of jobs were ~9,100 characters of
-- node tree: a third of the server's time for a single-row enqueue (perf, 2026-11-27: ExecConstraints
-- 33 % of the backend, stringToNode alone 21 %), and the same again for every claim, heartbeat and retry
-- statement, which pay for all twelve whichever columns they set. A domain's constraints are parsed and
-- planned once per connection (the type cache) and checked only where a statement writes that column: a
-- claim sets none of the columns below and checks none of their rules.
--
-- What stays a table CHECK: the rules over two or more columns, and state (every claim, retry and
-- completion writes it, and the ready index's predicate is written over it).
--
-- The rules are unchanged: a value that broke one before breaks it now, with the same SQLSTATE (23514,
-- check_violation) and the constraint's name in the message ("value for domain ... violates check
-- constraint "jobs_queue_check"").
--
-- Changing a column to a domain with constraints rewrites the table (and its indexes) under an ACCESS
-- EXCLUSIVE lock: the hot table holds only unfinished jobs, so this is quick unless a large backlog waits.
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

-- One ALTER TABLE: one rewrite. NULL passes a domain's CHECK as it passed the table's (NOT NULL stays on
-- the column where it was).
ALTER TABLE jobs
    DROP CONSTRAINT jobs_type_check,
    DROP CONSTRAINT jobs_queue_check,
    DROP CONSTRAINT jobs_max_attempts_check,
    DROP CONSTRAINT jobs_progress_check,
    DROP CONSTRAINT jobs_timeout_check,
    DROP CONSTRAINT jobs_errors_is_array,
    DROP CONSTRAINT jobs_capability_check,
    DROP CONSTRAINT jobs_trace_context_length,
    ALTER COLUMN type TYPE job_type_name,
    ALTER COLUMN queue TYPE job_queue_name,
    ALTER COLUMN max_attempts TYPE job_max_attempts,
    ALTER COLUMN progress_percent TYPE job_progress_percent,
    ALTER COLUMN timeout_ms TYPE job_timeout_ms,
    ALTER COLUMN errors TYPE job_errors,
    ALTER COLUMN capability TYPE job_capability,
    ALTER COLUMN trace_context TYPE job_trace_context;
