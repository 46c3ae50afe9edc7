-- Job dependencies: a job may wait for other jobs (its parents) to finish before it runs. A graph of them
-- is enqueued in one transaction (JobClient.enqueueGraph); fan-out and fan-in are graphs whose jobs have
-- several children or several parents.
--
-- A job that waits is 'blocked': in the hot table, but in none of its ready indexes (they hold 'queued'
-- and 'retrying' only), so a claim never reads it. It holds the count of its parents not finished yet
-- (waiting_on); each parent's end takes one off, in the very statement that ends the parent (a trigger
-- on the parent's DELETE from the hot table, which every way of finishing a job goes through), and the
-- one that takes the last off makes the job 'queued'. Never by polling the graph: a parent finishing
-- touches its own children only. Two parents ending at once in two transactions both update the child's
-- row; the second waits for the first's lock and counts from the row the first left (READ COMMITTED
-- re-reads it), so no end is lost and exactly one of them unblocks the child.
--
-- Jobs without dependents pay one boolean per row: the trigger's WHEN (has_dependents) is false, and a
-- row-level AFTER trigger whose WHEN is false queues nothing.

ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check CHECK (state IN ('queued', 'retrying', 'running', 'blocked'));
-- Parents not finished yet: set on a blocked job only (NULL on every other row). Kept so by the two writers
-- of blocked jobs (DependencySql.BLOCK_WAITING and resolve_dependents below) and not by a CHECK: every
-- write of the hot table evaluates its checks (SchemaConstraintsTest bounds them).
ALTER TABLE jobs ADD COLUMN waiting_on integer;
-- True when another job depends on this one: its end resolves those edges (the trigger below).
ALTER TABLE jobs ADD COLUMN has_dependents boolean NOT NULL DEFAULT false;
-- The blocked jobs per queue, for the queue counts (AdminSql.HOT_COUNTS reads each state through an index,
-- never the heap of a hot table that may keep the pages it once grew to). Other jobs have no entry.
CREATE INDEX jobs_blocked_idx ON jobs (queue) WHERE state = 'blocked';

-- One row per edge: child waits for parent. on_failure says what the child does when the parent ends
-- failed or cancelled: 'cancel' (the default: the child is cancelled, and so are the jobs waiting on it
-- with 'cancel'), 'run' (it runs anyway, as it would after a success) or 'only' (it runs only then, at
-- once; if every parent succeeds it is cancelled as not needed: an "any failed" callback). parent_state is the parent's
-- final state once it ended (NULL before): an edge resolves once, so a parent that is retried after it
-- failed and ends again changes nothing for a child that already ran or was cancelled.
-- Rows stay after they resolve (a child reads its parents' outcomes, the dashboard draws the graph) and
-- go when the child's finished row is pruned.
CREATE TABLE job_dependencies (
    parent_id    uuid NOT NULL,
    child_id     uuid NOT NULL,
    on_failure   text NOT NULL CHECK (on_failure IN ('cancel', 'run', 'only')),
    parent_state text CHECK (parent_state IN ('succeeded', 'failed', 'cancelled')),
    PRIMARY KEY (parent_id, child_id)
);
CREATE INDEX job_dependencies_child_idx ON job_dependencies (child_id);

-- A graph's idempotency key (JobGraph.Builder.idempotencyKey): what the enqueue under it asked for (the
-- fingerprint of every job, its options and its edges) and the jobs it made (name -> id), so that a retry
-- of the same graph under the key stores nothing and answers those jobs. Written in the enqueue's own
-- transaction, first: a second enqueue under the key waits for the first to commit or roll back. Pruned
-- with the finished row of the graph's first job.
CREATE TABLE graph_keys (
    idempotency_key text PRIMARY KEY CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint     text NOT NULL,
    first_job       uuid NOT NULL,
    jobs            jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX graph_keys_first_job_idx ON graph_keys (first_job);

-- The name each job of a graph had in it (JobGraph.Builder.add), for the graph's readers (the API, the
-- dashboard's drawing). Kept beside the hot table, not in it; pruned with the job's finished row.
CREATE TABLE job_graph_names (
    job_id uuid PRIMARY KEY,
    name   text NOT NULL CHECK (length(name) BETWEEN 1 AND 255)
);


-- Moves blocked jobs to finished_jobs as cancelled, with an error of kind 'dependency' saying why. Their
-- own dependents are resolved by the trigger below as their rows leave the hot table. Returns how many.
CREATE FUNCTION cancel_blocked_jobs(p_ids uuid[], p_message text) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    WITH cancelled AS (
        DELETE FROM ${flyway:defaultSchema}.jobs AS j
         WHERE j.id = ANY (p_ids) AND j.state = 'blocked'
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

-- A parent left the hot table (it finished: moved to finished_jobs by the same statement; or was deleted
-- outright, which counts as cancelled). Resolves its edges, each by its policy:
--   'cancel' (the default): if the parent did not succeed, the child is cancelled, with every blocked job
--            that waits on it through 'cancel' edges (found in one recursive query and cancelled in one
--            statement, so the cascade nests one trigger level, not one per generation); else as 'run'.
--   'run':   the child counts one parent less; the one that takes the last off queues it.
--   'only':  (a job that runs only if one of its parents fails, such as an "any failed" callback; all its
--            edges are 'only') a failure queues the child at once; a success counts one parent less, and
--            the last success cancels it: it was not needed.
-- The queues of the jobs queued are woken.
CREATE FUNCTION resolve_dependents() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    outcome  text;
    doomed   uuid[];
    woken    text[];
    fired    text[];
    children uuid[];
    policies text[];
BEGIN
    SELECT f.state INTO outcome FROM ${flyway:defaultSchema}.finished_jobs AS f WHERE f.id = OLD.id;
    outcome := coalesce(outcome, 'cancelled');
    -- Only the edges not resolved yet: a parent retried after it ended resolves nothing twice.
    WITH resolved AS (
        UPDATE ${flyway:defaultSchema}.job_dependencies AS d SET parent_state = outcome
         WHERE d.parent_id = OLD.id AND d.parent_state IS NULL
        RETURNING d.child_id, d.on_failure
    )
    SELECT array_agg(r.child_id), array_agg(r.on_failure) INTO children, policies FROM resolved AS r;
    IF children IS NULL THEN
        RETURN NULL;
    END IF;
    -- The children's rows, locked in id order before anything is decided about them: a parent ending at
    -- the same time in another transaction waits here until this one commits, and every statement below
    -- (each with a snapshot of its own) reads what the other left. In id order, so that two parents ending
    -- at once never lock their shared children in opposite orders.
    PERFORM 1 FROM ${flyway:defaultSchema}.jobs AS j WHERE j.id = ANY (children) ORDER BY j.id FOR UPDATE;
    IF outcome <> 'succeeded' THEN
        WITH RECURSIVE gone(id) AS (
            SELECT e.child_id FROM unnest(children, policies) AS e(child_id, on_failure)
             WHERE e.on_failure = 'cancel'
          UNION
            SELECT d.child_id FROM ${flyway:defaultSchema}.job_dependencies AS d JOIN gone AS g ON d.parent_id = g.id
             WHERE d.on_failure = 'cancel' AND d.parent_state IS NULL
        )
        SELECT coalesce(array_agg(j.id), '{}') INTO doomed
          FROM ${flyway:defaultSchema}.jobs AS j
         WHERE j.id IN (SELECT g.id FROM gone AS g) AND j.state = 'blocked';
        IF cardinality(doomed) > 0 THEN
            PERFORM ${flyway:defaultSchema}.cancel_blocked_jobs(doomed,
                'cancelled: a job it depends on ended ' || outcome || ' (job ' || OLD.id || ', or a job between them)');
        END IF;
        -- 'only' children run now, whatever their other parents do.
        WITH queued AS (
            UPDATE ${flyway:defaultSchema}.jobs AS j SET waiting_on = NULL, state = 'queued'
             WHERE j.id IN (SELECT e.child_id FROM unnest(children, policies) AS e(child_id, on_failure)
                             WHERE e.on_failure = 'only')
               AND j.state = 'blocked'
            RETURNING j.queue
        )
        SELECT coalesce(array_agg(DISTINCT q.queue::text), '{}') INTO fired FROM queued AS q;
    END IF;
    -- 'only' children whose last parent just succeeded were not needed: cancelled.
    PERFORM ${flyway:defaultSchema}.cancel_blocked_jobs(array_agg(j.id),
                'not needed: it was to run if a job it watched failed, and every one succeeded')
       FROM ${flyway:defaultSchema}.jobs AS j
       JOIN (SELECT e.child_id, count(*) AS n FROM unnest(children, policies) AS e(child_id, on_failure)
              WHERE e.on_failure = 'only' AND outcome = 'succeeded'
              GROUP BY e.child_id) AS e ON e.child_id = j.id
      WHERE j.state = 'blocked' AND j.waiting_on <= e.n
     HAVING count(*) > 0;
    -- The other children still blocked count this parent as ended.
    WITH ended AS (
        SELECT e.child_id, count(*) AS n FROM unnest(children, policies) AS e(child_id, on_failure)
         WHERE e.on_failure <> 'only' OR outcome = 'succeeded'
         GROUP BY e.child_id
    ), unblocked AS (
        UPDATE ${flyway:defaultSchema}.jobs AS j
           SET waiting_on = CASE WHEN j.waiting_on - e.n > 0 THEN j.waiting_on - e.n END,
               state = CASE WHEN j.waiting_on - e.n > 0 THEN 'blocked' ELSE 'queued' END
          FROM ended AS e
         WHERE j.id = e.child_id AND j.state = 'blocked'
        RETURNING j.queue, j.state
    )
    SELECT coalesce(array_agg(DISTINCT u.queue::text), '{}') INTO woken FROM unblocked AS u WHERE u.state = 'queued';
    PERFORM pg_notify('${flyway:defaultSchema}_jobs_ready', w)
       FROM (SELECT DISTINCT w FROM unnest(woken || fired) AS w) AS q;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_resolve_dependents AFTER DELETE ON jobs
    FOR EACH ROW WHEN (OLD.has_dependents) EXECUTE FUNCTION resolve_dependents();
