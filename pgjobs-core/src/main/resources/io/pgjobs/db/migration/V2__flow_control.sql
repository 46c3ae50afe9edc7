-- Flow control across the fleet: limits per queue and per partition, decided inside the claim's own
-- transaction (claim_limited below), so they hold across any number of worker processes.
--
-- What a limited queue costs, and what an unlimited one does not:
--   * An unlimited queue's claim is unchanged: its statements already read the queue's row in `queues`
--     (the paused check) and now skip a queue that is paused OR limited, in the same probe.
--   * A limited queue is claimed by claim_limited(): one call per claim, which takes the queue's
--     transaction-level advisory lock (limited claims of one queue take turns; completions, rescues and
--     enqueues never take it), counts the queue's running jobs and reads its rate state afresh after
--     the lock, so two workers can never both see the same free slot.
--
-- Why counts of running rows and not counter rows: a running job is a row of the hot table whatever
-- happens to its worker (kill -9, a cut connection, a failover with the row replicated), and it stops
-- counting in the very statement that moves it on (finish, retry, snooze, rescue). A counter beside it
-- would have to be kept in step by every one of those statements, and a lost reply would leak a slot
-- for good. Counter rows would also be updated at every claim and every finish: under a transaction held
-- open elsewhere their dead versions pile up with every job. The running jobs are read through
-- jobs_limited_running_idx, whose entries are the limited queues' running jobs only; the rate state rows
-- (queue_rates) change at most once per claim statement and key, never per finish (docs/guarantees.md,
-- "Flow control", says what a held-open transaction still costs).


-- ===================================================================================== limits of a queue

-- NULL: no such limit. The rate limits are GCRA (a "generic cell rate" token bucket): `rate_limit` starts
-- per `rate_period_ms`, evenly spaced, with up to `rate_burst` at once after a quiet spell.
ALTER TABLE queues
    ADD COLUMN global_concurrency       integer,  -- running at once in the whole fleet
    ADD COLUMN rate_limit               integer,  -- starts per rate_period_ms, the whole queue
    ADD COLUMN rate_period_ms           bigint,
    ADD COLUMN rate_burst               integer,
    -- What a job's partition is: 'type' (its job type), 'input.<field>[.<field>...]' (a field of its
    -- payload, as text) or 'partition' (only the key given at enqueue). The key is fixed when the job is
    -- enqueued (jobs.limit_key); a key given at enqueue (EnqueueOptions.partition) wins.
    ADD COLUMN partition_by             text,
    ADD COLUMN partition_concurrency    integer,  -- running at once per partition; 1 = in order, strictly
    ADD COLUMN partition_rate_limit     integer,  -- starts per partition_rate_period_ms, per partition
    ADD COLUMN partition_rate_period_ms bigint,
    ADD COLUMN partition_rate_burst     integer,
    ADD COLUMN limits_updated_at        timestamptz,
    -- Who set the limits: 'code' (a worker's declaration at start) or 'api' (HTTP, CLI, JobClient at run
    -- time). A worker's declaration does not replace limits set at run time.
    ADD COLUMN limits_source            text,
    -- True when the queue has any limit or a partition rule: its jobs are then claimed by
    -- claim_limited() only. The unlimited claim statements skip such a queue in their paused check.
    ADD COLUMN limited boolean GENERATED ALWAYS AS (
        global_concurrency IS NOT NULL OR rate_limit IS NOT NULL OR partition_by IS NOT NULL
        OR partition_concurrency IS NOT NULL OR partition_rate_limit IS NOT NULL) STORED,
    ADD CONSTRAINT queues_global_concurrency_check CHECK (global_concurrency BETWEEN 1 AND 100000),
    ADD CONSTRAINT queues_rate_check CHECK (
        (rate_limit IS NULL) = (rate_period_ms IS NULL) AND (rate_limit IS NULL) = (rate_burst IS NULL)
        AND rate_limit BETWEEN 1 AND 1000000 AND rate_period_ms BETWEEN 1 AND 86400000
        AND rate_burst BETWEEN 1 AND 1000000),
    ADD CONSTRAINT queues_partition_by_check CHECK (
        partition_by IN ('type', 'partition') OR partition_by ~ '^input(\.[A-Za-z0-9_-]{1,64}){1,8}$'),
    ADD CONSTRAINT queues_partition_concurrency_check CHECK (partition_concurrency BETWEEN 1 AND 100000),
    ADD CONSTRAINT queues_partition_rate_check CHECK (
        (partition_rate_limit IS NULL) = (partition_rate_period_ms IS NULL)
        AND (partition_rate_limit IS NULL) = (partition_rate_burst IS NULL)
        AND partition_rate_limit BETWEEN 1 AND 1000000 AND partition_rate_period_ms BETWEEN 1 AND 86400000
        AND partition_rate_burst BETWEEN 1 AND 1000000),
    ADD CONSTRAINT queues_partition_limits_need_key CHECK (
        partition_by IS NOT NULL OR (partition_concurrency IS NULL AND partition_rate_limit IS NULL)),
    ADD CONSTRAINT queues_limits_source_check CHECK (limits_source IN ('code', 'api'));


-- ==================================================================================== a job's partition

-- The job's partition key in a partitioned queue, fixed at enqueue (a key given at enqueue, else the
-- queue's partition_by applied to the job); '' is the partition of jobs without one. NULL for the jobs of
-- every other queue, which then pay nothing for it: both indexes below are partial. The limited claim
-- writes '' over NULL, so every job it starts is in jobs_limited_running_idx.
-- Collation "C": keys are compared byte by byte, in the indexes (the claim probes them per partition) and
-- in the claim's sorts, never through the database's locale (strcoll is several times slower, and a key is
-- an identifier, not text to sort for people). A key compared with plain text takes this collation.
CREATE DOMAIN job_limit_key AS text COLLATE "C"
    CONSTRAINT jobs_limit_key_check CHECK (length(VALUE) <= 255);
ALTER TABLE jobs ADD COLUMN limit_key job_limit_key;

-- The ready jobs of each partition in its claim order (priority, then enqueue order): the limited claim
-- visits the partitions one after another with one probe each (round-robin) and takes each one's next job.
-- Enqueue order, not run_at: a retrying job keeps its place, so a partition limited to one at a time
-- runs its jobs strictly in order, its failing job first.
CREATE INDEX jobs_partition_ready_idx ON jobs (queue, limit_key, priority DESC, id)
    WHERE state IN ('queued', 'retrying') AND limit_key IS NOT NULL;
-- The running jobs of limited queues, per partition: what the limits count. A job claimed by an
-- unlimited queue's claim has no key and no entry here. "Running" is written locked_by IS NOT NULL, as
-- the statements that read this index say it (the same rows: the jobs_running_is_locked CHECK). With
-- state = 'running' those statements would imply jobs_running_idx's predicate too, and the planner, whose
-- statistics of the hot table make every index of it look a page long, costed a scan of that whole index
-- the same and took it: every running job of every queue, and while a transaction elsewhere was open every
-- job that ran since (W5 with limits: 74,061 buffers for the running counts of 27 partitions, the claims
-- twenty times slower for a minute). As the unlimited claim's statements do (ExecutionSql, "Running,
-- written locked_by").
CREATE INDEX jobs_limited_running_idx ON jobs (queue, limit_key)
    WHERE locked_by IS NOT NULL AND limit_key IS NOT NULL;


-- ======================================================================================= rate state

-- The GCRA state of each rate limit: the theoretical arrival time of the next start. kind 0 is the
-- queue's own rate (partition ''), kind 1 a partition's. Written by claim_limited under the queue's lock,
-- once per claim statement and partition that started jobs. Rows of partitions idle for longer than their
-- period say nothing (a tat in the past is as good as none) and are pruned by maintenance.
CREATE TABLE queue_rates (
    queue     text        NOT NULL,
    kind      smallint    NOT NULL,
    partition job_limit_key NOT NULL,
    tat       timestamptz NOT NULL,
    PRIMARY KEY (queue, kind, partition)
) WITH (fillfactor = 50);


-- GCRA: how many starts a rate of `lim` per `period_ms` with `burst` allows at `at`, given the state
-- `tat` (NULL: none yet). Emission interval T = period / lim; tolerance = (burst - 1) * T; a start is
-- allowed while tat - at <= tolerance, and each start moves tat on by T (from `at` if tat is past).
CREATE FUNCTION gcra_allowed(tat timestamptz, at timestamptz, lim integer, period_ms bigint, burst integer)
    RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
             WHEN lim IS NULL THEN 2147483647
             ELSE greatest(0, floor(
                    (extract(epoch FROM at - greatest(coalesce(tat, at), at)) * 1000
                     + (burst - 1) * (period_ms::numeric / lim))
                    / (period_ms::numeric / lim))::bigint + 1)::integer
           END
$$;

-- The GCRA state after `n` starts at `at`.
CREATE FUNCTION gcra_after(tat timestamptz, at timestamptz, lim integer, period_ms bigint, n integer)
    RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(coalesce(tat, at), at) + (n * (period_ms::numeric / lim)) * interval '1 millisecond'
$$;


-- A job's partition key under rule `rule` (queues.partition_by), as JobClient computes it at enqueue, and
-- as waiting jobs without a key get it (when the rule is set, and from maintenance every second for jobs
-- a client enqueued without one: a client that had not read the rule yet, an older client, plain SQL):
-- the job type, or the payload field the rule names as text (a string without its quotes); NULL when the
-- rule is 'partition' (only a key given at enqueue counts) or the field is missing.
CREATE FUNCTION partition_key(rule text, type text, payload jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
             WHEN rule = 'type' THEN type
             WHEN rule LIKE 'input.%' THEN payload #>> string_to_array(substr(rule, 7), '.')
           END
$$;


-- ================================================================================= the limited claim

-- Claims up to p_max due jobs of limited queue p_queue for worker p_worker, within its limits, and
-- returns them as the claim statements do (ExecutionStore reads both alike), plus each job's partition.
--   p_types: the job types the worker runs (NULL: every type); p_caps: its capabilities ('{}': none).
--   p_after: the last partition this worker's previous claim of the queue took from (NULL: none); the
--            round-robin resumes after it, so partitions take turns across claims, not only within one.
--   p_levels, p_run_ats, p_ids: the worker's claim cursor for the queue (ClaimCursor: per priority level,
--            highest first, the position (run_at, id) its claims got to), where the fast path resumes each
--            level's range; NULL: a full pass, every level from its start.
-- Each row also says whether the claim was the fast path's alone (resumed): then its jobs are the first
-- due jobs past the cursor, and the worker may move its cursor past them.
--
-- Serialised per queue by a transaction-level advisory lock, taken first; every statement after it runs
-- with a fresh snapshot (a VOLATILE function under READ COMMITTED), so it sees every limited claim of the
-- queue that committed before this one got the lock: counts and rate state are exact. The lock's key is
-- the queue's name with the schema's, hashed to 64 bits.
--
-- Partitioned queues: the partitions are visited in key order from just after p_after, wrapping round,
-- in rounds of one statement each (a loose index scan over the partitions, then at most one job of each:
-- round-robin, so a partition with 90 % of the jobs gets one turn in each round like any other), skipping a
-- partition at its concurrency or rate limit. First, a fast path takes the head of the queue in claim
-- order in one index range when no partition crowds it (then that is what a round would take; see below).
-- A partition limited to one job at a time is strict: its next job in order (priority, then enqueue
-- order, whatever its state) must be the one that starts, so a retrying job blocks its partition until it
-- succeeds or is discarded.
CREATE FUNCTION claim_limited(p_worker text, p_queue text, p_max integer, p_types text[], p_caps text[],
                              p_after text, p_levels integer[], p_run_ats timestamptz[], p_ids uuid[])
    RETURNS TABLE (id uuid, type text, queue text, payload text, priority integer, attempts integer,
                   max_attempts integer, run_at timestamptz, created_at timestamptz, context text,
                   timeout_ms bigint, claim_token bigint, trace_context text, announced bigint,
                   snoozes integer, limit_key text, resumed boolean)
    LANGUAGE plpgsql VOLATILE
    -- Every statement here reads the hot table through an index or by row address (ctid: the rows this
    -- claim locked), for a handful to a few thousand rows. The planner, from the hot table's ever-stale
    -- statistics and a claim's array of a thousand addresses, would otherwise scan the whole table instead
    -- (seen: a hash join over a sequential scan of 50,000 rows for a claim of 1,000).
    SET enable_seqscan = off
    -- Running jobs are counted as locked_by IS NOT NULL: see jobs_limited_running_idx.
    AS $$
#variable_conflict use_column
DECLARE
    cfg        ${flyway:defaultSchema}.queues%ROWTYPE;
    now_at     timestamptz;
    want       integer;
    running    bigint;
    q_tat      timestamptz;
    picked     uuid[] := '{}';
    tids       tid[] := '{}';
    keys       text[] := '{}';
    cur        text;
    visits     integer := 0;
    partitioned boolean;
    k_first    text;
    room       integer;
    span       integer;
    r_ids      uuid[];
    r_tids     tid[];
    c_tids     tid[];
    c_ids      uuid[];
    c_keys     text[];
    pass       integer := 1;
    crowded    boolean;
    r_keys     text[];
    r_last     text;
    wrapped    boolean;
    progressed boolean := false;
    head_n     integer;
    lv_prio    integer[];
    lv_at      timestamptz[];
    lv_id      uuid[];
    top_level  integer;
    fast_only  boolean := false;
    lv         integer;
    all_fit    boolean;
    target     integer;
    fit_n      bigint;
    first_n    bigint;
    s_tids     tid[];
    s_ids      uuid[];
    s_keys     text[];
    s_ats      timestamptz[];
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('pgjobs.limits:' || '${flyway:defaultSchema}' || ':' || p_queue, 0));
    now_at := clock_timestamp();
    SELECT * INTO cfg FROM ${flyway:defaultSchema}.queues AS q WHERE q.name = p_queue;
    IF NOT FOUND OR cfg.paused OR p_max < 1 THEN
        RETURN;
    END IF;
    want := p_max;

    IF cfg.global_concurrency IS NOT NULL THEN
        SELECT count(*) INTO running FROM ${flyway:defaultSchema}.jobs AS j
         WHERE j.queue = p_queue AND j.locked_by IS NOT NULL AND j.limit_key IS NOT NULL;
        want := least(want, cfg.global_concurrency - running);
    END IF;
    IF cfg.rate_limit IS NOT NULL AND want > 0 THEN
        SELECT r.tat INTO q_tat FROM ${flyway:defaultSchema}.queue_rates AS r
         WHERE r.queue = p_queue AND r.kind = 0 AND r.partition = '';
        want := least(want, ${flyway:defaultSchema}.gcra_allowed(q_tat, now_at, cfg.rate_limit,
                                                                  cfg.rate_period_ms, cfg.rate_burst));
    END IF;
    IF want < 1 THEN
        RETURN;
    END IF;

    partitioned := cfg.partition_by IS NOT NULL;
    IF NOT partitioned AND cardinality(p_caps) > 0 THEN
        -- A queue without partitions, for a worker with capabilities: the queue's claim order over the jobs
        -- that need none or one of them, from the start of the queue (jobs_ready_idx holds only jobs that
        -- need no capability, so the head read below cannot see the others; the worker passes no cursor).
        SELECT coalesce(array_agg(s.id), '{}'), coalesce(array_agg(s.ctid), '{}') INTO picked, tids
          FROM (SELECT j.id, j.ctid FROM ${flyway:defaultSchema}.jobs AS j
                 WHERE j.queue = p_queue AND j.state IN ('queued', 'retrying')
                   AND (j.capability IS NULL OR j.capability = ANY (p_caps))
                   AND j.run_at <= now_at AND j.attempts < j.max_attempts
                   AND (p_types IS NULL OR j.type = ANY (p_types))
                 ORDER BY j.priority DESC, j.run_at, j.id
                 LIMIT want
                   FOR UPDATE SKIP LOCKED) AS s;
        keys := array_fill(NULL::text, ARRAY[cardinality(picked)]);
    ELSE
        -- The head of the queue past the worker's cursor, read and locked in its claim order (the unlimited
        -- claim's order, one index range per priority level, resumed where the worker's claims got to, so
        -- that it does not step over the entries of every job claimed since a long transaction elsewhere
        -- began; a row another transaction holds is skipped, as the unlimited claim skips it, and the
        -- cursor's probe finds it later).
        --
        -- A queue without partitions takes the first `want` jobs there (its limits are all in `want`):
        -- the unlimited claim's resumed claim, under the queue's limits.
        --
        -- A partitioned queue's fast path reads at least 32 jobs, so that it says who crowds it even for a
        -- claim of one. If a
        -- partition there has more jobs than it may ever start at once (its concurrency; without one,
        -- one: a turn each), that partition crowds the head (the case fairness is for): take nothing here,
        -- the rounds below visit the partitions one by one from where the last claim ended. Otherwise the
        -- first `want` of those jobs, less what each partition may not start now (its free slots and rate
        -- allowance), are what a round-robin round would give these partitions: take them from the one
        -- index range instead of a probe per partition. If that took every one of them, and they were all
        -- the head held or all the claim wants, the claim is done (resumed: the worker moves its cursor
        -- past them); else the rounds fill what is missing (partitions that had their turn here wait
        -- there for the next pass). Not for partitions of one (strict order needs each partition's
        -- head), nor for a worker with capabilities (the range read sees only jobs that need none; those
        -- would wait behind them). A job there without its key yet (enqueued by a client that had not read
        -- the queue's rule; the maintenance leader keys it within a second) is not taken, and the head
        -- counts as left behind: the worker's cursor stays before it.
        IF NOT partitioned OR (cfg.partition_concurrency IS DISTINCT FROM 1 AND cardinality(p_caps) = 0) THEN
            head_n := CASE WHEN partitioned THEN greatest(want, 32) ELSE want END;
            -- Where each level's range starts: past the cursor's position for the levels it knows, with
            -- one probe of the index above the highest of them (a more urgent job goes first at once;
            -- a new level below waits for the cursor's probe, as in the unlimited claim); in a full pass
            -- every level present, from its start.
            IF p_levels IS NULL OR cardinality(p_levels) = 0 THEN
                WITH RECURSIVE levels(priority) AS (
                    SELECT max(j.priority) FROM ${flyway:defaultSchema}.jobs AS j
                     WHERE j.queue = p_queue AND j.state IN ('queued', 'retrying') AND j.capability IS NULL
                  UNION ALL
                    SELECT (SELECT max(n.priority) FROM ${flyway:defaultSchema}.jobs AS n
                             WHERE n.queue = p_queue AND n.state IN ('queued', 'retrying') AND n.capability IS NULL
                               AND n.priority < l.priority)
                      FROM levels AS l
                     WHERE l.priority IS NOT NULL
                )
                SELECT coalesce(array_agg(l.priority ORDER BY l.priority DESC), '{}') INTO lv_prio
                  FROM levels AS l WHERE l.priority IS NOT NULL;
                lv_at := array_fill('-infinity'::timestamptz, ARRAY[cardinality(lv_prio)]);
                lv_id := array_fill('00000000-0000-0000-0000-000000000000'::uuid, ARRAY[cardinality(lv_prio)]);
            ELSE
                SELECT max(j.priority) INTO top_level FROM ${flyway:defaultSchema}.jobs AS j
                 WHERE j.queue = p_queue AND j.state IN ('queued', 'retrying') AND j.capability IS NULL
                   AND j.priority > p_levels[1];
                lv_prio := p_levels;
                lv_at := p_run_ats;
                lv_id := p_ids;
                IF top_level IS NOT NULL THEN
                    lv_prio := top_level || lv_prio;
                    lv_at := '-infinity'::timestamptz || lv_at;
                    lv_id := '00000000-0000-0000-0000-000000000000'::uuid || lv_id;
                END IF;
            END IF;
            -- The head, level after level in claim order, each level's range read and locked in one
            -- statement (as the unlimited claim's: a row another transaction holds is skipped). Locked
            -- now, so that what the pick takes needs no second visit; what it leaves (a partition at
            -- its limit, a crowded head) stays locked until this claim commits, as limited claims of
            -- the queue take turns anyway.
            c_tids := '{}';
            c_ids := '{}';
            c_keys := '{}';
            lv := 1;
            target := head_n;
            FOR ext IN 1 .. 2 LOOP
                -- Read (and lock) until the head holds `target` jobs or the levels run out.
                LOOP
                    EXIT WHEN lv > coalesce(cardinality(lv_prio), 0) OR cardinality(c_ids) >= target;
                    SELECT coalesce(array_agg(r.ctid), '{}'), coalesce(array_agg(r.id), '{}'),
                           coalesce(array_agg(r.limit_key::text), '{}'), coalesce(array_agg(r.run_at), '{}')
                      INTO s_tids, s_ids, s_keys, s_ats
                      FROM (SELECT j.ctid, j.id, j.limit_key, j.run_at FROM ${flyway:defaultSchema}.jobs AS j
                             WHERE j.queue = p_queue AND j.state IN ('queued', 'retrying') AND j.capability IS NULL
                               AND j.priority = lv_prio[lv] AND (j.run_at, j.id) > (lv_at[lv], lv_id[lv])
                               AND j.run_at <= now_at
                               AND j.attempts < j.max_attempts AND (p_types IS NULL OR j.type = ANY (p_types))
                             ORDER BY j.run_at, j.id
                             LIMIT target - cardinality(c_ids)
                               FOR UPDATE SKIP LOCKED) AS r;
                    c_tids := c_tids || s_tids;
                    c_ids := c_ids || s_ids;
                    c_keys := c_keys || s_keys;
                    IF cardinality(c_ids) < target THEN
                        lv := lv + 1; -- this level has no more
                    ELSE
                        lv_at[lv] := s_ats[cardinality(s_ats)]; -- where a further read of it starts
                        lv_id[lv] := s_ids[cardinality(s_ids)];
                    END IF;
                END LOOP;
                EXIT WHEN ext = 2 OR NOT partitioned;
                -- Per partition in the head: does it crowd the head (more jobs there than it may ever
                -- start at once), and how many of its jobs among the first `want` may it start now (its
                -- free slots: one probe of its running jobs; its rate's allowance: one probe of its rate
                -- state)? Probed only for partitions among the first `want`.
                SELECT coalesce(bool_or(q.jobs > coalesce(cfg.partition_concurrency, 1)), false),
                       coalesce(sum(least(q.first, greatest(q.allow, 0))), 0), coalesce(sum(q.first), 0)
                  INTO crowded, fit_n, first_n
                  FROM (SELECT p.jobs, p.first,
                               CASE WHEN p.first = 0 THEN 0 ELSE least(
                                   CASE WHEN cfg.partition_concurrency IS NOT NULL THEN
                                        cfg.partition_concurrency
                                          - (SELECT count(*) FROM ${flyway:defaultSchema}.jobs AS r
                                              WHERE r.queue = p_queue AND r.limit_key = p.k AND r.locked_by IS NOT NULL)
                                        ELSE 1 END,
                                   CASE WHEN cfg.partition_rate_limit IS NOT NULL THEN
                                        ${flyway:defaultSchema}.gcra_allowed(
                                            (SELECT s.tat FROM ${flyway:defaultSchema}.queue_rates AS s
                                              WHERE s.queue = p_queue AND s.kind = 1 AND s.partition = p.k),
                                            now_at, cfg.partition_rate_limit, cfg.partition_rate_period_ms,
                                            cfg.partition_rate_burst)
                                        ELSE 2147483647 END) END AS allow
                          FROM (SELECT u.k COLLATE "C" AS k, count(*) AS jobs,
                                       count(*) FILTER (WHERE u.n <= want) AS first
                                  FROM unnest(c_keys) WITH ORDINALITY AS u(k, n) WHERE u.k IS NOT NULL
                                 GROUP BY 1) AS p) AS q;
                -- All of the first `want` may start (none without its key yet): they are the claim.
                all_fit := fit_n = least(want, cardinality(c_ids)) AND first_n = fit_n;
                -- Some may not (their partitions at a limit), most may, and the head was full: read
                -- further, about twice as many jobs as were left, so that the claim fills from just past
                -- them instead of going round the partitions. What it does not take stays locked until the
                -- claim commits. (When most may not, the partitions are mostly at their limits: a longer
                -- head would be mostly theirs too, and the rounds find the others.)
                EXIT WHEN crowded OR all_fit OR cardinality(c_ids) < head_n
                          OR fit_n * 2 < least(want, cardinality(c_ids));
                target := head_n + least(want, 2 * (want - fit_n) + 32);
            END LOOP;
            IF cardinality(c_ids) = 0 THEN
                fast_only := true; -- nothing due past the cursor: the rounds would find nothing more there
            ELSIF NOT partitioned THEN
                picked := c_ids;
                tids := c_tids;
                keys := array_fill(NULL::text, ARRAY[cardinality(c_ids)]);
                fast_only := true;
            ELSIF NOT crowded AND all_fit THEN
                -- The first `want` all fit: take them as they are.
                picked := c_ids[1:want];
                tids := c_tids[1:want];
                keys := c_keys[1:want];
                fast_only := true;
            ELSIF NOT crowded THEN
                -- Else each partition's first jobs up to what it may start now, computed again per job
                -- (not crowded, so a partition has at most as many jobs here as it may run at once: a
                -- probe per job is about a probe per partition), with no join to plan.
                SELECT coalesce(array_agg(c.id), '{}'), coalesce(array_agg(c.tid), '{}'), coalesce(array_agg(c.k), '{}')
                  INTO picked, tids, keys
                  FROM (SELECT c.id, c.tid, c.k
                          FROM (SELECT u.tid, u.id, u.k, u.n, row_number() OVER (PARTITION BY u.k COLLATE "C" ORDER BY u.n) AS rn
                                  FROM unnest(c_tids, c_ids, c_keys) WITH ORDINALITY AS u(tid, id, k, n)
                                 WHERE u.k IS NOT NULL) AS c
                         WHERE c.rn <= least(
                                 CASE WHEN cfg.partition_concurrency IS NOT NULL THEN
                                      cfg.partition_concurrency
                                        - (SELECT count(*) FROM ${flyway:defaultSchema}.jobs AS r
                                            WHERE r.queue = p_queue AND r.limit_key = c.k AND r.locked_by IS NOT NULL)
                                      ELSE 1 END,
                                 CASE WHEN cfg.partition_rate_limit IS NOT NULL THEN
                                      ${flyway:defaultSchema}.gcra_allowed(
                                          (SELECT s.tat FROM ${flyway:defaultSchema}.queue_rates AS s
                                            WHERE s.queue = p_queue AND s.kind = 1 AND s.partition = c.k),
                                          now_at, cfg.partition_rate_limit, cfg.partition_rate_period_ms,
                                          cfg.partition_rate_burst)
                                      ELSE 2147483647 END)
                         ORDER BY c.n
                         LIMIT want) AS c;
                -- Resumed only if it took the head's first jobs without a gap, all of it or all it wanted.
                fast_only := cardinality(picked) = least(want, cardinality(c_ids))
                             AND picked = c_ids[1:cardinality(picked)];
            END IF;
        END IF;
        -- Rounds: each is one statement that visits up to `span` partitions in key order from just after
        -- cur (one index probe each: a loose index scan) and takes at most one job of each (round-robin),
        -- until the claim has what it wants or a whole pass from the first partition took nothing.
        cur := p_after;
        wrapped := p_after IS NULL;
        LOOP
            EXIT WHEN fast_only OR cardinality(picked) >= want OR visits >= 1000;
            visits := visits + 1;
            -- The first partition after cur. Two statements, not "cur IS NULL OR limit_key > cur": the
            -- cached generic plan of that form cannot start the index scan at cur.
            IF cur IS NULL THEN
                SELECT min(j.limit_key) INTO k_first FROM ${flyway:defaultSchema}.jobs AS j
                 WHERE j.queue = p_queue AND j.state IN ('queued', 'retrying') AND j.limit_key IS NOT NULL;
            ELSE
                SELECT min(j.limit_key) INTO k_first FROM ${flyway:defaultSchema}.jobs AS j
                 WHERE j.queue = p_queue AND j.state IN ('queued', 'retrying') AND j.limit_key IS NOT NULL
                   AND j.limit_key > cur;
            END IF;
            IF k_first IS NULL THEN
                EXIT WHEN cur IS NULL;                -- no partition has ready jobs
                EXIT WHEN wrapped AND NOT progressed; -- a whole pass from the first took nothing
                cur := NULL;
                wrapped := true;
                progressed := false;
                pass := pass + 1;
                CONTINUE;
            END IF;
            room := want - cardinality(picked);
            -- Visit more partitions than jobs are wanted (some are at their limits); a round stops when it
            -- has room.
            span := least(10000, greatest(room * 2, 64));
            IF cfg.partition_concurrency = 1 THEN
                -- Strict order: a partition's next job (priority, then enqueue order), due or not, is the
                -- only one that may start, and only if no one else holds its row.
                WITH RECURSIVE parts(k, n) AS (
                    SELECT k_first COLLATE "C", 1
                  UNION ALL
                    SELECT (SELECT min(j.limit_key) FROM ${flyway:defaultSchema}.jobs AS j
                             WHERE j.queue = p_queue AND j.state IN ('queued', 'retrying')
                               AND j.limit_key IS NOT NULL AND j.limit_key > p.k),
                           p.n + 1
                      FROM parts AS p
                     WHERE p.k IS NOT NULL AND p.n < span
                ), visited AS (
                    SELECT p.k, p.n FROM parts AS p WHERE p.k IS NOT NULL
                ), free AS (
                    -- What each partition may still start: its free slots and its rate's allowance, less
                    -- this claim's own picks (not running yet); NULL where it has no such limit.
                    SELECT v.k, v.n,
                           CASE WHEN cfg.partition_concurrency IS NOT NULL THEN
                               cfg.partition_concurrency
                                 - (SELECT count(*) FROM ${flyway:defaultSchema}.jobs AS r
                                     WHERE r.queue = p_queue AND r.limit_key = v.k AND r.locked_by IS NOT NULL)
                                 - coalesce(cardinality(array_positions(keys, v.k)), 0) END AS slots,
                           CASE WHEN cfg.partition_rate_limit IS NOT NULL THEN
                               ${flyway:defaultSchema}.gcra_allowed(
                                   (SELECT s.tat FROM ${flyway:defaultSchema}.queue_rates AS s
                                     WHERE s.queue = p_queue AND s.kind = 1 AND s.partition = v.k),
                                   now_at, cfg.partition_rate_limit, cfg.partition_rate_period_ms,
                                   cfg.partition_rate_burst)
                                 - coalesce(cardinality(array_positions(keys, v.k)), 0) END AS allowed
                      FROM visited AS v
                ), eligible AS (
                    -- A partition at its concurrency or rate limit is skipped this round. The others take
                    -- up to `quantum` jobs: 1 (round-robin), or with a partition concurrency up to its free
                    -- slots (a round then takes what a partition may run, one probe of the partitions for
                    -- several jobs; no partition gets more than its limit allows in any case).
                    SELECT f.k, f.n,
                           least(coalesce(f.slots, 1), coalesce(f.allowed, 2147483647),
                                 CASE WHEN cfg.partition_concurrency = 1 THEN 1 ELSE 2147483647 END) AS quantum
                      FROM free AS f
                     WHERE coalesce(f.slots, 1) >= 1 AND coalesce(f.allowed, 1) >= 1
                ), picks AS (
                    SELECT e.n, e.k, l.id, l.ctid
                      FROM eligible AS e
                     CROSS JOIN LATERAL (
                           SELECT l.id, l.ctid FROM ${flyway:defaultSchema}.jobs AS l
                            WHERE l.id = (SELECT h.id FROM ${flyway:defaultSchema}.jobs AS h
                                           WHERE h.queue = p_queue AND h.limit_key = e.k
                                             AND h.state IN ('queued', 'retrying')
                                           ORDER BY h.priority DESC, h.id
                                           LIMIT 1)
                              AND l.state IN ('queued', 'retrying') AND l.run_at <= now_at
                              AND l.attempts < l.max_attempts
                              AND (l.capability IS NULL OR l.capability = ANY (p_caps))
                              AND (p_types IS NULL OR l.type = ANY (p_types))
                              FOR UPDATE SKIP LOCKED) AS l
                     LIMIT room
                )
                SELECT (SELECT array_agg(c.id ORDER BY c.n) FROM picks AS c),
                       (SELECT array_agg(c.ctid ORDER BY c.n) FROM picks AS c),
                       (SELECT array_agg(c.k ORDER BY c.n) FROM picks AS c),
                       -- Only when the round took fewer than room (then it visited every partition of
                       -- its span anyway): a round that took room stops visiting there.
                       CASE WHEN (SELECT count(*) FROM picks) < room
                            THEN (SELECT v.k FROM visited AS v ORDER BY v.n DESC LIMIT 1) END
                  INTO r_ids, r_tids, r_keys, r_last;
            ELSE
                WITH RECURSIVE parts(k, n) AS (
                    SELECT k_first COLLATE "C", 1
                  UNION ALL
                    SELECT (SELECT min(j.limit_key) FROM ${flyway:defaultSchema}.jobs AS j
                             WHERE j.queue = p_queue AND j.state IN ('queued', 'retrying')
                               AND j.limit_key IS NOT NULL AND j.limit_key > p.k),
                           p.n + 1
                      FROM parts AS p
                     WHERE p.k IS NOT NULL AND p.n < span
                ), visited AS (
                    SELECT p.k, p.n FROM parts AS p WHERE p.k IS NOT NULL
                ), free AS (
                    -- What each partition may still start: its free slots and its rate's allowance, less
                    -- this claim's own picks (not running yet); NULL where it has no such limit.
                    SELECT v.k, v.n,
                           CASE WHEN cfg.partition_concurrency IS NOT NULL THEN
                               cfg.partition_concurrency
                                 - (SELECT count(*) FROM ${flyway:defaultSchema}.jobs AS r
                                     WHERE r.queue = p_queue AND r.limit_key = v.k AND r.locked_by IS NOT NULL)
                                 - coalesce(cardinality(array_positions(keys, v.k)), 0) END AS slots,
                           CASE WHEN cfg.partition_rate_limit IS NOT NULL THEN
                               ${flyway:defaultSchema}.gcra_allowed(
                                   (SELECT s.tat FROM ${flyway:defaultSchema}.queue_rates AS s
                                     WHERE s.queue = p_queue AND s.kind = 1 AND s.partition = v.k),
                                   now_at, cfg.partition_rate_limit, cfg.partition_rate_period_ms,
                                   cfg.partition_rate_burst)
                                 - coalesce(cardinality(array_positions(keys, v.k)), 0) END AS allowed
                      FROM visited AS v
                ), eligible AS (
                    -- A partition at its concurrency or rate limit is skipped this round. The others take
                    -- up to `quantum` jobs: 1 (round-robin), or with a partition concurrency up to its free
                    -- slots (a round then takes what a partition may run, one probe of the partitions for
                    -- several jobs; no partition gets more than its limit allows in any case).
                    SELECT f.k, f.n,
                           least(coalesce(f.slots, 1), coalesce(f.allowed, 2147483647),
                                 CASE WHEN cfg.partition_concurrency = 1 THEN 1 ELSE 2147483647 END) AS quantum
                      FROM free AS f
                     WHERE coalesce(f.slots, 1) >= 1 AND coalesce(f.allowed, 1) >= 1
                       -- Without a concurrency limit a partition has one turn per pass: one that had
                       -- its turn in this pass (in the fast path) waits for the next.
                       AND (cfg.partition_concurrency IS NOT NULL
                            OR coalesce(cardinality(array_positions(keys, f.k)), 0) < pass)
                ), picks AS (
                    SELECT e.n, e.k, l.id, l.ctid
                      FROM eligible AS e
                     CROSS JOIN LATERAL (
                           SELECT l.id, l.ctid FROM ${flyway:defaultSchema}.jobs AS l
                            WHERE l.queue = p_queue AND l.limit_key = e.k AND l.state IN ('queued', 'retrying')
                              AND l.run_at <= now_at AND l.attempts < l.max_attempts
                              AND (l.capability IS NULL OR l.capability = ANY (p_caps))
                              AND (p_types IS NULL OR l.type = ANY (p_types))
                              AND l.id <> ALL (picked)
                            ORDER BY l.priority DESC, l.id
                            LIMIT e.quantum
                              FOR UPDATE SKIP LOCKED) AS l
                     LIMIT room
                )
                SELECT (SELECT array_agg(c.id ORDER BY c.n) FROM picks AS c),
                       (SELECT array_agg(c.ctid ORDER BY c.n) FROM picks AS c),
                       (SELECT array_agg(c.k ORDER BY c.n) FROM picks AS c),
                       -- Only when the round took fewer than room (then it visited every partition of
                       -- its span anyway): a round that took room stops visiting there.
                       CASE WHEN (SELECT count(*) FROM picks) < room
                            THEN (SELECT v.k FROM visited AS v ORDER BY v.n DESC LIMIT 1) END
                  INTO r_ids, r_tids, r_keys, r_last;
            END IF;
            IF r_ids IS NOT NULL THEN
                picked := picked || r_ids;
                tids := tids || r_tids;
                keys := keys || r_keys;
                progressed := true;
            END IF;
            -- The next round (or the next claim, p_after) goes on after the last partition this round took
            -- from if it took all it could, else after the last one it visited.
            cur := CASE WHEN cardinality(r_ids) >= room THEN r_keys[cardinality(r_keys)] ELSE r_last END;
        END LOOP;
    END IF;

    IF cardinality(picked) = 0 THEN
        RETURN;
    END IF;

    -- Rate state: one write per limit that started jobs.
    IF cfg.rate_limit IS NOT NULL THEN
        INSERT INTO ${flyway:defaultSchema}.queue_rates AS r (queue, kind, partition, tat)
        VALUES (p_queue, 0, '', ${flyway:defaultSchema}.gcra_after(q_tat, now_at, cfg.rate_limit,
                                                                    cfg.rate_period_ms, cardinality(picked)))
        ON CONFLICT ON CONSTRAINT queue_rates_pkey DO UPDATE SET tat = EXCLUDED.tat;
    END IF;
    IF cfg.partition_rate_limit IS NOT NULL THEN
        INSERT INTO ${flyway:defaultSchema}.queue_rates AS r (queue, kind, partition, tat)
        SELECT p_queue, 1, t.k,
               ${flyway:defaultSchema}.gcra_after(r0.tat, now_at, cfg.partition_rate_limit,
                                                   cfg.partition_rate_period_ms, t.n::integer)
          FROM (SELECT x AS k, count(*) AS n FROM unnest(keys) AS u(x) GROUP BY x) AS t
          LEFT JOIN ${flyway:defaultSchema}.queue_rates AS r0
                 ON r0.queue = p_queue AND r0.kind = 1 AND r0.partition = t.k
        ON CONFLICT ON CONSTRAINT queue_rates_pkey DO UPDATE SET tat = EXCLUDED.tat;
    END IF;

    -- The claim itself, as the unlimited claim's update, by the locked rows' addresses; attempted_at is the
    -- instant the limits were read (after the lock), not the transaction's start. As the unlimited claim,
    -- it turns the events trigger off for its update (whose transition tables would copy every claimed
    -- row twice) and its caller announces the jobs (LimitsSql.CLAIM_LIMITED); the setting is turned back
    -- off at once, so no later statement of the caller's transaction goes unannounced.
    PERFORM set_config('pgjobs.claim_announces', 'on', true);
    RETURN QUERY
    WITH claimed AS (
        UPDATE ${flyway:defaultSchema}.jobs AS j
           SET state = 'running', attempts = j.attempts + 1, attempted_at = now_at,
               heartbeat_at = now_at, locked_by = p_worker, prefetched = false,
               limit_key = coalesce(j.limit_key, ''),
               claim_token = (SELECT nextval('${flyway:defaultSchema}.claim_tokens'))
         WHERE j.ctid = ANY (tids)
        RETURNING j.id, j.type::text AS type, j.queue::text AS queue, j.payload::text AS payload, j.priority,
                  j.attempts, j.max_attempts::integer AS max_attempts, j.run_at, j.created_at, j.context,
                  j.timeout_ms::bigint AS timeout_ms, j.claim_token, j.trace_context::text AS trace_context,
                  j.snoozes, j.limit_key::text AS limit_key
    )
    SELECT c.id, c.type, c.queue, c.payload, c.priority, c.attempts, c.max_attempts, c.run_at, c.created_at,
           c.context, c.timeout_ms, c.claim_token, c.trace_context, 0::bigint, c.snoozes, c.limit_key,
           fast_only
      FROM claimed AS c
      -- In the order picked (the rounds' order), except for a claim of the head alone (resumed): its jobs
      -- were read in claim order, and the worker sorts them so (ExecutionStore), as it sorts the unlimited
      -- claim's; an empty array leaves the join nothing to build or probe.
      LEFT JOIN unnest(CASE WHEN fast_only THEN '{}'::uuid[] ELSE picked END) WITH ORDINALITY AS o(id, n)
             ON o.id = c.id
     ORDER BY o.n;
    PERFORM set_config('pgjobs.claim_announces', 'off', true);
END
$$;
