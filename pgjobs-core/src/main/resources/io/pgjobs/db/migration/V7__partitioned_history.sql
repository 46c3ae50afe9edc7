-- finished_jobs partitioned by finished_at (issue 31, section 3: the history at 100 million rows).
--
-- Until V7 the history was one table pruned by batched DELETEs: every pruned job left a dead tuple in the
-- table and in each of its seven indexes for vacuum to find, and each pass got slower as the table grew.
-- From V7 the history is a table partitioned by RANGE (finished_at). The maintenance leader makes the
-- partitions ahead of time (ensure_history_partitions) and prunes by dropping a whole partition once its
-- upper bound is past the retention (drop_history_partition): no dead tuple, and a cost that does not grow
-- with the history. A finished job is therefore kept at least the retention and at most the retention plus
-- one partition's width (FinishedJobPruner picks the width from the retention: about a twelfth of it).
--
-- Every finished row is written with finished_at = now() (the moving statements in JobSql and V3's
-- cancel_dependents), so a row always lands in the partition of the hour (or width) it finished in. A row
-- whose time no partition covers (maintenance did not run for longer than the partitions made ahead)
-- lands in finished_jobs_default, which is pruned row by row as the whole table was before.
--
-- What changes for readers: the table has no primary key any more (a partitioned table's unique index
-- must hold the partition key; a job id is still in at most one row, as every finished row is moved out
-- of jobs by the statement that deletes it there), and a lookup by id alone reads each partition's id
-- index. Lookups bound finished_at so that pruning leaves the other partitions out: the dependency
-- trigger to now()'s partition (V7's resolve_dependents below), a lookup of one job to the partitions
-- from its creation on (JobLookup).

-- ============================================================== the old table becomes the first partition

ALTER TABLE finished_jobs RENAME TO finished_jobs_before_v7;
ALTER INDEX finished_jobs_pkey RENAME TO finished_jobs_before_v7_pkey;
ALTER INDEX finished_jobs_finished_at_idx RENAME TO finished_jobs_before_v7_finished_at_idx;
ALTER INDEX finished_jobs_failed_idx RENAME TO finished_jobs_before_v7_failed_idx;
ALTER INDEX finished_jobs_type_id_idx RENAME TO finished_jobs_before_v7_type_id_idx;
ALTER INDEX finished_jobs_queue_id_idx RENAME TO finished_jobs_before_v7_queue_id_idx;
-- The created_after/created_before filters of the list read the jobs' ids (UUIDv7, whose first 48 bits are
-- the time the enqueue was called) from V7 on, through the id index: this index is no longer read, and no
-- longer written by every finished job.
DROP INDEX finished_jobs_created_at_idx;
ALTER INDEX finished_jobs_parent_idx RENAME TO finished_jobs_before_v7_parent_idx;
ALTER INDEX IF EXISTS finished_jobs_text_trgm_idx RENAME TO finished_jobs_before_v7_text_trgm_idx;
DROP TRIGGER finished_jobs_events_insert ON finished_jobs_before_v7;

CREATE TABLE finished_jobs (LIKE finished_jobs_before_v7 INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (finished_at);

-- V1's indexes but the one on created_at (above), and one on id in place of the primary key. Each partition
-- has its own.
CREATE INDEX finished_jobs_id_idx ON finished_jobs (id);
CREATE INDEX finished_jobs_finished_at_idx ON finished_jobs (finished_at);
CREATE INDEX finished_jobs_failed_idx ON finished_jobs (type, finished_at DESC) WHERE state = 'failed';
CREATE INDEX finished_jobs_type_id_idx ON finished_jobs (type, id);
CREATE INDEX finished_jobs_queue_id_idx ON finished_jobs (queue, id);
CREATE INDEX finished_jobs_parent_idx ON finished_jobs (parent_id) WHERE parent_id IS NOT NULL;

CREATE TRIGGER finished_jobs_events_insert
    AFTER INSERT ON finished_jobs REFERENCING NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION notify_job_events();

-- Rows no partition's range covers. Normally empty; pruned by DELETE (FinishedJobPruner).
CREATE TABLE finished_jobs_default PARTITION OF finished_jobs DEFAULT;

-- The old rows stay where they are, as the partition of everything up to the next hour: it is dropped
-- whole when that hour is past the retention. An empty old table is dropped now (and with it an
-- operator's trigram index on it: see the end of this file). (Attaching scans the old
-- table once to check its rows, and builds its id index: on a large history this migration takes a while.)
DO $pgjobs$
DECLARE
    newest timestamptz;
    bound  timestamptz;
BEGIN
    SELECT max(finished_at) INTO newest FROM finished_jobs_before_v7;
    IF newest IS NULL THEN
        DROP TABLE finished_jobs_before_v7;
    ELSE
        bound := date_bin('1 hour', greatest(newest, now()), timestamptz '2000-01-01 00:00:00+00') + interval '1 hour';
        EXECUTE format('ALTER TABLE finished_jobs ATTACH PARTITION finished_jobs_before_v7 FOR VALUES FROM (MINVALUE) TO (%L)',
                       bound);
    END IF;
END
$pgjobs$;


-- ================================================================================= the partitions' bounds

-- The partitions of finished_jobs other than the default one, with their bounds (lo is NULL for MINVALUE).
-- Read from the catalog's bound expressions, printed and read back under one fixed DateStyle and time zone
-- (the function's own settings), so the caller's settings cannot change what is parsed.
CREATE FUNCTION history_partitions() RETURNS TABLE (partition_name text, lo timestamptz, hi timestamptz)
    LANGUAGE sql STABLE
    SET datestyle = 'ISO, YMD'
    SET timezone = 'UTC'
AS $$
    SELECT c.relname::text,
           CASE WHEN b[1] = 'MINVALUE' THEN NULL ELSE btrim(b[1], '''')::timestamptz END,
           btrim(b[2], '''')::timestamptz
      FROM pg_inherits AS i
      JOIN pg_class AS c ON c.oid = i.inhrelid
     CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), '^FOR VALUES FROM \((.*)\) TO \((.*)\)$') AS b
     WHERE i.inhparent = '${flyway:defaultSchema}.finished_jobs'::regclass
       AND b IS NOT NULL
$$;

-- Makes the partitions that cover from the last one's upper bound (or from now) to now() + ahead, each
-- `width` wide and aligned on multiples of it counted from 2000-01-01 00:00 UTC (a day's partitions start
-- at midnight UTC whatever the session's time zone). A new partition starts above the newest row of the
-- default partition (attaching a range that holds rows of the default partition fails), and never before
-- the current `width` slot: no empty partitions are made for a past in which maintenance did not run.
-- Each is created empty and attached, which takes a SHARE UPDATE EXCLUSIVE lock on finished_jobs (writers
-- and readers go on) and a short ACCESS EXCLUSIVE lock on the default partition; a lock not granted
-- within 200 ms fails the call, and the next maintenance pass tries again. Returns how many it made.
CREATE FUNCTION ensure_history_partitions(width interval, ahead interval) RETURNS integer
    LANGUAGE plpgsql
    SET datestyle = 'ISO, YMD'
    SET timezone = 'UTC'
    SET lock_timeout = '200ms'
AS $$
DECLARE
    origin  constant timestamptz := timestamptz '2000-01-01 00:00:00+00';
    lo      timestamptz;
    hi      timestamptz;
    stray   timestamptz;
    made    integer := 0;
    name    text;
BEGIN
    IF width IS NULL OR width < interval '1 minute' OR width > interval '7 days' THEN
        RAISE EXCEPTION 'pgjobs: a history partition is 1 minute to 7 days wide, not %', width;
    END IF;
    SELECT max(p.hi) INTO lo FROM ${flyway:defaultSchema}.history_partitions() AS p;
    lo := greatest(coalesce(lo, '-infinity'), date_bin(width, now(), origin));
    SELECT max(d.finished_at) INTO stray FROM ${flyway:defaultSchema}.finished_jobs_default AS d;
    IF stray >= lo THEN
        lo := date_bin(width, stray, origin) + width;
    END IF;
    WHILE lo < now() + ahead LOOP
        hi := date_bin(width, lo, origin) + width;
        name := 'finished_jobs_' || to_char(lo, 'YYYYMMDD"_"HH24MI');  -- UTC: the function's time zone
        EXECUTE format('CREATE TABLE %I.%I (LIKE %I.finished_jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                       '${flyway:defaultSchema}', name, '${flyway:defaultSchema}');
        EXECUTE format('ALTER TABLE %I.finished_jobs ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                       '${flyway:defaultSchema}', '${flyway:defaultSchema}', name, lo, hi);
        made := made + 1;
        lo := hi;
    END LOOP;
    RETURN made;
END
$$;

-- Detaches the oldest partition whose upper bound is at or before the cutoff (now() - retention), after
-- deleting what belongs to its jobs in the side tables (as the default partition's pruning deletes them
-- for its rows): idempotency keys, the dependency edges they were the child of, their names in their
-- graphs, the keys of the graphs they were the first job of, the steps and signals of the workflow runs
-- they were, and its counts. The caller then drops the detached table in a transaction of its own
-- (WorkerStore.dropHistoryPartition): a DROP unlinks the table's files at commit, about 1 s for a
-- partition of 4,000,000 jobs here, and done in this transaction it would hold the ACCESS EXCLUSIVE lock
-- on finished_jobs that the DETACH takes (completions wait for it) for that long. The DETACH comes last
-- and waits at most 200 ms for its lock, else fails (the next pass tries again). Returns the partition's
-- name and its row count as the statistics estimate it (counting would read the partition), or no row
-- when no partition is past the cutoff.
CREATE FUNCTION drop_history_partition(cutoff timestamptz)
    RETURNS TABLE (partition_name text, approximate_rows bigint)
    LANGUAGE plpgsql
    SET lock_timeout = '200ms'
AS $$
DECLARE
    victim text;
    s      text := '${flyway:defaultSchema}';
BEGIN
    SELECT p.partition_name INTO victim
      FROM ${flyway:defaultSchema}.history_partitions() AS p
     WHERE p.hi <= cutoff
     ORDER BY p.hi
     LIMIT 1;
    IF victim IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format('DELETE FROM %1$I.job_keys AS k USING %1$I.%2$I AS f
                     WHERE k.job_id = f.id AND k.idempotency_key = f.idempotency_key', s, victim);
    EXECUTE format('DELETE FROM %1$I.job_dependencies AS d USING %1$I.%2$I AS f WHERE d.child_id = f.id', s, victim);
    EXECUTE format('DELETE FROM %1$I.job_graph_names AS n USING %1$I.%2$I AS f WHERE n.job_id = f.id', s, victim);
    EXECUTE format('DELETE FROM %1$I.graph_keys AS g USING %1$I.%2$I AS f WHERE g.first_job = f.id', s, victim);
    EXECUTE format('DELETE FROM %1$I.workflow_steps AS w USING %1$I.%2$I AS f WHERE w.run_id = f.id', s, victim);
    EXECUTE format('DELETE FROM %1$I.workflow_signals AS w USING %1$I.%2$I AS f WHERE w.run_id = f.id', s, victim);
    DELETE FROM ${flyway:defaultSchema}.history_counts AS c WHERE c.partition_name = victim;
    DELETE FROM ${flyway:defaultSchema}.history_counted AS c WHERE c.partition_name = victim;
    partition_name := victim;
    SELECT greatest(c.reltuples, 0)::bigint INTO approximate_rows
      FROM pg_class AS c WHERE c.oid = format('%I.%I', s, victim)::regclass;
    EXECUTE format('ALTER TABLE %I.finished_jobs DETACH PARTITION %I.%I', s, s, victim);
    RETURN NEXT;
END
$$;

-- ============================================================== counts of the history per queue and state

-- The queue overview counts finished jobs per queue and state. Counting the whole history at each call
-- reads all of it (about 100 s at 100 million rows). A partition past its upper bound takes no more rows
-- (every row is written with finished_at = now() of its transaction), so its counts are taken once, by
-- the maintenance leader, and kept here; the overview adds the counts of the partitions not counted yet
-- (the current one, those ahead, the default one). Deletes from a counted partition (a retry by hand, an
-- operator's delete) take their rows off its counts in the same transaction (history_counts_deleted).
-- The edge: a transaction that began before a partition's upper bound and wrote a finished job into it
-- more than `grace` (10 min) later, after the partition was counted, is not in its counts.
CREATE TABLE history_counts (
    partition_name text   NOT NULL,
    queue          text   NOT NULL,
    state          text   NOT NULL,
    jobs           bigint NOT NULL,
    PRIMARY KEY (partition_name, queue, state)
);

-- The partitions whose counts are in history_counts (a counted partition may have no rows there: empty).
CREATE TABLE history_counted (
    partition_name text PRIMARY KEY
);

-- Counts each partition whose upper bound is more than `grace` past and that is not counted yet, oldest
-- first; returns how many it counted. Holds an EXCLUSIVE lock on history_counts until its transaction
-- ends: a delete's trigger (which takes ROW EXCLUSIVE) waits, or is waited for, so that each deleted row is
-- either left out of the count or taken off it, never both nor neither. Readers are not blocked.
CREATE FUNCTION count_history_partitions(grace interval) RETURNS integer
    LANGUAGE plpgsql
AS $$
DECLARE
    s    text := '${flyway:defaultSchema}';
    part record;
    n    integer := 0;
BEGIN
    LOCK TABLE ${flyway:defaultSchema}.history_counts IN EXCLUSIVE MODE;
    FOR part IN
        SELECT p.partition_name
          FROM ${flyway:defaultSchema}.history_partitions() AS p
         WHERE p.hi <= now() - grace
           AND NOT EXISTS (SELECT FROM ${flyway:defaultSchema}.history_counted AS c
                            WHERE c.partition_name = p.partition_name)
         ORDER BY p.hi
    LOOP
        EXECUTE format('INSERT INTO %1$I.history_counts (partition_name, queue, state, jobs)
                        SELECT %2$L, queue, state, count(*) FROM %1$I.%2$I GROUP BY queue, state',
                       s, part.partition_name);
        INSERT INTO ${flyway:defaultSchema}.history_counted (partition_name) VALUES (part.partition_name);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

-- Finished jobs per queue and state: the kept counts of the counted partitions, plus a count of each
-- partition not counted (the current one, those ahead, the default one), all in the caller's snapshot.
CREATE FUNCTION history_overview() RETURNS TABLE (queue text, state text, jobs bigint)
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    s    text := '${flyway:defaultSchema}';
    part record;
    sql  text := 'SELECT queue, state, jobs FROM ${flyway:defaultSchema}.history_counts';
BEGIN
    FOR part IN
        SELECT c.relname AS name
          FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
         WHERE i.inhparent = '${flyway:defaultSchema}.finished_jobs'::regclass
           AND NOT EXISTS (SELECT FROM ${flyway:defaultSchema}.history_counted AS k WHERE k.partition_name = c.relname)
    LOOP
        sql := sql || format(' UNION ALL SELECT queue, state, count(*) FROM %I.%I GROUP BY queue, state', s, part.name);
    END LOOP;
    RETURN QUERY EXECUTE 'SELECT queue, state, sum(jobs)::bigint FROM (' || sql || ') AS c'
                         ' GROUP BY queue, state HAVING sum(jobs) > 0';
END
$$;

-- Takes deleted finished jobs off the counts of their counted partitions. Fires on every DELETE from
-- finished_jobs (retries by hand, operators' deletes, the default partition's pruning), which are rare;
-- not on the completion path, which only inserts.
CREATE FUNCTION history_counts_deleted() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE ${flyway:defaultSchema}.history_counts AS c SET jobs = c.jobs - d.n
      FROM (SELECT p.partition_name, o.queue, o.state, count(*) AS n
              FROM gone_rows AS o
              JOIN ${flyway:defaultSchema}.history_partitions() AS p
                ON o.finished_at >= coalesce(p.lo, '-infinity') AND o.finished_at < p.hi
             GROUP BY 1, 2, 3) AS d
     WHERE c.partition_name = d.partition_name AND c.queue = d.queue AND c.state = d.state;
    RETURN NULL;
END
$$;

CREATE TRIGGER finished_jobs_counts_delete
    AFTER DELETE ON finished_jobs REFERENCING OLD TABLE AS gone_rows
    FOR EACH STATEMENT EXECUTE FUNCTION history_counts_deleted();

-- A TRUNCATE of the history empties the counts with it.
CREATE FUNCTION history_counts_truncated() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM ${flyway:defaultSchema}.history_counts;
    DELETE FROM ${flyway:defaultSchema}.history_counted;
    RETURN NULL;
END
$$;

CREATE TRIGGER finished_jobs_counts_truncate
    AFTER TRUNCATE ON finished_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION history_counts_truncated();

-- Tables named like the history's partitions that are no longer attached: detached by
-- drop_history_partition and not dropped yet (the process died in between). The pruner drops them.
CREATE FUNCTION detached_history_tables() RETURNS SETOF text
    LANGUAGE sql STABLE
AS $$
    SELECT c.relname::text
      FROM pg_class AS c
     WHERE c.relnamespace = '${flyway:defaultSchema}'::regnamespace
       AND c.relkind = 'r'
       AND c.relname LIKE 'finished\_jobs\_%'
       AND NOT c.relispartition
$$;

-- The trigram index for ?text= (docs/operations.md), built partition by partition: CREATE INDEX
-- CONCURRENTLY cannot build an index on a partitioned table. The parent's index is made on it alone
-- (invalid until every partition's is attached), then each partition's is built and attached, the oldest
-- first: they take no writes, while building the newest blocks the finished rows written meanwhile.
-- Partitions made later get the index when they are attached. opclass: the trigram operator class,
-- qualified with the schema pg_trgm is installed in.
CREATE FUNCTION create_history_text_index(opclass text DEFAULT '${flyway:defaultSchema}.gin_trgm_ops')
    RETURNS void
    LANGUAGE plpgsql
AS $$
DECLARE
    s    text := '${flyway:defaultSchema}';
    part record;
    expr text := format('((payload::text || coalesce(E''\n'' || context, '''')) %s)', opclass);
BEGIN
    EXECUTE format('CREATE INDEX IF NOT EXISTS finished_jobs_text_trgm_idx ON ONLY %I.finished_jobs USING gin %s', s, expr);
    FOR part IN
        SELECT c.relname AS name
          FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
          LEFT JOIN ${flyway:defaultSchema}.history_partitions() AS p ON p.partition_name = c.relname
         WHERE i.inhparent = format('%I.finished_jobs', s)::regclass
           AND NOT EXISTS (SELECT FROM pg_inherits AS x JOIN pg_index AS ix ON ix.indexrelid = x.inhrelid
                            WHERE x.inhparent = format('%I.finished_jobs_text_trgm_idx', s)::regclass
                              AND ix.indrelid = c.oid)
         ORDER BY p.hi NULLS LAST
    LOOP
        EXECUTE format('CREATE INDEX %I ON %I.%I USING gin %s', part.name || '_text_trgm_idx', s, part.name, expr);
        EXECUTE format('ALTER INDEX %I.finished_jobs_text_trgm_idx ATTACH PARTITION %I.%I',
                       s, s, part.name || '_text_trgm_idx');
    END LOOP;
END
$$;


-- ============================================================================= the dependency trigger

-- V6's resolve_dependents(), with one change: the outcome of a parent is read from the partition it was
-- just written to (finished_at = now(): this statement moved it), so the lookup reads one partition's id
-- index, not each partition's.
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
BEGIN
    SELECT array_agg(o.id), array_agg(coalesce(f.state, 'cancelled'))
      INTO parents, states
      FROM ended_rows AS o
      LEFT JOIN LATERAL (SELECT s.state FROM ${flyway:defaultSchema}.finished_jobs AS s
                          WHERE s.id = o.id AND s.finished_at = now()) AS f ON true
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

    IF 'only' = ANY (e_policy) THEN
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
         WHERE j.id = ANY (e_child) AND j.id = e.child AND j.state = 'blocked'
        RETURNING j.queue, j.state
    )
    SELECT coalesce(array_agg(DISTINCT u.queue::text), '{}') INTO woken FROM unblocked AS u WHERE u.state = 'queued';
    PERFORM pg_notify('${flyway:defaultSchema}_jobs_ready', w)
       FROM (SELECT DISTINCT w FROM unnest(woken || fired) AS w) AS q;
    RETURN NULL;
END
$$;

-- An operator's trigram index on the old table becomes the partitioned one's first part; the default
-- partition gets one built (it is empty), and the partitions made below get theirs when attached.
DO $pgjobs$
DECLARE
    old_def text;
BEGIN
    IF to_regclass('finished_jobs_before_v7_text_trgm_idx') IS NOT NULL THEN
        old_def := pg_get_indexdef('finished_jobs_before_v7_text_trgm_idx'::regclass);
        EXECUTE 'CREATE INDEX finished_jobs_text_trgm_idx ON ONLY finished_jobs USING gin '
                || substring(old_def FROM 'USING gin (.*)$');
        ALTER INDEX finished_jobs_text_trgm_idx ATTACH PARTITION finished_jobs_before_v7_text_trgm_idx;
        PERFORM create_history_text_index(substring(old_def FROM '([^ (]+)\)$'));
    END IF;
END
$pgjobs$;

-- The first partitions: this hour's and the next two. The maintenance leader makes the next ones, with
-- the width its retention asks for.
SELECT ensure_history_partitions(interval '1 hour', interval '2 hours');
