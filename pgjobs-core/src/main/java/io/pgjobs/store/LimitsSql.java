package io.pgjobs.store;

/**
 * The statements of flow control: a queue's limits (columns of {@code queues}), the partition rules clients
 * key jobs by, the limited claim, and what the limits leave waiting. The claim's logic itself is the SQL
 * function {@code claim_limited} (V2__flow_control.sql), one call per claim. Placeholders as in
 * {@link JobSql}.
 */
final class LimitsSql {
  private LimitsSql() {}

  /**
   * The transaction-level advisory lock every limited claim of a queue takes first (claim_limited): a change
   * of the queue's limits takes it too, so that it lands between two claims, never inside one. Parameter:
   * the queue.
   */
  static final String LOCK_QUEUE =
      "SELECT pg_advisory_xact_lock(hashtextextended('pgjobs.limits:' || '{schema}' || ':' || ?, 0))";

  /**
   * Sets a queue's limits (the row is made if the queue has none). A worker's declaration ({@code code})
   * does not replace limits set at run time ({@code api}): the update then changes nothing and returns no
   * row. Parameters: queue, the nine limit columns, the source, the source again.
   */
  static final String UPSERT = """
      INSERT INTO {schema}.queues AS q (name, global_concurrency, rate_limit, rate_period_ms, rate_burst,
                                        partition_by, partition_concurrency, partition_rate_limit,
                                        partition_rate_period_ms, partition_rate_burst, limits_source,
                                        limits_updated_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now(), now())
      ON CONFLICT (name) DO UPDATE
         SET global_concurrency = EXCLUDED.global_concurrency, rate_limit = EXCLUDED.rate_limit,
             rate_period_ms = EXCLUDED.rate_period_ms, rate_burst = EXCLUDED.rate_burst,
             partition_by = EXCLUDED.partition_by, partition_concurrency = EXCLUDED.partition_concurrency,
             partition_rate_limit = EXCLUDED.partition_rate_limit,
             partition_rate_period_ms = EXCLUDED.partition_rate_period_ms,
             partition_rate_burst = EXCLUDED.partition_rate_burst, limits_source = EXCLUDED.limits_source,
             limits_updated_at = now(), updated_at = now()
       WHERE ?::text = 'api' OR q.limits_source IS DISTINCT FROM 'api'
      RETURNING q.name""";

  /**
   * Gives the waiting jobs of a queue that has just got a partition rule their partition, as a client would
   * have at enqueue ({@code partition_key}); jobs with a key keep theirs. Parameter: the queue.
   */
  static final String KEY_WAITING = """
      UPDATE {schema}.jobs AS j
         SET limit_key = coalesce(left({schema}.partition_key(q.partition_by, j.type, j.payload), 255), '')
        FROM {schema}.queues AS q
       WHERE q.name = j.queue AND q.partition_by IS NOT NULL
         AND j.queue = ? AND j.state IN ('queued', 'retrying') AND j.limit_key IS NULL""";

  /**
   * Makes the jobs of a queue that run while it gets its first limits count toward them: the unlimited claim
   * started them without a key, so jobs_limited_running_idx does not hold them yet. Parameter: the queue.
   */
  static final String COUNT_RUNNING = """
      UPDATE {schema}.jobs AS j
         SET limit_key = ''
       WHERE j.queue = ? AND j.locked_by IS NOT NULL AND j.limit_key IS NULL""";

  /** Removes a queue's limits (its rate state with them). Parameter: the queue. */
  static final String CLEAR = """
      WITH cleared AS (
          UPDATE {schema}.queues
             SET global_concurrency = NULL, rate_limit = NULL, rate_period_ms = NULL, rate_burst = NULL,
                 partition_by = NULL, partition_concurrency = NULL, partition_rate_limit = NULL,
                 partition_rate_period_ms = NULL, partition_rate_burst = NULL, limits_source = NULL,
                 limits_updated_at = now(), updated_at = now()
           WHERE name = ?
          RETURNING name
      )
      DELETE FROM {schema}.queue_rates WHERE queue IN (SELECT name FROM cleared)""";

  /** Wakes a queue's workers (its limits were raised or removed). Parameter: the queue. */
  static final String WAKE = "SELECT pg_notify('{schema}_jobs_ready', ?)";

  /** The limits of every limited queue. */
  static final String ALL = """
      SELECT name, global_concurrency, rate_limit, rate_period_ms, rate_burst, partition_by,
             partition_concurrency, partition_rate_limit, partition_rate_period_ms, partition_rate_burst,
             limits_source, limits_updated_at
        FROM {schema}.queues
       WHERE limited
       ORDER BY name""";

  /** The limits of one queue, if it is limited ({@link #ALL}'s columns). Parameter: the queue. */
  static final String ONE = """
      SELECT name, global_concurrency, rate_limit, rate_period_ms, rate_burst, partition_by,
             partition_concurrency, partition_rate_limit, partition_rate_period_ms, partition_rate_burst,
             limits_source, limits_updated_at
        FROM {schema}.queues
       WHERE limited AND name = ?""";

  /** The partition rule of every partitioned queue (what clients key jobs by at enqueue). */
  static final String PARTITION_RULES = """
      SELECT name, partition_by FROM {schema}.queues WHERE partition_by IS NOT NULL""";

  /**
   * The limited claim: {@code claim_limited} (V2__flow_control.sql), and the job event announcing its jobs
   * {@code running} ({@link JobSql#stateEvent}, as {@link ExecutionSql#CLAIM_TAIL} does for the unlimited
   * claim: the function's update does not fire the events trigger). Columns as the claim statements',
   * plus each job's partition (16). Parameters: worker id, queue, most jobs, the types the worker runs
   * (text[] or NULL for all), its capabilities (text[]), the partition its last claim of the queue ended
   * at (or NULL), and its claim cursor's levels, positions' run_at and ids as {@code ClaimCursor} writes
   * them for the unlimited claim (array literals, or NULL for a full pass). Column 17: whether the claim's
   * jobs are the fast path's alone (the cursor may move past them).
   */
  static final String CLAIM_LIMITED = """
      WITH claimed AS (
      SELECT f.*, 'running' AS state
        FROM {schema}.claim_limited(?, ?, ?, ?::text[], ?::text[], ?, ?::int[], ?::text[]::timestamptz[],
                                    ?::uuid[]) AS f
      ), announced AS (
      """ + JobSql.stateEvent("claimed") + """

      )
      SELECT id, type, queue, payload, priority, attempts, max_attempts, run_at, created_at, context,
             timeout_ms, claim_token, trace_context, (SELECT count(*) FROM announced) AS announced, snoozes,
             limit_key, resumed
        FROM claimed""";

  /**
   * A limited queue's usage now: running jobs in all (those its limits count), waiting jobs that are due,
   * and its rate state. Parameter: the queue (three times).
   */
  static final String USAGE = """
      SELECT (SELECT count(*) FROM {schema}.jobs
               WHERE queue = ? AND locked_by IS NOT NULL AND limit_key IS NOT NULL) AS running,
             (SELECT count(*) FROM {schema}.jobs
               WHERE queue = ? AND state IN ('queued', 'retrying') AND run_at <= now()) AS waiting,
             (SELECT tat FROM {schema}.queue_rates WHERE queue = ? AND kind = 0 AND partition = '') AS tat,
             now() AS now""";

  /**
   * The partitions of a limited queue with running or due waiting jobs, busiest first (at most the limit
   * given): running, waiting, and the partition's rate state. Parameters: the queue four times, then the limit.
   */
  static final String PARTITIONS = """
      SELECT p.partition, coalesce(r.running, 0) AS running, coalesce(w.waiting, 0) AS waiting, s.tat
        FROM (SELECT DISTINCT coalesce(limit_key, '') AS partition FROM {schema}.jobs
               WHERE queue = ? AND (locked_by IS NOT NULL AND limit_key IS NOT NULL
                                    OR state IN ('queued', 'retrying') AND run_at <= now())) AS p
        LEFT JOIN (SELECT limit_key AS partition, count(*) AS running FROM {schema}.jobs
                    WHERE queue = ? AND locked_by IS NOT NULL AND limit_key IS NOT NULL
                    GROUP BY limit_key) AS r USING (partition)
        LEFT JOIN (SELECT coalesce(limit_key, '') AS partition, count(*) AS waiting FROM {schema}.jobs
                    WHERE queue = ? AND state IN ('queued', 'retrying') AND run_at <= now()
                    GROUP BY 1) AS w USING (partition)
        LEFT JOIN {schema}.queue_rates AS s ON s.queue = ? AND s.kind = 1 AND s.partition = p.partition
       ORDER BY coalesce(r.running, 0) + coalesce(w.waiting, 0) DESC, p.partition
       LIMIT ?""";

  /**
   * Gives waiting jobs of partitioned queues that have no key the one their queue's rule gives them, at most
   * {@code ?} jobs: jobs a client enqueued without one (it had not read the rule yet, an older pgjobs,
   * plain SQL). The limited claim visits keyed partitions only. It reads every waiting job of those queues
   * (no index holds the unkeyed ones alone), so maintenance runs it every second only while it finds such
   * jobs or a partition rule changed, else at gaps doubling up to a minute (PartitionKeyer).
   */
  static final String KEY_UNKEYED = """
      UPDATE {schema}.jobs AS j
         SET limit_key = coalesce(left({schema}.partition_key(q.partition_by, j.type, j.payload), 255), '')
        FROM {schema}.queues AS q
       WHERE j.id IN (SELECT u.id FROM {schema}.jobs AS u JOIN {schema}.queues AS uq ON uq.name = u.queue
                       WHERE uq.partition_by IS NOT NULL AND u.state IN ('queued', 'retrying')
                         AND u.limit_key IS NULL
                       LIMIT ? FOR UPDATE OF u SKIP LOCKED)
         AND q.name = j.queue""";

  /**
   * Counts in the running jobs of limited queues that have no key: jobs an unlimited claim started while
   * the queue's first limits were being set (its statement began before they committed). Maintenance runs
   * it every second.
   */
  static final String COUNT_UNKEYED_RUNNING = """
      UPDATE {schema}.jobs AS j
         SET limit_key = ''
        FROM {schema}.queues AS q
       WHERE q.limited AND j.queue = q.name AND j.state = 'running' AND j.limit_key IS NULL""";

  /**
   * How many queues are partitioned and how many limited, and when a partitioned queue's limits last
   * changed: maintenance's partition keying runs its statements only when there are such queues (without,
   * they would still read the hot table's ready jobs every second), and looks for unkeyed waiting jobs at
   * once after a rule changed.
   */
  static final String LIMITED_COUNTS = """
      SELECT count(*) FILTER (WHERE partition_by IS NOT NULL), count(*) FILTER (WHERE limited),
             max(limits_updated_at) FILTER (WHERE partition_by IS NOT NULL)
        FROM {schema}.queues""";

  /** Deletes rate state that says nothing any more (its next start is long past). */
  static final String PRUNE_RATES = """
      DELETE FROM {schema}.queue_rates WHERE tat < now() - interval '1 day'""";

  /**
   * Why one job waits, computed for its own partition (not the busiest partitions {@link #PARTITIONS}
   * reports): its queue, state, partition, whether it is due, and the first limit that holds it back, in
   * the order claim_limited applies them (the queue's concurrency, the queue's rate, the partition's
   * concurrency, the partition's rate); NULL when none does (it waits for a lane) or it is not waiting.
   * Counts running jobs as jobs_limited_running_idx holds them; a rate allows a start when
   * {@code gcra_allowed} is at least 1. No row for a job not found; {@code limited} false (or NULL) for a
   * job in an unlimited queue. Parameter: the job's id.
   */
  static final String JOB_WAIT = """
      SELECT j.queue, j.state, j.limit_key, coalesce(q.limited, false) AS limited,
             (j.state IN ('queued', 'retrying') AND j.run_at <= now()) AS due,
             CASE
               WHEN NOT (j.state IN ('queued', 'retrying') AND j.run_at <= now())
                    OR NOT coalesce(q.limited, false) THEN NULL
               WHEN q.global_concurrency IS NOT NULL
                    AND (SELECT count(*) FROM {schema}.jobs AS r
                          WHERE r.queue = j.queue AND r.locked_by IS NOT NULL AND r.limit_key IS NOT NULL)
                        >= q.global_concurrency THEN 'at_global_limit'
               WHEN q.rate_limit IS NOT NULL
                    AND {schema}.gcra_allowed(
                          (SELECT s.tat FROM {schema}.queue_rates AS s
                            WHERE s.queue = j.queue AND s.kind = 0 AND s.partition = ''),
                          now(), q.rate_limit, q.rate_period_ms, q.rate_burst) < 1 THEN 'rate_limited'
               WHEN q.partition_by IS NULL THEN NULL
               WHEN q.partition_concurrency IS NOT NULL
                    AND (SELECT count(*) FROM {schema}.jobs AS r
                          WHERE r.queue = j.queue AND r.locked_by IS NOT NULL
                            AND r.limit_key = coalesce(j.limit_key, ''))
                        >= q.partition_concurrency THEN 'partition_busy'
               WHEN q.partition_rate_limit IS NOT NULL
                    AND {schema}.gcra_allowed(
                          (SELECT s.tat FROM {schema}.queue_rates AS s
                            WHERE s.queue = j.queue AND s.kind = 1 AND s.partition = coalesce(j.limit_key, '')),
                          now(), q.partition_rate_limit, q.partition_rate_period_ms, q.partition_rate_burst)
                        < 1 THEN 'partition_rate_limited'
             END AS waiting_for
        FROM {schema}.jobs AS j
        LEFT JOIN {schema}.queues AS q ON q.name = j.queue
       WHERE j.id = ?""";
}
