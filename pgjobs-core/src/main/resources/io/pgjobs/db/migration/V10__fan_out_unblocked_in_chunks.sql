-- A success with many children unblocks them in chunks after its commit, beside the drain, not all in
-- the statement that ends it (issue 30, acceptance 5: fan-out within 10 % of the same jobs without
-- dependencies).
--
-- Until V9 the statement that ended a parent resolved every edge of it: a root with 49,999 children spent
-- about a second in its completion (the children's update 13.1 us a child, the edges' 5.7, the lock probe
-- 1.3) while every child stayed blocked and the lanes had nothing to run; the children then drained no
-- slower than jobs without dependencies (docs/bench-journal/job-graphs.md, "The fan-out's second").
--
-- Now the trigger looks, for each parent that succeeded, whether it has more edges not resolved than a
-- chunk (the setting pgjobs.unblock_chunk, 1,000 unless a session sets it). Such a parent's edges are not
-- resolved by the trigger: a row in pending_edges, written in the parent's own transaction, says that they
-- are owed, and a notification on '{schema}_edges_pending' wakes the workers. Each worker runs
-- resolve_pending_edges() (JobWorker's "dependents" service) until none is owed: one transaction resolves
-- one chunk of one parent's edges (in child id order, from where the last chunk stopped), counts them down
-- on their children exactly as the trigger does (apply_resolved_edges(), the trigger's own code, moved
-- here unchanged) and moves the parent's row on, or deletes it with the last chunk. The first children are
-- queued within milliseconds of the root's commit and the rest while the first run.
--
-- Durable: the owed row commits with the parent's end, and each chunk commits with its own progress, so a
-- worker killed between chunks leaves the rest to the next worker's look (on a notification, or at its
-- poll every second). FOR UPDATE SKIP LOCKED on the owed row: one worker at a time resolves a parent's
-- edges, and others take other parents. Successes only: a parent that failed or was cancelled resolves
-- its edges in its own statement as before (its cascade of cancellations must lock in one order, V8;
-- failures are the rare case), and so does any parent with no more than a chunk of edges (chains, layers,
-- fan-in, every small graph). A job that succeeded is never retried (retry takes failed and cancelled jobs),
-- so no second end of the parent can meet its owed edges.
--
-- What a reader sees meanwhile: the parent succeeded, some of its edges still without parent_state, and
-- those children still blocked, counting it among the parents they wait for (waiting_on): as if the
-- parent's end were still being written.

CREATE TABLE pending_edges (
    parent_id   uuid PRIMARY KEY,
    -- The last child whose edge a chunk resolved (edges are resolved in child id order); NULL before the first.
    after_child uuid,
    since       timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The trigger's work once it knows the edges it resolved (V9's resolve_dependents() from its lock on, as it
-- was): cancellations of the dependents of a parent that did not succeed, the 'only' children, the children
-- counting down their parents, and the notification of the queues whose jobs it made ready. Called by the
-- trigger and by resolve_pending_edges(), in the transaction that resolved the edges.
CREATE FUNCTION apply_resolved_edges(e_parent uuid[], e_child uuid[], e_policy text[], e_state text[])
    RETURNS void LANGUAGE plpgsql
    SET plan_cache_mode = force_custom_plan
    SET enable_seqscan = off
AS $$
DECLARE
    failing  record;
    doomed   uuid[];
    woken    text[] := '{}';
    fired    text[] := '{}';
    reach    uuid[];
BEGIN
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
END
$$;

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
    chunk    integer := greatest(1, coalesce(nullif(current_setting('pgjobs.unblock_chunk', true), '')::integer, 1000));
    owed     uuid[];
BEGIN
    -- Most statements end no parent (every completion of a queue without graphs): they stop here, at a
    -- look at their transition table that needs no plan of its own.
    IF NOT EXISTS (SELECT 1 FROM ended_rows AS o WHERE o.has_dependents) THEN
        RETURN NULL;
    END IF;
    -- The parents this statement ended, and how each ended (no finished row: it was deleted without one,
    -- which counts as cancelled). Planned at each call, for the size of this call's transition table (V9).
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
    -- V10: the successes with more edges not resolved than a chunk owe them (pending_edges): the workers
    -- resolve them after this commit, a chunk a transaction. One look per parent at no more than a chunk
    -- and one of its edges (the primary key's parent_id prefix), where it reads them all after.
    SELECT array_agg(e.id) INTO owed
      FROM unnest(parents, states) AS e(id, state)
     WHERE e.state = 'succeeded'
       AND EXISTS (SELECT 1 FROM ${flyway:defaultSchema}.job_dependencies AS d
                    WHERE d.parent_id = e.id AND d.parent_state IS NULL
                   OFFSET chunk);
    IF owed IS NOT NULL THEN
        INSERT INTO ${flyway:defaultSchema}.pending_edges (parent_id)
        SELECT o.id FROM unnest(owed) AS o(id) ORDER BY o.id
            ON CONFLICT (parent_id) DO NOTHING;
        PERFORM pg_notify('${flyway:defaultSchema}_edges_pending', '');
        SELECT array_agg(e.id), array_agg(e.state) INTO parents, states
          FROM unnest(parents, states) AS e(id, state)
         WHERE e.id <> ALL (owed);
        IF parents IS NULL THEN
            RETURN NULL;
        END IF;
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
    PERFORM ${flyway:defaultSchema}.apply_resolved_edges(e_parent, e_child, e_policy, e_state);
    RETURN NULL;
END
$$;

-- One chunk of the edges owed by one parent that succeeded (pending_edges), resolved in the caller's
-- transaction: the oldest owed row that no other transaction holds (SKIP LOCKED), its next chunk of edges
-- in child id order, counted down on their children (apply_resolved_edges), and the row moved past them or
-- deleted with the last chunk. Returns the number of edges resolved, or -1 when no owed row was free (none
-- owed, or every one being resolved elsewhere): callers repeat it, one transaction each, until -1.
CREATE FUNCTION resolve_pending_edges() RETURNS integer LANGUAGE plpgsql
    SET plan_cache_mode = force_custom_plan
    SET enable_seqscan = off
AS $$
DECLARE
    chunk    integer := greatest(1, coalesce(nullif(current_setting('pgjobs.unblock_chunk', true), '')::integer, 1000));
    owing    record;
    picked   uuid[];
    e_parent uuid[];
    e_child  uuid[];
    e_policy text[];
    e_state  text[];
BEGIN
    SELECT p.parent_id, p.after_child INTO owing
      FROM ${flyway:defaultSchema}.pending_edges AS p
     ORDER BY p.since, p.parent_id
     LIMIT 1
       FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN -1;
    END IF;
    picked := ARRAY(
        SELECT d.child_id FROM ${flyway:defaultSchema}.job_dependencies AS d
         WHERE d.parent_id = owing.parent_id
           AND d.child_id > coalesce(owing.after_child, '00000000-0000-0000-0000-000000000000'::uuid)
           AND d.parent_state IS NULL
         ORDER BY d.child_id
         LIMIT chunk);
    WITH resolved AS (
        UPDATE ${flyway:defaultSchema}.job_dependencies AS d SET parent_state = 'succeeded'
         WHERE d.parent_id = owing.parent_id AND d.child_id = ANY (picked) AND d.parent_state IS NULL
        RETURNING d.parent_id, d.child_id, d.on_failure, d.parent_state
    )
    SELECT array_agg(r.parent_id), array_agg(r.child_id), array_agg(r.on_failure), array_agg(r.parent_state)
      INTO e_parent, e_child, e_policy, e_state
      FROM resolved AS r;
    IF cardinality(picked) < chunk THEN
        DELETE FROM ${flyway:defaultSchema}.pending_edges WHERE parent_id = owing.parent_id;
    ELSE
        UPDATE ${flyway:defaultSchema}.pending_edges SET after_child = picked[chunk]
         WHERE parent_id = owing.parent_id;
    END IF;
    IF e_child IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM ${flyway:defaultSchema}.apply_resolved_edges(e_parent, e_child, e_policy, e_state);
    RETURN cardinality(e_child);
END
$$;
