-- pgjobs schema, version 22: a claim announces the jobs it starts itself, so the statement-level events
-- trigger of jobs does not fire for it.
--
-- Why: firing jobs_events_update, with its transition tables, cost a single-row claim ~50 µs of its
-- ~90 µs in the server (pgbench, docs/bench-journal/issue-15-part-3.md), on the path from a job's notification to its
-- handler. A claim statement now sets the transaction-local setting pgjobs.claim_announces to 'on' before
-- it updates a row, and sends the same job event ('state', the jobs now 'running') from its own rows in
-- the same statement, so the event still commits, or not, with the claim, in the same order as before.
-- Every other update of jobs fires the trigger as it did: the setting is unset (or '') outside a claim's
-- own transaction, and claims run in auto-commit mode.
DROP TRIGGER jobs_events_update ON jobs;
CREATE TRIGGER jobs_events_update
    AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS changed_old NEW TABLE AS changed_new
    FOR EACH STATEMENT
    WHEN (current_setting('pgjobs.claim_announces', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION notify_job_events();
