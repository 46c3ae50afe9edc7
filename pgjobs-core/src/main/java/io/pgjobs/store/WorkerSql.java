package io.pgjobs.store;

/**
 * The SQL of liveness and maintenance: worker registration and heartbeats, leases, rescue of jobs whose
 * worker went silent, removal of dead workers, and pruning of finished jobs. Conventions as in
 * {@link JobSql}.
 */
final class WorkerSql {
  private WorkerSql() {}

  /** The dead-worker threshold of a worker that registered none (an older version): the default one. */
  static final java.time.Duration DEFAULT_DEAD_AFTER =
      io.pgjobs.config.PgJobsSettings.WORKER_DEAD_AFTER.defaultValue();

  /**
   * One heartbeat of a worker, in one round trip: registers the worker (again, if maintenance removed it
   * during an outage) or renews it, and renews the heartbeat of every job it holds under the claim token
   * the jsonb object maps the job's id to: running, claimed and waiting for a lane, or finished and
   * waiting for its outcome write. Jobs in the last array are marked {@code prefetched} (claimed, not
   * started): should the worker die, they go back to the queue with their attempt given back.
   *
   * <p>Rows another transaction holds are skipped, not waited for (a handler's own open transaction on
   * its row must not stall the heartbeat of every other job); the caller also bounds the wait for the
   * worker's own row with a lock timeout. The held jobs it did not renew are named in the worker's row
   * ({@code held_locked}), so {@link #RESCUE} leaves them to it. Returns the jobs renewed with their
   * cancel flags, so a missed cancel notification is seen here at the latest; and, with a NULL flag, the
   * held jobs that are no longer this worker's under that token (rescued or claimed again while the
   * worker was silent: a paused process, a frozen VM), read without a lock, so that their handlers stop.
   *
   * <p>Parameters: held ids, worker id, tokens (jsonb), then the worker's row (id, host, pid, queues,
   * job types, stuck lanes, capabilities, held ids, dead-worker threshold in ms), then the waiting ids,
   * then the worker id and the tokens again.
   */
  static final String HEARTBEAT = """
      WITH mine AS (
          SELECT j.id FROM {schema}.jobs AS j
           WHERE j.id = ANY (?) AND j.locked_by = ?
             AND j.claim_token = (? ->> j.id::text)::bigint
             FOR UPDATE SKIP LOCKED
      ), worker AS (
          INSERT INTO {schema}.workers (id, host, pid, queues, job_types, started_at, last_heartbeat, stuck_lanes,
                                        capabilities, held_locked, dead_after_ms)
          VALUES (?, ?, ?, ?::jsonb, ?::jsonb, now(), now(), ?, ?::text[],
                  ARRAY(SELECT h FROM unnest(?::uuid[]) AS h EXCEPT SELECT id FROM mine), ?)
          ON CONFLICT (id) DO UPDATE SET last_heartbeat = now(), stuck_lanes = EXCLUDED.stuck_lanes,
                                         held_locked = EXCLUDED.held_locked, dead_after_ms = EXCLUDED.dead_after_ms
          RETURNING id, held_locked
      ), renewed AS (
          UPDATE {schema}.jobs AS j
             SET heartbeat_at = now(), prefetched = (j.id = ANY (?))
           WHERE j.id = ANY (ARRAY(SELECT id FROM mine)) AND EXISTS (SELECT 1 FROM worker)
          RETURNING j.id, j.cancel_requested
      )
      SELECT id, cancel_requested FROM renewed
      UNION ALL
      SELECT h, NULL FROM worker, unnest(worker.held_locked) AS h
       WHERE NOT EXISTS (SELECT 1 FROM {schema}.jobs AS j
                          WHERE j.id = h AND j.locked_by = ? AND j.claim_token = (? ->> h::text)::bigint)""";

  /**
   * Whether the server session {@code pid} (of this user: another user's state reads as NULL) has been
   * waiting for its client for at least the given milliseconds: not running a statement, and no change of
   * state since. No row: no such session, or its state cannot be read.
   */
  static final String SESSION_WAITS_FOR_CLIENT = """
      SELECT state <> 'active' AND state_change < now() - ?::bigint * interval '1 millisecond'
        FROM pg_stat_activity
       WHERE pid = ? AND state IS NOT NULL""";

  static final String DEREGISTER = """
      DELETE FROM {schema}.workers WHERE id = ?""";

  /**
   * Whether worker {@code w} is alive, as {@link #RESCUE} judges it: heard from within its own dead-worker
   * threshold (the default one if it recorded none), counting silence only while the server was up. One
   * expression for every statement that asks.
   */
  private static final String WORKER_ALIVE =
      "greatest(w.last_heartbeat, pg_postmaster_start_time()) >= now() - coalesce(w.dead_after_ms, "
          + io.pgjobs.config.PgJobsSettings.WORKER_DEAD_AFTER.defaultValue().toMillis()
          + ") * interval '1 millisecond'";

  /**
   * Registered workers, with how many jobs each is running and whether it is alive as {@link #RESCUE}
   * judges it ({@link #WORKER_ALIVE}).
   */
  static final String LIST = """
      SELECT w.id, w.host, w.pid, w.queues::text, w.job_types::text, w.started_at, w.last_heartbeat,
             (SELECT count(*) FROM {schema}.jobs j WHERE j.locked_by = w.id AND j.state = 'running') AS running,
             w.stuck_lanes, w.capabilities,
             """ + WORKER_ALIVE + """
       AS alive
        FROM {schema}.workers w
       ORDER BY w.started_at, w.id""";

  /**
   * Takes or renews a lease: succeeds (returns a row) if nobody holds it, we hold it, or the holder
   * let it expire.
   */
  static final String ACQUIRE_LEASE = """
      INSERT INTO {schema}.leases (name, holder, expires_at)
      VALUES (?, ?, now() + ?::bigint * interval '1 millisecond')
      ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE leases.holder = EXCLUDED.holder OR leases.expires_at < now()
      RETURNING holder""";

  static final String RELEASE_LEASE = """
      DELETE FROM {schema}.leases WHERE name = ? AND holder = ?""";

  /**
   * Rescue of running jobs that no live worker holds: jobs whose worker's own row has not been renewed
   * for the dead-worker threshold (or is missing); jobs whose own heartbeat is older than that threshold
   * although their worker is alive, unless the worker's last beat named them as held but locked
   * ({@code held_locked}: a handler's own transaction had the row); and, whatever the worker says, jobs
   * whose own heartbeat is older than the stale threshold. A job a live worker holds is renewed by its
   * every beat (see {@link #HEARTBEAT}), so one that is not has been let go: a give-back that failed, a
   * claim a failover brought back after the worker had finished it.
   *
   * <p>Silence is counted only while the server was there to hear it: nothing is rescued before the
   * server has been up for the threshold ({@code pg_postmaster_start_time()}), so a restart or an outage
   * of the database does not make every live worker look dead the moment it comes back; the workers beat
   * again within their interval.
   *
   * <p>Jobs that never started (marked {@code prefetched} by the worker's last heartbeat) go back to the
   * queue as they were, the claim's attempt given back. Jobs that did start go back to 'retrying', due
   * now, the attempt counted and a worker_lost error recorded, or are failed when they have no attempts
   * left; if cancellation was asked they end cancelled. A workflow run lost in its last attempt with done
   * steps (which may have compensations) is not failed here, where its compensations cannot run: it gets
   * one execution more ({@code max_attempts} raised to its attempts + 1) and the marker signal
   * {@code (rescued)}, with which that execution replays the done steps, stops at the first one not done,
   * compensates and fails (WorkflowRunner); once only, so a run whose every execution kills its worker still
   * ends. The claim token is cleared, so a late write of the old claim matches nothing. Rows another transaction holds are skipped (SKIP LOCKED): a completion in
   * flight wins. Idle workers of the jobs' queues are woken.
   *
   * <p>Parameters: dead-worker threshold (ms), stale threshold (ms), batch size.
   */
  static final String RESCUE = """
      WITH bounds AS (
          SELECT now() - ?::bigint * interval '1 millisecond' AS dead_before,
                 now() - ?::bigint * interval '1 millisecond' AS stale_before,
                 pg_postmaster_start_time() AS server_started
      ), lost AS (
          SELECT j.id,
                 (NOT j.prefetched AND NOT j.cancel_requested AND j.attempts >= j.max_attempts
                  AND EXISTS (SELECT 1 FROM {schema}.workflow_steps AS s
                               WHERE s.run_id = j.id AND s.kind = 'step' AND s.state = 'done'
                                 AND s.name NOT IN ('(started)', '(version)'))
                  AND NOT EXISTS (SELECT 1 FROM {schema}.workflow_signals AS g
                                   WHERE g.run_id = j.id AND g.name = '(rescued)')) AS compensate
            FROM {schema}.jobs AS j, bounds AS b
           WHERE j.state = 'running'
             AND ((b.server_started < b.dead_before
                   AND (NOT EXISTS (SELECT 1 FROM {schema}.workers AS w
                                     WHERE w.id = j.locked_by AND w.last_heartbeat >= b.dead_before)
                        OR (j.heartbeat_at < b.dead_before
                            AND NOT EXISTS (SELECT 1 FROM {schema}.workers AS w
                                             WHERE w.id = j.locked_by AND j.id = ANY (w.held_locked)))))
                  OR (b.server_started < b.stale_before AND j.heartbeat_at < b.stale_before))
           ORDER BY j.heartbeat_at
           LIMIT ?
             FOR UPDATE OF j SKIP LOCKED
      ), unclaimed AS (
          UPDATE {schema}.jobs AS j
             SET state = CASE WHEN jsonb_array_length(j.errors) = 0 THEN 'queued' ELSE 'retrying' END,
                 attempts = j.attempts - 1, locked_by = NULL, heartbeat_at = NULL, claim_token = NULL,
                 prefetched = false
            FROM lost
           WHERE j.id = lost.id AND j.prefetched AND NOT j.cancel_requested
          RETURNING j.queue
      ), requeued AS (
          UPDATE {schema}.jobs AS j
             SET state = 'retrying', run_at = now(), locked_by = NULL, heartbeat_at = NULL, claim_token = NULL,
                 errors = j.errors || """
      + JobSql.errorEntry(
          "worker_lost", "'worker ' || locked_by || ' stopped heartbeating; job rescued'")
      + """

            FROM lost
           WHERE j.id = lost.id AND NOT j.prefetched AND j.attempts < j.max_attempts AND NOT j.cancel_requested
          RETURNING j.queue
      ), compensating AS (
          UPDATE {schema}.jobs AS j
             SET state = 'retrying', run_at = now(), max_attempts = j.attempts + 1, locked_by = NULL,
                 heartbeat_at = NULL, claim_token = NULL,
                 errors = j.errors || """
      + JobSql.errorEntry(
          "worker_lost",
          "'worker ' || locked_by || ' stopped heartbeating during the last attempt; job rescued for one"
              + " more execution, which compensates the done steps'")
      + """

            FROM lost
           WHERE j.id = lost.id AND lost.compensate
          RETURNING j.id, j.queue
      ), marked AS ( -- run to completion whether read or not, as every data-modifying WITH is
          INSERT INTO {schema}.workflow_signals (run_id, name, payload)
          SELECT id, '(rescued)', '{}'::jsonb FROM compensating
          ON CONFLICT (run_id, name) DO NOTHING
          RETURNING 1
      ), ended AS (
          DELETE FROM {schema}.jobs AS j
           USING lost
           WHERE j.id = lost.id AND NOT lost.compensate
             AND (j.cancel_requested OR (NOT j.prefetched AND j.attempts >= j.max_attempts))
          RETURNING j.*
      ), moved AS (
      """
      + JobSql.insertFinished(
          "ended",
          "CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END",
          "errors || "
              + JobSql.errorEntry(
                  "worker_lost", "'worker ' || locked_by || ' stopped heartbeating; job ended'"),
          "NULL")
      + """

          RETURNING id
      ), woken AS (
          SELECT pg_notify('{schema}_jobs_ready', queue)
            FROM (SELECT queue FROM requeued UNION SELECT queue FROM compensating
                  UNION SELECT queue FROM unclaimed) AS q
      )
      SELECT (SELECT count(*) FROM requeued) + (SELECT count(*) FROM compensating) AS requeued,
             (SELECT count(*) FROM moved) AS ended, (SELECT count(*) FROM unclaimed) AS unclaimed,
             (SELECT count(*) FROM woken) AS woken""";

  /**
   * Fails waiting jobs that no live worker will ever run: due jobs created longer than the unknown-type
   * grace ago, in a queue that at least one live worker serves, whose type none of the live workers
   * serving that queue has a handler for. Claims step over jobs of types a worker does not run
   * ({@code ExecutionSql.typeFilter}), so without this such a job would wait unseen for ever; a queue no
   * live worker serves is left alone (its workers may be stopped for a deployment, and {@code GET /queues}
   * says {@code unserved}). "Live" as {@link #LIST} judges it. The job moves to finished_jobs as failed
   * with an {@code unknown_type} error naming the type, the queue, the types its workers run and the grace,
   * written by the maintenance leader. Rows another transaction holds are skipped.
   *
   * <p>The due jobs of a served queue are read in full (the type is in no index): the leader runs this
   * at most once a minute by default ({@code UnknownTypeFailer}), and it reads what a queue overview reads.
   *
   * <p>Parameters: grace (ms); grace as text (for the message); the leader's id; batch size.
   */
  static final String FAIL_UNKNOWN_TYPES =
      """
      WITH live AS (
          SELECT w.queues, w.job_types FROM {schema}.workers AS w
           WHERE
           """ + WORKER_ALIVE + """

      ), served AS (
          SELECT DISTINCT q.queue, t.type
            FROM live
           CROSS JOIN LATERAL jsonb_object_keys(live.queues) AS q(queue)
           CROSS JOIN LATERAL jsonb_array_elements_text(live.job_types) AS t(type)
      ), args AS (
          SELECT now() - ?::bigint * interval '1 millisecond' AS created_before, ?::text AS grace, ?::text AS leader
      ), doomed AS (
          SELECT j.id FROM {schema}.jobs AS j, args
           WHERE j.state IN ('queued', 'retrying') AND j.run_at <= now() AND j.created_at < args.created_before
             AND j.queue IN (SELECT s.queue FROM served AS s)
             AND NOT EXISTS (SELECT 1 FROM served AS s WHERE s.queue = j.queue AND s.type = j.type)
           LIMIT ?
             FOR UPDATE OF j SKIP LOCKED
      ), ended AS (
          DELETE FROM {schema}.jobs AS j
           USING doomed
           WHERE j.id = doomed.id AND j.state IN ('queued', 'retrying')
          RETURNING j.*
      ), moved AS (
      """ + JobSql.insertFinished("ended", "'failed'", """
              errors || jsonb_build_array(jsonb_build_object(
                  'attempt', attempts,
                  'at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                  'kind', 'unknown_type', 'errorClass', 'io.pgjobs.UnknownJobType',
                  'message', 'no live worker serving queue ''' || ended.queue || ''' has a handler for job type '''
                      || ended.type || ''' (known types: '
                      || coalesce((SELECT string_agg(s.type, ', ' ORDER BY s.type) FROM served AS s
                                    WHERE s.queue = ended.queue), 'none')
                      || ') after a grace period of ' || (SELECT grace FROM args),
                  'stackHead', NULL, 'worker', (SELECT leader FROM args)))""", "NULL") + """

          RETURNING id
      )
      SELECT count(*) FROM moved""";

  /** Workers that stopped heartbeating without deregistering (killed processes). */
  static final String REMOVE_DEAD_WORKERS = """
      DELETE FROM {schema}.workers WHERE last_heartbeat < now() - ?::bigint * interval '1 millisecond'""";

  /**
   * The hot table's state for its maintenance: its dead row versions as PostgreSQL's statistics count them
   * (updated as transactions end, and by every vacuum to what it could not remove yet), its size in pages
   * as the planner's statistics last saw it ({@code pg_class.relpages}, set by vacuum and analyze), its
   * size in pages now, and its live rows as the statistics count them (kept like the dead ones).
   */
  static final String HOT_TABLE_STATE = """
      SELECT pg_stat_get_dead_tuples(c.oid), c.relpages,
             pg_relation_size(c.oid) / current_setting('block_size')::int,
             pg_stat_get_live_tuples(c.oid)
        FROM pg_class AS c
       WHERE c.oid = '{schema}.jobs'::regclass""";

  /** Refreshes the hot table's planner statistics; {@code SKIP_LOCKED} as {@link #VACUUM_HOT_TABLE}. */
  static final String ANALYZE_HOT_TABLE = """
      ANALYZE (SKIP_LOCKED) {schema}.jobs""";

  /**
   * What holds the hot table's xmin horizon back the most, as far as this user may see: the session,
   * replication slot or prepared transaction with the oldest transaction id or snapshot, named with that id
   * (so a new holder, or the same session in a new transaction, reads differently). Null if nothing visible
   * holds one. Only what holds back this database's tables counts: sessions and prepared transactions of
   * this database, and sessions and slots of no database (a standby's feedback through a walsender or a
   * physical slot holds back every database). Since PostgreSQL 14 a transaction in another database does
   * not keep this one's dead rows; named as the holder, its end would let the next vacuum run at once for
   * nothing (seen with other databases' transactions coming and going on a shared server).
   */
  static final String HORIZON_HOLDER = """
      SELECT holder FROM (
          SELECT 'session ' || pid || ' ' || coalesce(backend_xid::text, '-') || ' ' || coalesce(backend_xmin::text, '-'),
                 greatest(age(backend_xid), age(backend_xmin))
            FROM pg_stat_activity
           WHERE (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL) AND pid <> pg_backend_pid()
             AND (datname = current_database() OR datname IS NULL)
          UNION ALL
          SELECT 'slot ' || slot_name || ' ' || xmin::text, age(xmin) FROM pg_replication_slots
           WHERE xmin IS NOT NULL AND (database IS NULL OR database = current_database())
          UNION ALL
          SELECT 'prepared ' || gid || ' ' || transaction::text, age(transaction) FROM pg_prepared_xacts
           WHERE database = current_database()
      ) AS h(holder, age)
       ORDER BY age DESC
       LIMIT 1""";

  /**
   * Vacuums the hot table. {@code SKIP_LOCKED}: if another vacuum (autovacuum) or a schema change holds
   * the table, PostgreSQL skips it with a warning instead of waiting. {@code TRUNCATE false}: the empty
   * pages at the table's end are kept for the rows to come, not cut off — cutting them takes an exclusive
   * lock that every claim and completion waits for (W5: 409 ms of stalled pickups after a long
   * transaction had grown the table to 273 MB). Must run outside a transaction. A table that emptied
   * after a peak gets {@link #VACUUM_HOT_TABLE_GIVING_PAGES_BACK} instead.
   */
  static final String VACUUM_HOT_TABLE = """
      VACUUM (SKIP_LOCKED, TRUNCATE false) {schema}.jobs""";

  /**
   * {@link #VACUUM_HOT_TABLE} that also gives the empty pages at the table's end back to the operating
   * system, for a table that emptied after a peak ({@code HotTableVacuum} decides when). The explicit
   * option wins over the table's {@code vacuum_truncate = false}. PostgreSQL takes the
   * exclusive lock the cut needs only if it is free at once (it tries again every 50 ms, for 5 s at most,
   * then keeps the pages), and lets go of it as soon as another session waits for it, having cut what it
   * had checked by then: so the cut never queues in front of a claim, and a claim that arrives meanwhile
   * waits ~20 ms at most, not for the whole cut.
   */
  static final String VACUUM_HOT_TABLE_GIVING_PAGES_BACK = """
      VACUUM (SKIP_LOCKED, TRUNCATE true) {schema}.jobs""";

  /**
   * Makes the partitions of {@code finished_jobs} ahead of time (V7__partitioned_history.sql): parameters
   * the width and how far ahead, in milliseconds. Returns how many were made.
   */
  static final String ENSURE_HISTORY_PARTITIONS = """
      SELECT {schema}.ensure_history_partitions(?::bigint * interval '1 millisecond',
                                                ?::bigint * interval '1 millisecond')""";

  /**
   * Counts per queue and state, once, each partition of {@code finished_jobs} whose upper bound is more
   * than the parameter (ms) past, for the queue overview; returns how many it counted.
   */
  static final String COUNT_HISTORY_PARTITIONS = """
      SELECT {schema}.count_history_partitions(?::bigint * interval '1 millisecond')""";

  /**
   * Detaches the oldest partition of {@code finished_jobs} whose upper bound is past the retention
   * (parameter, ms), after deleting its jobs' rows in the side tables; its name and estimated row count,
   * or no row. The caller drops the detached table in a transaction of its own.
   */
  static final String DROP_HISTORY_PARTITION = """
      SELECT partition_name, approximate_rows
        FROM {schema}.drop_history_partition(now() - ?::bigint * interval '1 millisecond')""";

  /** Tables of the history detached and not dropped yet (a process died between the two). */
  static final String DETACHED_HISTORY_TABLES = """
      SELECT {schema}.detached_history_tables()""";

  /**
   * Rows of the default partition of {@code finished_jobs} (those no partition's range covered when they
   * were written, V7__partitioned_history.sql) past retention, oldest first, a bounded batch at a time,
   * with their idempotency keys and
   * the dependency edges they were the child of (a graph's edges go with the job that waited), their
   * names in their graphs, the idempotency keys of the graphs they were the first job of, and the
   * recorded steps of the workflow runs they were.
   */
  static final String PRUNE_DEFAULT_PARTITION = """
      WITH gone AS (
          DELETE FROM {schema}.finished_jobs_default
           WHERE id IN (SELECT id FROM {schema}.finished_jobs_default
                         WHERE finished_at < now() - ?::bigint * interval '1 millisecond'
                         ORDER BY finished_at
                         LIMIT ?)
          RETURNING id, idempotency_key
      ), keys AS (
          DELETE FROM {schema}.job_keys AS k
           USING gone
           WHERE k.idempotency_key = gone.idempotency_key AND k.job_id = gone.id
          RETURNING 1
      ), edges AS (
          DELETE FROM {schema}.job_dependencies AS d
           WHERE d.child_id = ANY (ARRAY(SELECT id FROM gone))
      ), names AS (
          DELETE FROM {schema}.job_graph_names AS n
           WHERE n.job_id = ANY (ARRAY(SELECT id FROM gone))
      ), graph_keys AS (
          DELETE FROM {schema}.graph_keys AS g
           WHERE g.first_job = ANY (ARRAY(SELECT id FROM gone))
      ), workflow_steps AS (
          DELETE FROM {schema}.workflow_steps AS w
           WHERE w.run_id = ANY (ARRAY(SELECT id FROM gone))
      ), workflow_signals AS (
          DELETE FROM {schema}.workflow_signals AS w
           WHERE w.run_id = ANY (ARRAY(SELECT id FROM gone))
      )
      SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM keys)""";

  /**
   * Key rows of unique jobs with finished states (V18__unique_states.sql) that no longer hold anything, a
   * bounded batch at a time: rows whose period ended longer ago than the grace (first parameter, ms; an
   * enqueue whose transaction began in that period could still compute its key), and rows whose holder
   * no longer counts ({@link EnqueueSql#HOLDER_GONE}: finished outside the set, pruned, deleted). The
   * condition is repeated outside the sub-select because a row taken over by a concurrent enqueue is
   * re-checked in its newest version, whose writer this snapshot does not see: such a row is kept.
   */
  static final String PRUNE_UNIQUE_KEYS =
      """
      WITH gone AS (
          DELETE FROM {schema}.unique_keys AS uk
           WHERE uk.unique_key IN (SELECT uk.unique_key FROM {schema}.unique_keys AS uk
                                    WHERE uk.expires_at < now() - ?::bigint * interval '1 millisecond'
                                       OR """ + EnqueueSql.HOLDER_GONE + """

                                    LIMIT ?)
             AND (uk.expires_at < now() - ?::bigint * interval '1 millisecond' OR """ + EnqueueSql.HOLDER_GONE + """
      )
          RETURNING 1
      )
      SELECT count(*) FROM gone""";
}
