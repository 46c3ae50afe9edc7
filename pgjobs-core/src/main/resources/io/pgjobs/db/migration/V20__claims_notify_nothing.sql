-- pgjobs schema, version 20: a claim does not run the job-events trigger; the worker announces the jobs
-- it claimed.
--
-- The claim is on the path from enqueue to handler. Until now every UPDATE of jobs ran the
-- statement-level trigger jobs_events_update, and a claim, changing states, committed its NOTIFY: for a
-- claim of one job that cost 0.3-0.5 ms of a ~3.5 ms pickup at rest (W4, docs/BENCHMARKS.md).
--
-- A statement-level trigger cannot look at rows in its WHEN clause, but it can look at a setting: the
-- claim statements (ExecutionSql) set pgjobs.claim to 'on' for their own transaction (set_config with
-- is_local, evaluated once per statement; they run in auto-commit, so the transaction is the statement)
-- and the trigger's WHEN skips them. The worker sends the claim's 'running' event itself right after the
-- claim, in the same format, before it writes anything else about those jobs
-- (io.pgjobs.worker.RunningEvents, ExecutionSql.ANNOUNCE_RUNNING). Every other UPDATE, pgjobs' own or
-- written by hand, is announced by the trigger as before: one event per statement, its true count and
-- the first jobs that fit.
--
-- A worker of an older version keeps claiming correctly, and its claims are still announced by the
-- trigger (they do not set the setting).

DROP TRIGGER jobs_events_update ON jobs;

CREATE TRIGGER jobs_events_update AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS changed_old NEW TABLE AS changed_new
    FOR EACH STATEMENT
    WHEN (current_setting('pgjobs.claim', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION notify_job_events();
