-- pgjobs schema, version 6: job events that always fit in a notification.
--
-- PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more, and the error aborts the statement that
-- sends it. Version 5's event listed up to 50 jobs with their type and queue names, each up to 255
-- characters: about 30 kB at worst, so a claim, a success batch, a cancel or a rescue of jobs with long
-- names failed outright (a 60-character type with a 50-job claim was enough). A notification is only a
-- hint for live views; it must never be the reason a state transition fails.
--
-- Now the event lists the first jobs (at most 50, in the order the statement produced them) only while
-- the running total of their JSON entries' bytes stays within 7,000, which leaves room for the envelope
-- and the separators. An entry is at most about 3,200 bytes (names are cut to 255 characters, and a
-- character takes at most 6 bytes in JSON), so the first job is always listed. "count" stays the number
-- of jobs the statement changed and "truncated" says whether some were left out; a listener that must
-- see every job re-reads then. JobSql builds the events of pgjobs' inserting statements the same way.
--
-- Cost (this runs on every claim and every completion batch): still one count of the transition table
-- and JSON for 50 rows at most, plus a running sum over those 50 and their sort by number. Measured with
-- EXPLAIN ANALYZE on a 1,000-row state UPDATE (PostgreSQL 15, one session, median of 70): trigger time
-- from 0.10-0.12 ms to 0.13-0.14 ms. (Summing without the row numbers, OVER (ROWS UNBOUNDED PRECEDING),
-- measured slower: 0.17 ms.)

CREATE OR REPLACE FUNCTION notify_job_events() RETURNS trigger LANGUAGE plpgsql AS $$
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
