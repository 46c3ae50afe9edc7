-- The dependency trigger finds the children it changes by their primary key, whatever the statistics say.
--
-- Each statement of resolve_dependents() (V8) and of cancel_blocked_jobs() (V3) that reads children said
-- "j.id = ANY (ids) AND j.state = 'blocked'". That predicate makes jobs_blocked_idx (queue) WHERE state =
-- 'blocked' usable, and with the hot table's statistics taken before a graph's blocked jobs came in (they
-- came in by one COPY; an analyze of the table sees them only later, and W3G's drains end before it), the
-- planner priced that index at one row and read it whole, filtering every blocked job by the array: in a
-- drain of 1,000 chains of 50, each completion's children update (~430 children) read 49,000 entries,
-- 15 ms; the update took 18.5 us a child (the floor's bare UPDATE: 4.8 us), half of the chains' drain
-- (docs/bench-journal/job-graphs.md). Compared with (SELECT 'blocked'), a value the planner sees only when
-- the statement runs, the state no longer proves the partial index's predicate: the children are read by
-- the primary key (= ANY), as the functions meant.
--
-- And the trigger's first look, at how the parents it ended ended, is planned at each call for its
-- transition table's size (below, where it is done). Nothing else changes.

CREATE OR REPLACE FUNCTION resolve_dependents() RETURNS trigger LANGUAGE plpgsql
    SET plan_cache_mode = force_custom_plan
    SET enable_seqscan = off
AS $$
DECLARE
    parents  uuid[];
    states   text[];
    e_parent uuid[];
    e_child  uuid[];
    e_policy text[];
    e_state  text[];
    failing  record;
    doomed   uuid[];
    woken    text[] := '{}';
    fired    text[] := '{}';
    reach    uuid[];
BEGIN
    -- Most statements end no parent (every completion of a queue without graphs): they stop here, at a
    -- look at their transition table that needs no plan of its own.
    IF NOT EXISTS (SELECT 1 FROM ended_rows AS o WHERE o.has_dependents) THEN
        RETURN NULL;
    END IF;
    -- The parents this statement ended, and how each ended (no finished row: it was deleted without one,
    -- which counts as cancelled).
    -- V9: planned at each call, for the size of this call's transition table. Written as a plain
    -- statement it names no variable, so PL/pgSQL planned it once per session, at its first call, and
    -- kept that plan: a completer whose first batch ended two parents kept a nested loop probing each
    -- parent's finished row through BitmapAnd of the partition's finished_at index, whose "= now()"
    -- matches every row the statement wrote, and its id index; at 1,000 parents a batch that read a
    -- million index entries (W3G's fan-in: 11.7 ms a batch). Planned for 1,000 rows it is a hash join.
    EXECUTE $q$
        SELECT array_agg(o.id), array_agg(coalesce(f.state, 'cancelled'))
          FROM ended_rows AS o
          LEFT JOIN LATERAL (SELECT s.state FROM ${flyway:defaultSchema}.finished_jobs AS s
                              WHERE s.id = o.id AND s.finished_at = now()) AS f ON true
         WHERE o.has_dependents$q$
      INTO parents, states;
    IF parents IS NULL THEN
        RETURN NULL;
    END IF;
    -- Their edges not resolved yet: an edge resolves once (a parent retried after it ended resolves
    -- nothing twice).
    WITH ended AS (
        SELECT * FROM unnest(parents, states) AS e(id, state)
    ), resolved AS (
        UPDATE ${flyway:defaultSchema}.job_dependencies AS d SET parent_state = e.state
          FROM ended AS e
         WHERE d.parent_id = ANY (parents) AND d.parent_id = e.id AND d.parent_state IS NULL
        RETURNING d.parent_id, d.child_id, d.on_failure, d.parent_state
    )
    SELECT array_agg(r.parent_id), array_agg(r.child_id), array_agg(r.on_failure), array_agg(r.parent_state)
      INTO e_parent, e_child, e_policy, e_state
      FROM resolved AS r;
    IF e_child IS NULL THEN
        RETURN NULL;
    END IF;
    -- The rows of the children that wait for other parents too, locked in id order before anything is
    -- decided about them: a parent ending at the same time in another transaction waits here until this
    -- one commits, and every statement below (each with a snapshot of its own) reads what the other left.
    -- In id order, so that two statements ending parents of shared children never lock them in opposite
    -- orders. A child waiting for one parent only waits for one of this statement's (no other end can
    -- touch its count), and its update below locks it anyway: not locking it first saves a write of each
    -- row of a fan-out or a chain.
    --
    -- V8: when a parent did not succeed, the same ordered lock also takes every blocked job its 'cancel'
    -- edges reach (the cascade below cancels them all) and the children of those (their cancellation
    -- counts on them, in the trigger it fires). Before, the cascade locked those rows later, as it
    -- deleted them: holding a child locked here, it could wait for a grandchild that another statement,
    -- ending another parent of both, had locked first and that waited in turn for the child; PostgreSQL
    -- aborted one of the two (JobGraphTest#aCascadeAndAnotherEndOfTheSameJobsParentsLockInOneOrder).
    -- The walk is read before the lock: a job that joins the reach between the two is locked by the
    -- cancellation itself, as before V8. Successes, the common case, lock what they locked before.
    IF EXISTS (SELECT 1 FROM unnest(e_policy, e_state) AS e(policy, state)
                WHERE e.policy = 'cancel' AND e.state <> 'succeeded') THEN
        WITH RECURSIVE gone(id) AS (
            SELECT e.child
              FROM unnest(e_child, e_policy, e_state) AS e(child, policy, state)
             WHERE e.policy = 'cancel' AND e.state <> 'succeeded'
          UNION
            SELECT n.child_id
              FROM gone AS g
             CROSS JOIN LATERAL (
                   SELECT d.child_id FROM ${flyway:defaultSchema}.job_dependencies AS d
                    WHERE d.parent_id = g.id AND d.on_failure = 'cancel' AND d.parent_state IS NULL) AS n
        )
        SELECT array_agg(x.id) INTO reach
          FROM (SELECT g.id FROM gone AS g
                UNION
                SELECT d.child_id
                  FROM gone AS g
                  JOIN ${flyway:defaultSchema}.job_dependencies AS d ON d.parent_id = g.id
                 WHERE d.parent_state IS NULL) AS x;
    END IF;
    IF reach IS NULL THEN
        PERFORM 1 FROM ${flyway:defaultSchema}.jobs AS j
          WHERE j.id = ANY (e_child) AND j.waiting_on > 1
          ORDER BY j.id FOR UPDATE;
    ELSE
        PERFORM 1 FROM ${flyway:defaultSchema}.jobs AS j
          WHERE j.id = ANY (e_child || reach) AND j.state = (SELECT 'blocked')
            AND (j.waiting_on > 1 OR j.id = ANY (reach))
          ORDER BY j.id FOR UPDATE;
    END IF;

    -- A parent that did not succeed cancels the children of its 'cancel' edges, and what waits on them
    -- through 'cancel' edges in turn; one parent at a time, so each cancelled job names the parent whose
    -- end cancelled it (failures are the rare case).
    FOR failing IN
        SELECT DISTINCT e.parent, e.state
          FROM unnest(e_parent, e_policy, e_state) AS e(parent, policy, state)
         WHERE e.policy = 'cancel' AND e.state <> 'succeeded'
    LOOP
        WITH RECURSIVE gone(id) AS (
            SELECT e.child
              FROM unnest(e_parent, e_child, e_policy) AS e(parent, child, policy)
             WHERE e.parent = failing.parent AND e.policy = 'cancel'
          UNION
            SELECT n.child_id
              FROM gone AS g
             CROSS JOIN LATERAL (
                   SELECT d.child_id FROM ${flyway:defaultSchema}.job_dependencies AS d
                    WHERE d.parent_id = g.id AND d.on_failure = 'cancel' AND d.parent_state IS NULL) AS n
        )
        SELECT coalesce(array_agg(j.id), '{}') INTO doomed
          FROM ${flyway:defaultSchema}.jobs AS j
         WHERE j.id = ANY (ARRAY(SELECT g.id FROM gone AS g)) AND j.state = (SELECT 'blocked');
        IF cardinality(doomed) > 0 THEN
            PERFORM ${flyway:defaultSchema}.cancel_blocked_jobs(doomed,
                'cancelled: a job it depends on ended ' || failing.state || ' (job ' || failing.parent
                    || ', or a job between them)');
        END IF;
    END LOOP;

    IF 'only' = ANY (e_policy) THEN
        -- 'only' children of a parent that did not succeed run now, whatever their other parents do.
        WITH queued AS (
            UPDATE ${flyway:defaultSchema}.jobs AS j
               SET waiting_on = NULL, state = 'queued', run_at = greatest(j.run_at, clock_timestamp())
             WHERE j.id = ANY (ARRAY(
                       SELECT e.child FROM unnest(e_child, e_policy, e_state) AS e(child, policy, state)
                        WHERE e.policy = 'only' AND e.state <> 'succeeded'))
               AND j.state = (SELECT 'blocked')
            RETURNING j.queue
        )
        SELECT coalesce(array_agg(DISTINCT q.queue::text), '{}') INTO fired FROM queued AS q;

        -- 'only' children whose last parents just succeeded were not needed: cancelled.
        PERFORM ${flyway:defaultSchema}.cancel_blocked_jobs(array_agg(j.id),
                    'not needed: it was to run if a job it watched failed, and every one succeeded')
           FROM ${flyway:defaultSchema}.jobs AS j
           JOIN (SELECT e.child, count(*) AS n FROM unnest(e_child, e_policy, e_state) AS e(child, policy, state)
                  WHERE e.policy = 'only' AND e.state = 'succeeded'
                  GROUP BY e.child) AS e ON e.child = j.id
          WHERE j.id = ANY (e_child) AND j.state = (SELECT 'blocked') AND j.waiting_on <= e.n
         HAVING count(*) > 0;
    END IF;

    -- The other children still blocked count their ended parents: queued once none is left.
    WITH ended AS (
        SELECT e.child, count(*) AS n FROM unnest(e_child, e_policy, e_state) AS e(child, policy, state)
         WHERE e.policy <> 'only' OR e.state = 'succeeded'
         GROUP BY e.child
    ), unblocked AS (
        UPDATE ${flyway:defaultSchema}.jobs AS j
           SET waiting_on = CASE WHEN j.waiting_on - e.n > 0 THEN j.waiting_on - e.n END,
               state = CASE WHEN j.waiting_on - e.n > 0 THEN 'blocked' ELSE 'queued' END,
               run_at = CASE WHEN j.waiting_on - e.n > 0 THEN j.run_at
                             ELSE greatest(j.run_at, clock_timestamp()) END
          FROM ended AS e
         WHERE j.id = ANY (e_child) AND j.id = e.child AND j.state = (SELECT 'blocked')
        RETURNING j.queue, j.state
    )
    SELECT coalesce(array_agg(DISTINCT u.queue::text), '{}') INTO woken FROM unblocked AS u WHERE u.state = 'queued';
    PERFORM pg_notify('${flyway:defaultSchema}_jobs_ready', w)
       FROM (SELECT DISTINCT w FROM unnest(woken || fired) AS w) AS q;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION cancel_blocked_jobs(p_ids uuid[], p_message text) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    WITH cancelled AS (
        DELETE FROM ${flyway:defaultSchema}.jobs AS j
         WHERE j.id = ANY (p_ids) AND j.state = (SELECT 'blocked')
        RETURNING j.*
    )
    INSERT INTO ${flyway:defaultSchema}.finished_jobs
           (id, type, queue, payload, priority, state, attempts, max_attempts, run_at, created_at,
            attempted_at, locked_by, context, idempotency_key, timeout_ms, progress_percent,
            progress_message, errors, output, finished_at, claim_token, parent_id, capability,
            trace_context, snoozes)
    SELECT c.id, c.type, c.queue, c.payload, c.priority, 'cancelled', c.attempts, c.max_attempts,
           c.run_at, c.created_at, c.attempted_at, c.locked_by, c.context, c.idempotency_key,
           c.timeout_ms, c.progress_percent, c.progress_message,
           c.errors || jsonb_build_array(jsonb_build_object(
               'attempt', c.attempts,
               'at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
               'kind', 'dependency', 'errorClass', NULL, 'message', p_message,
               'stackHead', NULL, 'worker', NULL)),
           NULL, now(), NULL, c.parent_id, c.capability, c.trace_context, c.snoozes
      FROM cancelled AS c;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
