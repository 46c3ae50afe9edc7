package io.pgjobs.store;

/**
 * The SQL of liveness and maintenance: worker registration and heartbeats, leases, rescue of jobs whose
 * worker went silent, removal of dead workers, and pruning of finished jobs. Conventions as in
 * {@link JobSql}.
 */
final class WorkerSql {
  private WorkerSql() {}

  /**
   * One heartbeat of a worker, in one round trip: registers the worker (again, if maintenance removed it
   * during an outage) or renews it, and renews the heartbeat of the jobs it is running. Returns those
   * jobs with their cancel flags, so a missed cancel notification is seen here at the latest.
   */
  static final String HEARTBEAT =
      """
      WITH worker AS (
          INSERT INTO {schema}.workers (id, host, pid, queues, job_types, started_at, last_heartbeat)
          VALUES (?, ?, ?, ?::jsonb, ?::jsonb, now(), now())
          ON CONFLICT (id) DO UPDATE SET last_heartbeat = now()
          RETURNING id
      )
      UPDATE {schema}.jobs
         SET heartbeat_at = now()
       WHERE id = ANY(?::uuid[]) AND state = 'running' AND locked_by = (SELECT id FROM worker)
      RETURNING id, cancel_requested""";

  static final String DEREGISTER =
      """
      DELETE FROM {schema}.workers WHERE id = ?""";

  /** Live workers, with how many jobs each is running. */
  static final String LIST =
      """
      SELECT w.id, w.host, w.pid, w.queues::text, w.job_types::text, w.started_at, w.last_heartbeat,
             (SELECT count(*) FROM {schema}.jobs j WHERE j.locked_by = w.id AND j.state = 'running') AS running
        FROM {schema}.workers w
       ORDER BY w.started_at, w.id""";

  /**
   * Takes or renews a lease: succeeds (returns a row) if nobody holds it, we hold it, or the holder
   * let it expire.
   */
  static final String ACQUIRE_LEASE =
      """
      INSERT INTO {schema}.leases (name, holder, expires_at)
      VALUES (?, ?, now() + ?::bigint * interval '1 millisecond')
      ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE leases.holder = EXCLUDED.holder OR leases.expires_at < now()
      RETURNING holder""";

  static final String RELEASE_LEASE =
      """
      DELETE FROM {schema}.leases WHERE name = ? AND holder = ?""";

  /**
   * Rescue: running jobs whose heartbeat is older than the stale threshold belong to a worker that died
   * or lost the database. With attempts left they go back to 'retrying', due now, the attempt counted
   * and a worker_lost error recorded; with none left they are failed; if cancellation was asked they
   * end cancelled. Rows another transaction holds are skipped (SKIP LOCKED): a completion in flight
   * wins. Idle workers of the job's queue are woken.
   */
  static final String RESCUE_STALE =
      """
      WITH stale AS (
          SELECT id FROM {schema}.jobs
           WHERE state = 'running' AND heartbeat_at < now() - ?::bigint * interval '1 millisecond'
           ORDER BY heartbeat_at
           LIMIT ?
             FOR UPDATE SKIP LOCKED
      ), requeued AS (
          UPDATE {schema}.jobs AS j
             SET state = 'retrying', run_at = now(), locked_by = NULL, heartbeat_at = NULL,
                 errors = j.errors || """
          + JobSql.errorEntry("worker_lost", "'worker ' || locked_by || ' stopped heartbeating; job rescued'")
          + """

            FROM stale
           WHERE j.id = stale.id AND j.attempts < j.max_attempts AND NOT j.cancel_requested
          RETURNING j.queue
      ), ended AS (
          DELETE FROM {schema}.jobs AS j
           USING stale
           WHERE j.id = stale.id AND (j.attempts >= j.max_attempts OR j.cancel_requested)
          RETURNING j.*
      ), moved AS (
      """
          + JobSql.insertFinished(
              "ended",
              "CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END",
              "errors || "
                  + JobSql.errorEntry("worker_lost", "'worker ' || locked_by || ' stopped heartbeating; job ended'"),
              "NULL")
          + """

          RETURNING id
      ), woken AS (
          SELECT pg_notify('{schema}_jobs_ready', queue) FROM (SELECT DISTINCT queue FROM requeued) AS q
      )
      SELECT (SELECT count(*) FROM requeued) AS requeued, (SELECT count(*) FROM moved) AS ended,
             (SELECT count(*) FROM woken) AS woken""";

  /** Workers that stopped heartbeating without deregistering (killed processes). */
  static final String REMOVE_DEAD_WORKERS =
      """
      DELETE FROM {schema}.workers WHERE last_heartbeat < now() - ?::bigint * interval '1 millisecond'""";

  /** Finished jobs past retention, oldest first, a bounded batch at a time, with their idempotency keys. */
  static final String PRUNE_FINISHED =
      """
      WITH gone AS (
          DELETE FROM {schema}.finished_jobs
           WHERE id IN (SELECT id FROM {schema}.finished_jobs
                         WHERE finished_at < now() - ?::bigint * interval '1 millisecond'
                         ORDER BY finished_at
                         LIMIT ?)
          RETURNING id, idempotency_key
      ), keys AS (
          DELETE FROM {schema}.job_keys AS k
           USING gone
           WHERE k.idempotency_key = gone.idempotency_key AND k.job_id = gone.id
          RETURNING 1
      )
      SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM keys)""";
}
