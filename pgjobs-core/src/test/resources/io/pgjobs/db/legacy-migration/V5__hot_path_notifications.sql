-- pgjobs schema, version 5: notifications that cost O(1) per row (none from a trigger on insert), and
-- autovacuum settings for the hot table.
--
-- Version 3's event trigger joined the old and new transition tables and built a JSON object per row
-- before keeping 50 of them: about 2 µs per row on every claim and every completion batch, a third of
-- the claim's own cost. Now it counts the rows and builds JSON for the first 50 only. Every statement of
-- pgjobs changes the state of all the rows it updates or of none (heartbeats, progress, cancel flags), so
-- comparing one row's old and new state tells which kind of statement fired; the old full join that
-- filtered unchanged rows is not needed. (A column list, AFTER UPDATE OF state, would say the same
-- more simply, but PostgreSQL does not allow transition tables on such triggers.)

CREATE OR REPLACE FUNCTION notify_job_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total bigint;
    payload text;
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
    SELECT json_build_object(
               'op', 'state', 'count', total,
               'jobs', json_agg(json_build_object('id', c.id, 'state', c.state, 'type', c.type,
                                                  'queue', c.queue, 'attempts', c.attempts)))::text
      INTO payload
      FROM (SELECT id, state, type, queue, attempts FROM changed_new LIMIT 50) c;
    PERFORM pg_notify('${flyway:defaultSchema}_job_events', payload);
    RETURN NULL;
END
$$;

-- Inserts into jobs no longer fire a trigger at all: pgjobs' inserting statements (enqueue, bulk enqueue,
-- retry of finished jobs) send the ready notification and the job event themselves, in the statement.
-- A plpgsql trigger call with its transition table cost a single-row enqueue about a fifth of its time.
DROP TRIGGER jobs_notify_insert ON jobs;
DROP TRIGGER jobs_events_insert ON jobs;
DROP FUNCTION notify_jobs_ready();

-- The hot table turns over its whole content every few seconds under load: every claim and every finish
-- leaves a dead row version, and dead entries in jobs_ready_idx are what a claim has to step over. Vacuum
-- it after a small absolute number of dead rows rather than a fifth of the table (the default), and
-- without the cost-based sleeps (it is small by design, so a vacuum is short). Statistics matter less (the
-- statements are shaped not to depend on them) but are kept fresh too.
ALTER TABLE jobs SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.05
);

-- Defaults for a new job's state and times, so that a bulk enqueue of jobs due now (COPY) sends neither:
-- parsing two timestamps per row was a quarter of the server's time for such a COPY.
ALTER TABLE jobs
    ALTER COLUMN state SET DEFAULT 'queued',
    ALTER COLUMN run_at SET DEFAULT now(),
    ALTER COLUMN created_at SET DEFAULT now();
