-- pgjobs schema, version 3: paused queues and job events.

-- A queue exists as soon as a job names it; a row here only records that it is paused. Workers skip
-- paused queues in the claim statement itself, so a pause takes effect on the very next claim.
CREATE TABLE queues (
    name       text        PRIMARY KEY,
    paused     boolean     NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT queues_name_check CHECK (length(name) BETWEEN 1 AND 255)
);

-- Job events for live views (the HTTP event stream, the dashboard): one notification per statement on
-- <schema>_job_events, never one per row, so bulk statements stay cheap. The payload lists up to 50
-- changed jobs (id, state, type, queue) and the total count; a listener that needs more re-reads.
CREATE FUNCTION notify_job_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload text;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        SELECT json_build_object(
                   'op', 'state', 'count', count(*),
                   'jobs', COALESCE(json_agg(json_build_object('id', n.id, 'state', n.state, 'type', n.type,
                                                               'queue', n.queue, 'attempts', n.attempts))
                                    FILTER (WHERE n.rn <= 50), '[]'::json))::text
          INTO payload
          FROM (SELECT nr.*, row_number() OVER () AS rn
                  FROM changed_new nr JOIN changed_old o ON o.id = nr.id
                 WHERE nr.state <> o.state) n
        HAVING count(*) > 0;
    ELSE
        SELECT json_build_object(
                   'op', 'state', 'count', count(*),
                   'jobs', COALESCE(json_agg(json_build_object('id', n.id, 'state', n.state, 'type', n.type,
                                                               'queue', n.queue, 'attempts', n.attempts))
                                    FILTER (WHERE n.rn <= 50), '[]'::json))::text
          INTO payload
          FROM (SELECT c.*, row_number() OVER () AS rn FROM changed_new c) n
        HAVING count(*) > 0;
    END IF;
    IF payload IS NOT NULL THEN
        PERFORM pg_notify('${flyway:defaultSchema}_job_events', payload);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_events_insert
    AFTER INSERT ON jobs REFERENCING NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION notify_job_events();

CREATE TRIGGER jobs_events_update
    AFTER UPDATE ON jobs REFERENCING OLD TABLE AS changed_old NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION notify_job_events();

CREATE TRIGGER finished_jobs_events_insert
    AFTER INSERT ON finished_jobs REFERENCING NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION notify_job_events();
