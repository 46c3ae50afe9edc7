-- pgjobs schema, version 5: the job-event and ready triggers cost O(1) work per row.
--
-- Version 3's event trigger joined the old and new transition tables and built a JSON object per row
-- before keeping 50 of them: about 2 µs per row on every claim and every completion batch, a third of
-- the claim's own cost. Now it counts the rows and builds JSON for the first 50 only. Every statement of
-- pgjobs changes the state of all the rows it updates or of none (heartbeats, progress, cancel flags), so
-- comparing one row's old and new state tells which kind of statement fired; the old full join that
-- filtered unchanged rows is not needed. (A column list, AFTER UPDATE OF state, would say the same
-- more simply, but PostgreSQL does not allow transition tables on such triggers.)
-- The two INSERT triggers of `jobs` (ready notification, job event) become one: one trigger call and one
-- transition table per statement instead of two, which a single-row enqueue notices.

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

-- Inserted jobs: wake the workers of every queue that got a job due now, and announce the event.
CREATE FUNCTION notify_jobs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    q text;
    total bigint;
    payload text;
BEGIN
    FOR q IN SELECT DISTINCT queue FROM changed_new WHERE run_at <= now() AND state <> 'running' LOOP
        PERFORM pg_notify('${flyway:defaultSchema}_jobs_ready', q);
    END LOOP;
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

DROP TRIGGER jobs_notify_insert ON jobs;
DROP TRIGGER jobs_events_insert ON jobs;
CREATE TRIGGER jobs_inserted
    AFTER INSERT ON jobs REFERENCING NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION notify_jobs_inserted();


DROP FUNCTION notify_jobs_ready();
