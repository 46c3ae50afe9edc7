package io.pgjobs.store;

import java.util.regex.Pattern;

/**
 * Every SQL statement of pgjobs-core, each readable whole. {@code {schema}} stands for the pgjobs schema
 * name, validated as a plain identifier and substituted once when the store is built; values are always
 * bind parameters.
 *
 * <p>This class holds the statements of enqueueing and of administration (cancel, retry, lists, counts);
 * the statements that change a running job are in {@link ExecutionSql}, those of liveness and maintenance
 * in {@link WorkerSql}. Moves between {@code jobs} and {@code finished_jobs} are {@code DELETE ...
 * RETURNING} feeding an {@code INSERT} in one statement.
 */
final class JobSql {
  /**
   * At most 51 characters: the schema's notification channels, the longest being
   * {@code <schema>_jobs_cancel}, must fit in PostgreSQL's 63-byte identifier limit, or pg_notify and
   * LISTEN fail with "channel name too long".
   */
  private static final Pattern SCHEMA = Pattern.compile("[a-z_][a-z0-9_]{0,50}");

  /** Columns shared by both job tables, in the order {@link JobRowMapper} reads them. */
  private static final String COLUMNS =
      """
      id, type, queue, payload::text AS payload, priority, state, attempts, max_attempts, run_at,
      created_at, attempted_at, locked_by, context, idempotency_key, timeout_ms, progress_percent,
      progress_message, errors::text AS errors""";

  static final String HOT_COLUMNS =
      COLUMNS
          + """
          , NULL::timestamptz AS finished_at, heartbeat_at, NULL::text AS output, cancel_requested""";

  static final String FINISHED_COLUMNS =
      COLUMNS
          + """
          , finished_at, NULL::timestamptz AS heartbeat_at, output::text AS output, false AS cancel_requested""";

  /**
   * PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more, and the error aborts the statement that
   * sends it. A job event lists jobs only while the running total of their JSON entries' bytes stays
   * within this budget, which leaves room for the envelope and the separators; {@code count} stays the
   * true number and {@code truncated} says whether some were left out. The trigger of schema version 6
   * (V6__bounded_notifications.sql) uses the same number.
   */
  static final int EVENT_JOBS_MAX_BYTES = 7_000;

  /** At most this many jobs are listed in one job event, however small their entries. */
  static final int EVENT_JOBS_MAX_COUNT = 50;

  /**
   * Type and queue names in a job event are cut to this many characters (the schema's limit for jobs;
   * finished_jobs has no such CHECK). At 6 bytes per character at worst in JSON (a control character
   * is written as a six-character escape) an entry is then about 3,200 bytes, so the first job always
   * fits the budget.
   */
  static final int EVENT_NAME_MAX_CHARS = 255;

  /**
   * The tail of every statement that inserts into {@code jobs}: from the inserted rows of CTE
   * {@code ins}, wakes the workers of each queue that got a job due now (channel
   * {@code <schema>_jobs_ready}, payload the queue) and announces the event on
   * {@code <schema>_job_events} (the true count and the first jobs that fit {@link #EVENT_JOBS_MAX_BYTES},
   * as the triggers of finished_jobs and updates do). In the statement rather than in an INSERT trigger:
   * a trigger call with its transition table costs a single-row enqueue about a fifth of its time. A row
   * written around pgjobs wakes no one; workers find it at their next poll.
   */
  static final String NOTIFY_INSERTED =
      """
      notified AS (
          SELECT count(pg_notify('{schema}_jobs_ready', q.queue)) AS woken
            FROM (SELECT DISTINCT queue FROM ins WHERE run_at <= now()) AS q
      ), announced AS (
          SELECT pg_notify('{schema}_job_events', json_build_object(
                     'op', 'state', 'count', t.total, 'truncated', count(*) < t.total,
                     'jobs', json_agg(e.entry ORDER BY e.n))::text)
            FROM (SELECT count(*) AS total FROM ins) AS t
           CROSS JOIN (
      """ + eventJobs("ins") + """
      ) AS e
           GROUP BY t.total
      )""";

  /**
   * The tail of the single-row inserts: {@link #NOTIFY_INSERTED} for exactly one row of CTE {@code ins},
   * without its aggregates (a single enqueue is the statement W2 measures). One entry always fits (see
   * {@link #EVENT_NAME_MAX_CHARS}; the jobs table's CHECKs bound the names).
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
                                     created_at, context, idempotency_key, timeout_ms)
          VALUES (?, ?, ?, ?::jsonb, ?, 'queued', ?,
                  COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                  now(), ?, ?, ?)
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
          INSERT INTO {schema}.job_keys (idempotency_key, job_id) VALUES (?, ?)
          ON CONFLICT (idempotency_key) DO NOTHING
          RETURNING job_id
      ), ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, max_attempts, run_at,
                                     created_at, context, idempotency_key, timeout_ms)
          SELECT key.job_id, ?, ?, ?::jsonb, ?, 'queued', ?,
                 COALESCE(?::timestamptz, now() + ?::bigint * interval '1 millisecond'),
                 now(), ?, ?, ?
            FROM key
          RETURNING id, state, type, queue, attempts, run_at, created_at
      )
      """ + NOTIFY_ONE_INSERTED;

  static final String FIND_KEY =
      """
      SELECT job_id FROM {schema}.job_keys WHERE idempotency_key = ?""";

  /** Bulk insert: the columns a COPY row carries, in order (see {@link CopyRows}). */
  static final String COPY_JOBS =
      """
      COPY {schema}.jobs (id, type, queue, payload, priority, max_attempts, context, timeout_ms, run_at,
                          created_at)
      FROM STDIN""";

  /** Bulk insert of jobs due now: state, run_at and created_at take their defaults. */
  static final String COPY_DUE_JOBS =
      """
      COPY {schema}.jobs (id, type, queue, payload, priority, max_attempts, context, timeout_ms)
      FROM STDIN""";

  /**
   * The database's transaction time, read once per bulk insert so COPY rows carry the server's time
   * ({@code now()}, as in {@link #INSERT}).
   */
  static final String NOW = "SELECT now()";

  /**
   * After a COPY, in its transaction: wakes the workers of the queues in the first array (those that
   * got jobs due now) and announces the event; the JSON is built by the caller from the rows it
   * copied (the true count and the first jobs that fit, as {@link #NOTIFY_INSERTED} does).
   */
  static final String NOTIFY_COPIED =
      """
      SELECT (SELECT count(pg_notify('{schema}_jobs_ready', q)) FROM unnest(?::text[]) AS q),
             pg_notify('{schema}_job_events', ?)""";

  /**
   * Cancel one job, whatever its state, in one statement: a waiting job moves to finished_jobs as
   * cancelled; a running one gets its flag set (a trigger NOTIFYs its worker). Both parts see the same
   * snapshot, so at most one of them matches. Neither matching means finished, unknown, or a job that
   * changed state under us (the caller looks and, for the last case, tries again).
   */
  static final String CANCEL =
      """
      WITH cancelled AS (
          DELETE FROM {schema}.jobs
           WHERE id = ? AND state IN ('queued', 'retrying')
          RETURNING *
      ), moved AS (
      """ + insertFinished("cancelled", "'cancelled'", "errors", "NULL") + """

          RETURNING id
      ), flagged AS (
          UPDATE {schema}.jobs SET cancel_requested = true
           WHERE id = ? AND state = 'running'
          RETURNING id
      )
      SELECT (SELECT count(*) FROM moved) AS cancelled_now, (SELECT count(*) FROM flagged) AS flagged""";

  /**
   * Cancel every job matching a filter ({@code {where}} is built by JobStore from whitelisted columns,
   * its values bound twice: once per part).
   */
  static final String CANCEL_MATCHING =
      """
      WITH cancelled AS (
          DELETE FROM {schema}.jobs
           WHERE state IN ('queued', 'retrying') AND {where}
          RETURNING *
      ), moved AS (
      """ + insertFinished("cancelled", "'cancelled'", "errors", "NULL") + """

          RETURNING id
      ), flagged AS (
          UPDATE {schema}.jobs SET cancel_requested = true
           WHERE state = 'running' AND NOT cancel_requested AND {where}
          RETURNING id
      )
      SELECT (SELECT count(*) FROM moved) AS cancelled_now, (SELECT count(*) FROM flagged) AS flagged""";

  /** Both tables; at most one row exists since a move is one statement. */
  static final String GET =
      "SELECT " + HOT_COLUMNS + "\n  FROM {schema}.jobs WHERE id = ?\n"
          + "UNION ALL\n"
          + "SELECT " + FINISHED_COLUMNS + "\n  FROM {schema}.finished_jobs WHERE id = ?";

  /**
   * A failed or cancelled job goes back to the queue: attempts start again from 0 (it gets a full set
   * of attempts), the error history is kept so earlier failures stay visible.
   */
  static final String RETRY_FINISHED =
      """
      WITH moved AS (
          DELETE FROM {schema}.finished_jobs
           WHERE id = ? AND state IN ('failed', 'cancelled')
          RETURNING *
      ), ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                                     run_at, created_at, context, idempotency_key, timeout_ms, errors)
          SELECT id, type, queue, payload, priority, 'queued', 0, max_attempts, now(), created_at,
                 context, idempotency_key, timeout_ms, errors
            FROM moved
          RETURNING id, state, type, queue, attempts, run_at
      ), """ + NOTIFY_INSERTED + """

      SELECT id, (SELECT woken FROM notified), (SELECT count(*) FROM announced) FROM ins""";

  /** Every failed or cancelled job matching {@code {where}} back to the queue, as RETRY_FINISHED does. */
  static final String RETRY_MATCHING =
      """
      WITH moved AS (
          DELETE FROM {schema}.finished_jobs
           WHERE state IN ('failed', 'cancelled') AND {where}
          RETURNING *
      ), ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                                     run_at, created_at, context, idempotency_key, timeout_ms, errors)
          SELECT id, type, queue, payload, priority, 'queued', 0, max_attempts, now(), created_at,
                 context, idempotency_key, timeout_ms, errors
            FROM moved
          RETURNING id, state, type, queue, attempts, run_at
      ), """ + NOTIFY_INSERTED + """

      SELECT (SELECT count(*) FROM ins), (SELECT woken FROM notified), (SELECT count(*) FROM announced)""";

  /** Counts per queue and state; {@code scheduled} counts queued jobs not yet due. */
  static final String COUNT_BY_QUEUE =
      """
      SELECT queue, state, count(*) AS jobs,
             count(*) FILTER (WHERE state = 'queued' AND run_at > now()) AS scheduled
        FROM {schema}.jobs
       GROUP BY queue, state
      UNION ALL
      SELECT queue, state, count(*), 0
        FROM {schema}.finished_jobs
       GROUP BY queue, state""";

  /** Pause or resume a queue (upsert). */
  static final String SET_QUEUE_PAUSED =
      """
      INSERT INTO {schema}.queues (name, paused, updated_at) VALUES (?, ?, now())
      ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now()""";

  /** Wakes the workers of a queue (after a resume). */
  static final String NOTIFY_READY =
      """
      SELECT pg_notify('{schema}_jobs_ready', ?)""";

  /**
   * Every queue that has jobs or a pause row: counts per state, scheduled count, age of the oldest due
   * job, paused flag. The hot table is grouped whole (it is small by design); finished jobs are counted
   * per queue and state.
   */
  static final String QUEUE_OVERVIEW =
      """
      WITH hot AS (
          SELECT queue, state, count(*) AS jobs,
                 count(*) FILTER (WHERE state = 'queued' AND run_at > now()) AS scheduled,
                 min(run_at) FILTER (WHERE state IN ('queued', 'retrying') AND run_at <= now()) AS oldest_due
            FROM {schema}.jobs GROUP BY queue, state
      ), done AS (
          SELECT queue, state, count(*) AS jobs, 0::bigint AS scheduled, NULL::timestamptz AS oldest_due
            FROM {schema}.finished_jobs GROUP BY queue, state
      ), all_counts AS (
          SELECT * FROM hot UNION ALL SELECT * FROM done
      ), names AS (
          SELECT queue AS name FROM all_counts UNION SELECT name FROM {schema}.queues
      )
      SELECT n.name, c.state, COALESCE(c.jobs, 0), COALESCE(c.scheduled, 0),
             EXTRACT(EPOCH FROM now() - c.oldest_due) * 1000 AS oldest_due_ms,
             COALESCE(q.paused, false) AS paused
        FROM names n
        LEFT JOIN all_counts c ON c.queue = n.name
        LEFT JOIN {schema}.queues q ON q.name = n.name
       ORDER BY n.name""";

  /** Jobs finished per minute over a window, by type, queue and final state. */
  static final String STATS_PER_MINUTE =
      """
      SELECT date_trunc('minute', finished_at) AS minute, type, queue, state, count(*)
        FROM {schema}.finished_jobs
       WHERE finished_at >= now() - ?::bigint * interval '1 millisecond'
       GROUP BY 1, 2, 3, 4
       ORDER BY 1, 2, 3, 4""";

  /** Ready jobs per queue, for the queue depth gauge. */
  static final String READY_DEPTH =
      """
      SELECT queue, count(*) FROM {schema}.jobs
       WHERE state IN ('queued', 'retrying') AND run_at <= now()
       GROUP BY queue""";

  /**
   * The second half of every move into finished_jobs by someone other than the job's worker (cancel of a
   * waiting job, rescue): as {@link #insertFinished(String, String, String, String, String)} with no claim
   * token, so the row does not read as written by the job's last claim.
   */
  static String insertFinished(String from, String state, String errors, String output) {
    return insertFinished(from, state, errors, output, "NULL");
  }

  /**
   * The second half of every move into finished_jobs: copies the rows of CTE {@code from}, with the
   * given final state, error history, output and claim token expressions. A worker's own writes keep
   * {@code claim_token}: a write whose reply was lost is then recognised by it (see
   * {@link ExecutionSql#CLAIM_STATUS}).
   */
  static String insertFinished(String from, String state, String errors, String output, String claimToken) {
    return """
        INSERT INTO {schema}.finished_jobs
               (id, type, queue, payload, priority, state, attempts, max_attempts, run_at, created_at,
                attempted_at, locked_by, context, idempotency_key, timeout_ms, progress_percent,
                progress_message, errors, output, finished_at, claim_token)
        SELECT id, type, queue, payload, priority, %s, attempts, max_attempts, run_at, created_at,
               attempted_at, locked_by, context, idempotency_key, timeout_ms, progress_percent,
               progress_message, %s, %s, now(), %s
          FROM %s""".formatted(state, errors, output, claimToken, from);
  }

  /**
   * The entries of a job event for the rows of {@code from} (columns id, state, type, queue, attempts):
   * rows {@code (n, entry)}, n giving their order. At most {@link #EVENT_JOBS_MAX_COUNT}, and only while
   * the running total of the entries' bytes stays within {@link #EVENT_JOBS_MAX_BYTES}: the first ones,
   * so a listener sees a prefix. JSON is built for the first 50 rows only, whatever the statement's size
   * (a claim or a completion batch of 1,000 pays for 50 entries, as before).
   */
  static String eventJobs(String from) {
    return """
        SELECT n, entry
          FROM (SELECT n, entry, sum(octet_length(entry::text)) OVER (ORDER BY n) AS listed_bytes
                  FROM (SELECT row_number() OVER () AS n,
                               json_build_object('id', id, 'state', state, 'type', left(type, %2$d),
                                                 'queue', left(queue, %2$d), 'attempts', attempts) AS entry
                          FROM (SELECT id, state, type, queue, attempts FROM %1$s LIMIT %3$d) AS c
                       ) AS numbered
               ) AS measured
         WHERE listed_bytes <= %4$d""".formatted(
        from, EVENT_NAME_MAX_CHARS, EVENT_JOBS_MAX_COUNT, EVENT_JOBS_MAX_BYTES);
  }

  /** A JSON error entry built in SQL (rescue), in the shape of {@link io.pgjobs.JobError}. */
  static String errorEntry(String kind, String message) {
    return """
        jsonb_build_array(jsonb_build_object(
            'attempt', attempts,
            'at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'kind', '%s', 'errorClass', NULL, 'message', %s, 'stackHead', NULL, 'worker', locked_by))"""
        .formatted(kind, message);
  }

  private JobSql() {}

  /** Checks the schema name and substitutes it. */
  static String forSchema(String sql, String schema) {
    return sql.replace("{schema}", requireSchema(schema));
  }

  /** A schema name pgjobs accepts: lowercase letters, digits and underscores, not starting with a digit. */
  static String requireSchema(String schema) {
    if (schema == null || !SCHEMA.matcher(schema).matches()) {
      throw new IllegalArgumentException(
          "invalid schema name '" + schema
              + "'; allowed: 1 to 51 of lowercase letters, digits and _, not starting with a digit");
    }
    return schema;
  }
}
