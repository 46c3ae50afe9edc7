-- Job dependencies resolved once per statement, not once per parent (issue 30, acceptance 5).
--
-- V3 resolved a parent's edges in a row trigger: about 0.9 ms of PL/pgSQL per parent, run inside the
-- completer's batch. A drain of 200 chains of 50 spent 8.4 s of its 18 s there, and a fan-in's callback
-- row was updated once per parent. Here one statement-level trigger takes every parent the statement
-- ended (its transition table) and resolves all their edges in a handful of set-based statements: each
-- child is locked and updated once per statement, however many of its parents ended in it.
--
-- Every way a job ends deletes it from the hot table, so this trigger still sees every end, in the
-- statement that ends it. A statement that ended no parent (every statement of a queue without graphs)
-- pays the capture of its deleted rows into the transition table and one look at them.
--
-- A job unblocked is due from the moment it is (its run_at, unless that is later): claims resume past
-- the last job they took, in (run_at, id) order (ClaimCursor), and a job due since its graph was enqueued
-- would sort behind them and wait for the next look behind the cursor, up to a second.
--
-- The index lookups are written so that the planner has no choice to make over the large tables:
-- job_dependencies is read by its primary key's parent_id prefix (= ANY, or a LATERAL per row), jobs by
-- its primary key (= ANY).

-- An edge is written twice: by its graph's COPY, then once when its parent ends (parent_state). Pages
-- kept half empty let that update stay on the edge's page without new index entries (a HOT update).
ALTER TABLE job_dependencies SET (fillfactor = 50);

-- A workflow run awaiting the jobs it started (WorkflowContext.awaitJobs) records them as a step of kind
-- 'jobs' (their ids), and waits for them as a job of a graph waits for its parents.
ALTER TABLE workflow_steps DROP CONSTRAINT workflow_steps_kind_check;
ALTER TABLE workflow_steps ADD CONSTRAINT workflow_steps_kind_check
    CHECK (kind IN ('step', 'sleep', 'signal', 'jobs'));

DROP TRIGGER jobs_resolve_dependents ON jobs;
DROP FUNCTION resolve_dependents();

-- Plans: every statement is planned for its arrays at each call (a generic plan cached while the tables
-- were small kept reading job_dependencies whole, 196 sequential scans in 10 s, once it held 350,000
-- edges that autovacuum had not yet analyzed), and never by a sequential scan of the large tables.
CREATE FUNCTION resolve_dependents() RETURNS trigger LANGUAGE plpgsql
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
BEGIN
    -- The parents this statement ended, and how each ended (no finished row: it was deleted without one,
    -- which counts as cancelled).
    SELECT array_agg(o.id), array_agg(coalesce(f.state, 'cancelled'))
      INTO parents, states
      FROM ended_rows AS o
      LEFT JOIN LATERAL (SELECT s.state FROM ${flyway:defaultSchema}.finished_jobs AS s WHERE s.id = o.id) AS f ON true
     WHERE o.has_dependents;
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
    PERFORM 1 FROM ${flyway:defaultSchema}.jobs AS j
      WHERE j.id = ANY (e_child) AND j.waiting_on > 1
      ORDER BY j.id FOR UPDATE;

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
         WHERE j.id = ANY (ARRAY(SELECT g.id FROM gone AS g)) AND j.state = 'blocked';
        IF cardinality(doomed) > 0 THEN
            PERFORM ${flyway:defaultSchema}.cancel_blocked_jobs(doomed,
                'cancelled: a job it depends on ended ' || failing.state || ' (job ' || failing.parent
                    || ', or a job between them)');
        END IF;
    END LOOP;

    -- 'only' children of a parent that did not succeed run now, whatever their other parents do.
    WITH queued AS (
        UPDATE ${flyway:defaultSchema}.jobs AS j
           SET waiting_on = NULL, state = 'queued', run_at = greatest(j.run_at, clock_timestamp())
         WHERE j.id = ANY (ARRAY(
                   SELECT e.child FROM unnest(e_child, e_policy, e_state) AS e(child, policy, state)
                    WHERE e.policy = 'only' AND e.state <> 'succeeded'))
           AND j.state = 'blocked'
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
      WHERE j.id = ANY (e_child) AND j.state = 'blocked' AND j.waiting_on <= e.n
     HAVING count(*) > 0;

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
         WHERE j.id = ANY (e_child) AND j.id = e.child AND j.state = 'blocked'
        RETURNING j.queue, j.state
    )
    SELECT coalesce(array_agg(DISTINCT u.queue::text), '{}') INTO woken FROM unblocked AS u WHERE u.state = 'queued';
    PERFORM pg_notify('${flyway:defaultSchema}_jobs_ready', w)
       FROM (SELECT DISTINCT w FROM unnest(woken || fired) AS w) AS q;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_resolve_dependents AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS ended_rows
    FOR EACH STATEMENT EXECUTE FUNCTION resolve_dependents();
