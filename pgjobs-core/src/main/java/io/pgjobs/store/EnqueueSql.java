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
  static final String NOTIFY_ONE_INSERTED = """
      SELECT run_at, created_at,
             CASE WHEN run_at <= now() THEN pg_notify('{schema}_jobs_ready', queue) END AS woken,
             pg_notify('{schema}_job_events', json_build_object(
                 'op', 'state', 'count', 1, 'truncated', false,
                 'jobs', json_build_array(json_build_object('id', id, 'state', state, 'type', type,
                                                            'queue', queue, 'attempts', attempts)))::text)
        FROM ins""";

  /** One job. Run at a delay of none, {@code run_at} is the database's now(). */
  static final String INSERT = """
      WITH ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, max_attempts, run_at,
                                     created_at, context, timeout_ms, parent_id, capability, trace_context,
                                     limit_key, idempotency_key)
          VALUES (?, ?, ?, ?::jsonb, ?, 'queued', ?,
                  COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                  now(), ?, ?, ?, ?, ?, ?, ?)
          RETURNING id, state, type, queue, attempts, run_at, created_at
      )
      """ + NOTIFY_ONE_INSERTED;

  /**
   * One job with an idempotency key. The key row goes in first; ON CONFLICT DO NOTHING makes a
   * concurrent second enqueue of the same key wait for the first transaction and then insert nothing,
   * so exactly one job exists per key. Zero rows back means "replay": look the key up.
   */
  static final String INSERT_WITH_KEY = """
      WITH key AS (
          INSERT INTO {schema}.job_keys (idempotency_key, job_id, fingerprint) VALUES (?, ?, ?)
          ON CONFLICT (idempotency_key) DO NOTHING
          RETURNING job_id
      ), ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, max_attempts, run_at,
                                     created_at, context, timeout_ms, parent_id, capability, trace_context,
                                     limit_key, idempotency_key)
          SELECT key.job_id, ?, ?, ?::jsonb, ?, 'queued', ?,
                 COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                 now(), ?, ?, ?, ?, ?, ?, ?
            FROM key
          RETURNING id, state, type, queue, attempts, run_at, created_at
      )
      """ + NOTIFY_ONE_INSERTED;

  /**
   * The unique key of a job, from its base (SHA-256 of type, queue, payload part and period length,
   * computed in Java: {@code UniqueKeys}) and its period in milliseconds: the base itself without a
   * period, else SHA-256 of the base followed by the number of the period that now() falls in (periods
   * counted from the epoch, as an 8-byte big-endian integer). The bulk inserts compute it in their own
   * statement too ({@link #UNIQUE_ROWS}): the period is always the one the INSERT's own now() falls in,
   * never one read before it (at a period's end that would be the previous period, whose key can then
   * stand beside a single enqueue's key of the new one).
   */
  private static final String UNIQUE_KEY = """
      CASE WHEN k.period_ms IS NULL THEN k.base
           ELSE sha256(k.base || int8send(floor(extract(epoch FROM now()) * 1000)::bigint / k.period_ms)) END""";

  /**
   * The end of the period {@code now()} falls in (NULL without a period): when a finished holder stops
   * counting ({@code unique_keys.expires_at}).
   */
  private static final String PERIOD_END = """
      CASE WHEN k.period_ms IS NOT NULL THEN to_timestamp(
                     (floor(extract(epoch FROM now()) * 1000)::bigint / k.period_ms + 1) * k.period_ms / 1000.0)
                 END""";

  /**
   * The rows of a bulk insert of unique jobs (CTE {@code r}): the four arrays (new id, payload, key base in
   * hex, computed by {@link EnqueueStore}; distinct by base; partition key or NULL) and the period in milliseconds (or NULL), each
   * row with its {@code unique_key} ({@link #UNIQUE_KEY}, from this statement's now()) and its period's end.
   * Rows with distinct bases have distinct keys; the inserts take them in key order, one order for every
   * caller, so that two overlapping batches wait for each other's keys instead of deadlocking.
   */
  private static final String UNIQUE_ROWS = """
      WITH r AS (
          SELECT r.id, r.payload, r.base_hex, r.limit_key,
      """ + UNIQUE_KEY + """
       AS unique_key,
      """ + PERIOD_END + """
       AS expires_at
            FROM unnest(?::uuid[], ?::text[], ?::text[], ?::text[]) AS r(id, payload, base_hex, limit_key)
           CROSS JOIN LATERAL (SELECT decode(r.base_hex, 'hex') AS base, ?::bigint AS period_ms) AS k
      )""";

  /**
   * The replacements a duplicate makes in the existing job: run_at and/or payload, each only when asked
   * (the two boolean parameters) and only while the job is not running; a running job keeps its own.
   */
  private static final String REPLACE = """
      ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO UPDATE
         SET run_at  = CASE WHEN ?::boolean AND j.state <> 'running' THEN EXCLUDED.run_at  ELSE j.run_at END,
             payload = CASE WHEN ?::boolean AND j.state <> 'running' THEN EXCLUDED.payload ELSE j.payload END""";

  /**
   * One unique job (V14__unique_jobs.sql): inserted, or, when an unfinished job with the same unique key
   * exists, that job back (with {@code duplicate} true). ON CONFLICT on the partial unique index makes a
   * concurrent enqueue of the same key wait for the first transaction and then take its row, and an enqueue
   * racing a job that is leaving the table (finishing) insert once it has gone: PostgreSQL's speculative
   * insertion, no read-then-insert. DO UPDATE rather than DO NOTHING so the existing row comes back in the
   * same statement (River does the same); a duplicate writes one row version of that job, which is what
   * {@code replace} needs anyway. Wakes the queue for a new job due now or a replaced run_at now due;
   * announces only a new job.
   */
  static final String INSERT_UNIQUE =
      """
      WITH ins AS (
          INSERT INTO {schema}.jobs AS j (id, type, queue, payload, priority, state, max_attempts, run_at,
                                          created_at, context, timeout_ms, parent_id, capability, trace_context,
                                          limit_key, unique_key)
          SELECT ?, ?, ?, ?::jsonb, ?, 'queued', ?,
                 COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                 now(), ?, ?, ?, ?, ?, ?,
      """ + UNIQUE_KEY + """

            FROM (SELECT ?::bytea AS base, ?::bigint AS period_ms) AS k
      """ + REPLACE + """

          RETURNING
      """ + JobSql.HOT_COLUMNS + """
      , j.id <> ?::uuid AS duplicate
      )
      SELECT ins.*,
             CASE WHEN run_at <= now() AND state <> 'running' AND (NOT duplicate OR ?::boolean)
                  THEN pg_notify('{schema}_jobs_ready', queue) END AS woken,
             CASE WHEN NOT duplicate THEN pg_notify('{schema}_job_events', json_build_object(
                 'op', 'state', 'count', 1, 'truncated', false,
                 'jobs', json_build_array(json_build_object('id', id, 'state', state, 'type', type,
                                                            'queue', queue, 'attempts', attempts)))::text) END
                  AS announced
        FROM ins""";

  /**
   * Many unique jobs of one type with the same options (a bulk enqueue with unique): the rows of
   * {@link #UNIQUE_ROWS}, which the caller has made distinct by key base (one statement may not update a
   * row twice). Returns each row's job (the new one, or the existing one with its key) with the row's
   * base in hex. Wakes and announces as {@link JobSql#NOTIFY_INSERTED} for the new rows; wakes too for
   * replaced run_at now due.
   */
  static final String INSERT_UNIQUE_MANY =
      UNIQUE_ROWS + """
      , upserted AS (
          INSERT INTO {schema}.jobs AS j (id, type, queue, payload, priority, state, max_attempts, run_at,
                                          created_at, context, timeout_ms, parent_id, capability, trace_context,
                                          limit_key, unique_key)
          SELECT r.id, ?, ?, r.payload::jsonb, ?, 'queued', ?,
                 COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                 now(), ?, ?, ?, ?, ?, COALESCE(r.limit_key, ?), r.unique_key
            FROM r
           ORDER BY r.unique_key
      """ + REPLACE + """

          RETURNING j.id, j.state, j.type, j.queue, j.attempts, j.run_at, j.unique_key
      ), ins AS (
          SELECT u.* FROM upserted AS u JOIN r USING (id)
      ), """ + JobSql.NOTIFY_INSERTED + """
      , replaced AS (
          SELECT count(pg_notify('{schema}_jobs_ready', q.queue)) AS woken
            FROM (SELECT DISTINCT queue FROM upserted
                   WHERE ?::boolean AND run_at <= now() AND state <> 'running') AS q
      )
      SELECT u.id, r.base_hex AS unique_key, (SELECT count(*) FROM ins) AS inserted, (SELECT woken FROM notified),
             (SELECT count(*) FROM announced), (SELECT woken FROM replaced)
        FROM upserted AS u JOIN r ON r.unique_key = u.unique_key""";

  /**
   * Whether the holder of a key row {@code uk} of {@code unique_keys} no longer counts (V18__unique_states.sql):
   * it is neither unfinished (in jobs: every set holds every unfinished state) nor finished in one of the
   * row's finished states; and the transaction that made it the holder is visible to this statement's
   * snapshot. Without that last guard an enqueuer that waited for the row's lock while another inserted
   * the holder would not see the new job and take it for gone: the reads below use the snapshot, only the
   * locked key row is its newest version.
   */
  static final String HOLDER_GONE = """
      (pg_visible_in_snapshot(uk.writer, pg_current_snapshot())
                    AND NOT EXISTS (SELECT 1 FROM {schema}.jobs AS h WHERE h.id = uk.job_id)
                    AND NOT EXISTS (SELECT 1 FROM {schema}.finished_jobs AS f
                                     WHERE f.id = uk.job_id AND f.state = ANY (uk.finished_states)))""";

  /**
   * The key row upsert shared by {@link #INSERT_UNIQUE_STATES} and {@link #INSERT_UNIQUE_STATES_MANY}: a new
   * key takes the new job; an existing one is handed to it only when its holder is gone
   * ({@link #HOLDER_GONE}), else keeps its holder. Always DO UPDATE (also when nothing changes) so the row
   * comes back in the same statement, locked until commit: the lock is what serializes the enqueuers of
   * one key, and RETURNING says who holds it.
   */
  private static final String UPSERT_UNIQUE_KEY = """
          ON CONFLICT (unique_key) DO UPDATE
             SET job_id = CASE WHEN """ + HOLDER_GONE + """
       THEN EXCLUDED.job_id ELSE uk.job_id END,
                 writer = CASE WHEN """ + HOLDER_GONE + """
       THEN EXCLUDED.writer ELSE uk.writer END
          RETURNING uk.job_id, uk.unique_key""";

  /**
   * One unique job whose rule counts finished states (V18__unique_states.sql): the key row in
   * {@code unique_keys} goes in, or is taken over, or names the existing holder; the job is inserted when
   * the key went to it (one statement: the key and the job commit together). The job carries no
   * {@code jobs.unique_key}. Returns one row: {@code holder_id}, {@code created}, and the job's columns:
   * the new job, or the holder as this statement's snapshot sees it (from either table). The columns are
   * NULL when the snapshot does not see the holder (a concurrent enqueue inserted it while this one waited
   * for the key row): the caller then reads it by id in a following statement. Wakes and announces a new
   * job as {@link #INSERT_UNIQUE}.
   */
  static final String INSERT_UNIQUE_STATES =
      """
      WITH k AS (
          SELECT
      """ + UNIQUE_KEY + """
       AS unique_key,
      """ + PERIOD_END + """
       AS expires_at
            FROM (SELECT ?::bytea AS base, ?::bigint AS period_ms) AS k
      ), holder AS (
          INSERT INTO {schema}.unique_keys AS uk (unique_key, job_id, finished_states, expires_at, writer)
          SELECT k.unique_key, ?::uuid, ?::text[], k.expires_at, pg_current_xact_id() FROM k
      """ + UPSERT_UNIQUE_KEY + """

      ), ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, max_attempts, run_at,
                                     created_at, context, timeout_ms, parent_id, capability, trace_context,
                                     limit_key)
          SELECT holder.job_id, ?, ?, ?::jsonb, ?, 'queued', ?,
                 COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                 now(), ?, ?, ?, ?, ?, ?
            FROM holder
           WHERE holder.job_id = ?::uuid
          RETURNING
      """ + JobSql.HOT_COLUMNS + """

      ), answer AS (
          SELECT ins.*, true AS created FROM ins
          UNION ALL
          SELECT
      """
          + JobSql.HOT_COLUMNS + """
      , false FROM {schema}.jobs WHERE id = (SELECT job_id FROM holder)
          UNION ALL
          SELECT
      """ + JobSql.FINISHED_COLUMNS + """
      , false FROM {schema}.finished_jobs WHERE id = (SELECT job_id FROM holder)
      )
      SELECT holder.job_id AS holder_id, answer.*,
             CASE WHEN answer.created AND answer.run_at <= now()
                  THEN pg_notify('{schema}_jobs_ready', answer.queue) END AS woken,
             CASE WHEN answer.created THEN pg_notify('{schema}_job_events', json_build_object(
                 'op', 'state', 'count', 1, 'truncated', false,
                 'jobs', json_build_array(json_build_object('id', answer.id, 'state', answer.state,
                                                            'type', answer.type, 'queue', answer.queue,
                                                            'attempts', answer.attempts)))::text)
                  END AS announced
        FROM holder LEFT JOIN answer ON true""";

  /**
   * Many unique jobs of one type whose rule counts finished states, as {@link #INSERT_UNIQUE_STATES} row by
   * row: the rows of {@link #UNIQUE_ROWS} (distinct by base; key rows locked in key order, so that two
   * overlapping batches cannot deadlock), then the finished states. Returns each key's holder with the
   * row's base in hex, and how many jobs were new; wakes and announces as {@link JobSql#NOTIFY_INSERTED}.
   */
  static final String INSERT_UNIQUE_STATES_MANY =
      UNIQUE_ROWS + """
      , holder AS (
          INSERT INTO {schema}.unique_keys AS uk (unique_key, job_id, finished_states, expires_at, writer)
          SELECT r.unique_key, r.id, ?::text[], r.expires_at, pg_current_xact_id() FROM r ORDER BY r.unique_key
      """ + UPSERT_UNIQUE_KEY + """

      ), ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, max_attempts, run_at,
                                     created_at, context, timeout_ms, parent_id, capability, trace_context,
                                     limit_key)
          SELECT r.id, ?, ?, r.payload::jsonb, ?, 'queued', ?,
                 COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                 now(), ?, ?, ?, ?, ?, COALESCE(r.limit_key, ?)
            FROM r JOIN holder ON holder.job_id = r.id
          RETURNING id, state, type, queue, attempts, run_at
      ), """ + JobSql.NOTIFY_INSERTED + """

      SELECT holder.job_id AS id, r.base_hex AS unique_key, (SELECT count(*) FROM ins) AS inserted,
             (SELECT woken FROM notified), (SELECT count(*) FROM announced)
        FROM holder JOIN r ON r.unique_key = holder.unique_key""";

  /**
   * The replacements duplicates of a rule with finished states make ({@code replace}): the jobs of the
   * array that are still waiting (in jobs and not running) take run_at and/or the payload of their row,
   * each only when asked (the two booleans); a running or finished holder is left as it is. A separate
   * statement because the holder may have been inserted by a transaction this enqueue's statement could
   * not see. Wakes the queues of jobs whose replaced run_at is now due.
   */
  static final String REPLACE_UNIQUE_HOLDERS = """
      WITH upd AS (
          UPDATE {schema}.jobs AS j
             SET run_at  = CASE WHEN ?::boolean
                                THEN COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond')
                                ELSE j.run_at END,
                 payload = CASE WHEN ?::boolean THEN r.payload::jsonb ELSE j.payload END
            FROM unnest(?::uuid[], ?::text[]) AS r(id, payload)
           WHERE j.id = r.id AND j.state <> 'running'
          RETURNING j.queue, j.run_at
      )
      SELECT (SELECT count(*) FROM upd) AS replaced,
             (SELECT count(pg_notify('{schema}_jobs_ready', q.queue))
                FROM (SELECT DISTINCT queue FROM upd WHERE ?::boolean AND run_at <= now()) AS q) AS woken""";

  static final String FIND_KEY = """
      SELECT job_id, fingerprint FROM {schema}.job_keys WHERE idempotency_key = ?""";

  /** Bulk insert: the columns a COPY row carries, in order (see {@link CopyRows}). */
  static final String COPY_JOBS = """
      COPY {schema}.jobs (id, type, queue, payload, priority, max_attempts, context, timeout_ms, capability, trace_context,
                          limit_key, run_at, created_at)
      FROM STDIN""";

  /**
   * {@code copy} ({@link #COPY_JOBS} or {@link #COPY_DUE_JOBS}) with a graph's columns after the others:
   * state, waiting_on, has_dependents.
   */
  static String withGraphColumns(String copy) {
    String withColumns =
        copy.replaceFirst("\\)\\s*FROM STDIN$", ", state, waiting_on, has_dependents)\nFROM STDIN");
    if (withColumns.equals(copy)) {
      throw new IllegalStateException("not a COPY of jobs: " + copy);
    }
    return withColumns;
  }

  /** Bulk insert of jobs due now: state, run_at and created_at take their defaults. */
  static final String COPY_DUE_JOBS = """
      COPY {schema}.jobs (id, type, queue, payload, priority, max_attempts, context, timeout_ms, capability, trace_context,
                          limit_key)
      FROM STDIN""";

  /**
   * Bulk insert of jobs with idempotency keys: the keys first, each naming its new job, sorted (two
   * overlapping batches wait for each other's keys in one order, and so cannot deadlock; byte order, the
   * cheapest to sort, since any one order will do). ON CONFLICT
   * DO NOTHING, as in {@link #INSERT_WITH_KEY}: a key a concurrent enqueue is inserting makes this one
   * wait for that transaction, and then insert nothing if it committed. A key given twice in the batch
   * goes in once, for its first job. Returns the job ids whose keys went in: those jobs are then copied
   * ({@link #COPY_KEYED_JOBS}); the others' keys are looked up ({@link #FIND_KEYS}).
   */
  static final String INSERT_KEYS = """
      INSERT INTO {schema}.job_keys (idempotency_key, job_id, fingerprint)
      SELECT r.idempotency_key, r.job_id, r.fingerprint
        FROM unnest(?::text[], ?::uuid[], ?::text[]) WITH ORDINALITY AS r(idempotency_key, job_id, fingerprint, n)
       ORDER BY r.idempotency_key COLLATE "C", r.n
      ON CONFLICT (idempotency_key) DO NOTHING
      RETURNING job_id""";

  /**
   * The jobs and fingerprints that keys of a bulk insert already name (a statement after
   * {@link #INSERT_KEYS}, so that it sees the keys of enqueues that committed while that one waited).
   */
  static final String FIND_KEYS = """
      SELECT idempotency_key, job_id, fingerprint FROM {schema}.job_keys WHERE idempotency_key = ANY (?::text[])""";

  /** {@link #COPY_JOBS} for jobs whose keys {@link #INSERT_KEYS} stored: the key in the job's row too. */
  static final String COPY_KEYED_JOBS = """
      COPY {schema}.jobs (id, type, queue, payload, priority, max_attempts, context, timeout_ms, capability, trace_context,
                          limit_key, idempotency_key, run_at, created_at)
      FROM STDIN""";

  /** {@link #COPY_DUE_JOBS} for jobs whose keys {@link #INSERT_KEYS} stored. */
  static final String COPY_DUE_KEYED_JOBS = """
      COPY {schema}.jobs (id, type, queue, payload, priority, max_attempts, context, timeout_ms, capability, trace_context,
                          limit_key, idempotency_key)
      FROM STDIN""";

  /**
   * The database's transaction time, read once per bulk insert by COPY of jobs not all due now, in the
   * COPY's transaction, so COPY rows carry the server's time ({@code now()}, as in {@link #INSERT}).
   */
  static final String NOW = "SELECT now()";

  /**
   * After a COPY, in its transaction: wakes the workers of the queues in the first array (those that
   * got jobs due now) and announces the event; the JSON is built by the caller from the rows it
   * copied (the true count and the first jobs that fit, as {@link JobSql#NOTIFY_INSERTED} does).
   */
  static final String NOTIFY_COPIED = """
      SELECT (SELECT count(pg_notify('{schema}_jobs_ready', q)) FROM unnest(?::text[]) AS q),
             pg_notify('{schema}_job_events', ?)""";
}
