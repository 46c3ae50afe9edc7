package io.pgjobs.store;

/**
 * The statements that enqueue jobs: one job, one job with an idempotency key, and many by COPY, each
 * with the notifications of its inserted rows. Placeholders as in {@link JobSql}.
 */
final class EnqueueSql {
  private EnqueueSql() {}

  /**
   * The tail of the single-row inserts: {@link JobSql#NOTIFY_INSERTED} for exactly one row of CTE
   * {@code ins}, without its aggregates (a single enqueue is the statement W2 measures). One entry always
   * fits (see {@link JobSql#EVENT_NAME_MAX_CHARS}; the jobs table's CHECKs bound the names).
   */
  static final String NOTIFY_ONE_INSERTED =
      """
      SELECT run_at, created_at,
             CASE WHEN run_at <= now() THEN pg_notify('{schema}_jobs_ready', queue) END AS woken,
             pg_notify('{schema}_job_events', json_build_object(
                 'op', 'state', 'count', 1, 'truncated', false,
                 'jobs', json_build_array(json_build_object('id', id, 'state', state, 'type', type,
                                                            'queue', queue, 'attempts', attempts)))::text)
        FROM ins""";

  /** One job. Run at a delay of none, {@code run_at} is the database's now(). */
  static final String INSERT =
      """
      WITH ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, max_attempts, run_at,
                                     created_at, context, idempotency_key, timeout_ms, parent_id,
                                     trace_context)
          VALUES (?, ?, ?, ?::jsonb, ?, 'queued', ?,
                  COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                  now(), ?, ?, ?, ?, ?)
          RETURNING id, state, type, queue, attempts, run_at, created_at
      )
      """ + NOTIFY_ONE_INSERTED;

  /**
   * One job with an idempotency key. The key row goes in first; ON CONFLICT DO NOTHING makes a
   * concurrent second enqueue of the same key wait for the first transaction and then insert nothing,
   * so exactly one job exists per key. Zero rows back means "replay": look the key up.
   */
  static final String INSERT_WITH_KEY =
      """
      WITH key AS (
          INSERT INTO {schema}.job_keys (idempotency_key, job_id, fingerprint) VALUES (?, ?, ?)
          ON CONFLICT (idempotency_key) DO NOTHING
          RETURNING job_id
      ), ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, max_attempts, run_at,
                                     created_at, context, idempotency_key, timeout_ms, parent_id,
                                     trace_context)
          SELECT key.job_id, ?, ?, ?::jsonb, ?, 'queued', ?,
                 COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                 now(), ?, ?, ?, ?, ?
            FROM key
          RETURNING id, state, type, queue, attempts, run_at, created_at
      )
      """ + NOTIFY_ONE_INSERTED;

  static final String FIND_KEY =
      """
      SELECT job_id, fingerprint FROM {schema}.job_keys WHERE idempotency_key = ?""";

  /** Bulk insert: the columns a COPY row carries, in order (see {@link CopyRows}). */
  static final String COPY_JOBS =
      """
      COPY {schema}.jobs (id, type, queue, payload, priority, max_attempts, context, timeout_ms, trace_context,
                          run_at, created_at)
      FROM STDIN""";

  /** Bulk insert of jobs due now: state, run_at and created_at take their defaults. */
  static final String COPY_DUE_JOBS =
      """
      COPY {schema}.jobs (id, type, queue, payload, priority, max_attempts, context, timeout_ms, trace_context)
      FROM STDIN""";

  /**
   * The database's transaction time, read once per bulk insert so COPY rows carry the server's time
   * ({@code now()}, as in {@link #INSERT}).
   */
  static final String NOW = "SELECT now()";

  /**
   * After a COPY, in its transaction: wakes the workers of the queues in the first array (those that
   * got jobs due now) and announces the event; the JSON is built by the caller from the rows it
   * copied (the true count and the first jobs that fit, as {@link JobSql#NOTIFY_INSERTED} does).
   */
  static final String NOTIFY_COPIED =
      """
      SELECT (SELECT count(pg_notify('{schema}_jobs_ready', q)) FROM unnest(?::text[]) AS q),
             pg_notify('{schema}_job_events', ?)""";
}
