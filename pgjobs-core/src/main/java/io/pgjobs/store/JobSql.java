package io.pgjobs.store;

import java.util.regex.Pattern;

/**
 * The SQL shared by the stores, and the conventions of every statement of pgjobs-core, each readable
 * whole. {@code {schema}} stands for the pgjobs schema name, validated as a plain identifier and
 * substituted once when the store is built; values are always bind parameters.
 *
 * <p>This class holds what several statements use: the schema check, the column lists {@link JobRowMapper}
 * reads, {@link #GET}, the notifications of inserted rows and the limits of job events, and the second
 * half of a move into finished_jobs. The statements of enqueueing are in {@link EnqueueSql}, those of
 * administration (cancel, retry, pause, lists, counts) in {@link AdminSql}, those that change a running
 * job in {@link ExecutionSql}, those of liveness and maintenance in {@link WorkerSql}. Moves between
 * {@code jobs} and {@code finished_jobs} are {@code DELETE ... RETURNING} feeding an {@code INSERT} in
 * one statement.
 */
final class JobSql {
  /**
   * At most 51 characters: the schema's notification channels, the longest being
   * {@code <schema>_jobs_cancel}, must fit in PostgreSQL's 63-byte identifier limit, or pg_notify and
   * LISTEN fail with "channel name too long".
   */
  private static final Pattern SCHEMA = Pattern.compile("[a-z_][a-z0-9_]{0,50}");

  /** Columns shared by both job tables, in the order {@link JobRowMapper} reads them. */
  private static final String COLUMNS = """
      id, type, queue, payload::text AS payload, priority, state, attempts, max_attempts, run_at,
      created_at, attempted_at, locked_by, context, idempotency_key, timeout_ms, progress_percent,
      progress_message, errors::text AS errors, parent_id, capability, snoozes""";

  static final String HOT_COLUMNS = COLUMNS + """
          , NULL::timestamptz AS finished_at, heartbeat_at, NULL::text AS output, cancel_requested""";

  static final String FINISHED_COLUMNS = COLUMNS + """
          , finished_at, NULL::timestamptz AS heartbeat_at, output::text AS output, false AS cancel_requested""";

  /**
   * PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more, and the error aborts the statement that
   * sends it. A job event lists jobs only while the running total of their JSON entries' bytes stays
   * within this budget, which leaves room for the envelope and the separators; {@code count} stays the
   * true number and {@code truncated} says whether some were left out. The events trigger of {@code jobs}
   * and {@code finished_jobs} ({@code notify_job_events}, V1__schema.sql) uses the same number.
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
  static final String NOTIFY_INSERTED = """
      notified AS (
          SELECT count(pg_notify('{schema}_jobs_ready', q.queue)) AS woken
            FROM (SELECT DISTINCT queue FROM ins WHERE run_at <= now()) AS q
      ), announced AS (
      """ + stateEvent("ins") + """

      )""";

  /**
   * A query that sends one job event (op {@code state}) for the rows of CTE {@code from} (columns id,
   * state, type, queue, attempts): their true count and the first of them that fit ({@link #eventJobs}).
   */
  static String stateEvent(String from) {
    return """
        SELECT pg_notify('{schema}_job_events', json_build_object(
                   'op', 'state', 'count', t.total, 'truncated', count(*) < t.total,
                   'jobs', json_agg(e.entry ORDER BY e.n))::text)
          FROM (SELECT count(*) AS total FROM %1$s) AS t
         CROSS JOIN (
        %2$s
        ) AS e
         GROUP BY t.total""".formatted(from, eventJobs(from));
  }

  /**
   * A query that sends one {@code progress} job event for each row of CTE {@code from} (columns id, type,
   * queue, attempts, progress_percent, message: the progress message cut to 1,000 characters): what a
   * running job's progress write, and a workflow run's recorded step, tell the job's followers. A message
   * whose JSON would pass 4,002 bytes (control characters escape to 6 bytes each) is cut to 666
   * characters, so the event stays under PostgreSQL's 8,000-byte payload limit.
   */
  static String progressEvent(String from) {
    return """
        SELECT pg_notify('{schema}_job_events', json_build_object(
                   'op', 'progress', 'count', 1, 'truncated', false,
                   'jobs', json_build_array(json_build_object(
                       'id', id, 'state', 'running', 'type', left(type, 255), 'queue', left(queue, 255),
                       'attempts', attempts, 'progress', progress_percent,
                       'message', CASE WHEN octet_length(to_json(message)::text) <= 4002 THEN message
                                       ELSE left(message, 666) END)))::text)
          FROM %s""".formatted(from);
  }

  /** Both tables; at most one row exists since a move is one statement. */
  static final String GET = "SELECT " + HOT_COLUMNS + "\n  FROM {schema}.jobs WHERE id = ?\n"
      + "UNION ALL\n"
      + "SELECT " + FINISHED_COLUMNS + "\n  FROM {schema}.finished_jobs WHERE id = ?";

  /**
   * {@link #GET} with the history read from a time on ({@code finished_at >= ?}, the third parameter):
   * planned with its value, it leaves out the partitions of the history that end before it ({@link
   * JobLookup}).
   */
  static final String GET_SINCE = GET + " AND finished_at >= ?";

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
  static String insertFinished(
      String from, String state, String errors, String output, String claimToken) {
    return """
        INSERT INTO {schema}.finished_jobs
               (id, type, queue, payload, priority, state, attempts, max_attempts, run_at, created_at,
                attempted_at, locked_by, context, idempotency_key, timeout_ms, progress_percent,
                progress_message, errors, output, finished_at, claim_token, parent_id, capability, trace_context,
                snoozes)
        SELECT id, type, queue, payload, priority, %s, attempts, max_attempts, run_at, created_at,
               attempted_at, locked_by, context, idempotency_key, timeout_ms, progress_percent,
               progress_message, %s, %s, now(), %s, parent_id, capability, trace_context, snoozes
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
         WHERE listed_bytes <= %4$d""".formatted(from, EVENT_NAME_MAX_CHARS, EVENT_JOBS_MAX_COUNT, EVENT_JOBS_MAX_BYTES);
  }

  /** A JSON error entry built in SQL (rescue), in the shape of {@link io.pgjobs.JobError}. */
  static String errorEntry(String kind, String message) {
    return """
        jsonb_build_array(jsonb_build_object(
            'attempt', attempts,
            'at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'kind', '%s', 'errorClass', NULL, 'message', %s, 'stackHead', NULL, 'worker', locked_by))""".formatted(kind, message);
  }

  private JobSql() {}

  /** Checks the schema name and substitutes it. */
  static String forSchema(String sql, String schema) {
    return sql.replace("{schema}", requireSchema(schema));
  }

  /**
   * The text {@code ?text=} searches: the payload as JSON text and the context, one line apart. The same
   * expression as the trigram index {@code finished_jobs_text_trgm_idx} (the operator's to create:
   * docs/operations.md), so that index serves it where it exists.
   */
  static final String SEARCHED_TEXT = "(payload::text || coalesce(E'\\n' || context, ''))";

  /** {@code text} with the LIKE wildcards {@code %} and {@code _} and the escape character escaped. */
  static String likeEscape(String text) {
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_");
  }

  /** A schema name pgjobs accepts: lowercase letters, digits and underscores, not starting with a digit. */
  static String requireSchema(String schema) {
    if (schema == null || !SCHEMA.matcher(schema).matches()) {
      throw new IllegalArgumentException("invalid schema name '" + schema
          + "'; allowed: 1 to 51 of lowercase letters, digits and _, not starting with a digit");
    }
    return schema;
  }
}
