package io.pgjobs.recurring;

/** The SQL of recurring schedules ({@code {schema}} is the pgjobs schema, substituted by the store). */
final class RecurringSql {
  private RecurringSql() {}

  /** A schedule declared in code: inserted, or its definition updated (pause and last slot kept). */
  static final String UPSERT_FROM_CODE = """
      INSERT INTO {schema}.recurring (name, cron, zone, job_type, queue, payload, priority, max_attempts, missed,
                                      catch_up, source)
      VALUES (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, 'code')
      ON CONFLICT (name) DO UPDATE
         SET cron = EXCLUDED.cron, zone = EXCLUDED.zone, job_type = EXCLUDED.job_type, queue = EXCLUDED.queue,
             payload = EXCLUDED.payload, priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
             missed = EXCLUDED.missed, catch_up = EXCLUDED.catch_up, source = 'code', disabled = false,
             updated_at = now()""";

  /**
   * Code schedules of the worker's own job types that its code no longer declares: disabled (not
   * deleted: their history stays, and declaring them again re-enables them).
   */
  static final String DISABLE_UNDECLARED = """
      UPDATE {schema}.recurring SET disabled = true, updated_at = now()
       WHERE source = 'code' AND NOT disabled AND job_type = ANY (?) AND NOT (name = ANY (?))
      RETURNING name""";

  static final String LIST = """
      SELECT name, cron, zone, job_type, queue, payload::text AS payload, priority, max_attempts, missed, catch_up,
             paused, source, disabled, last_slot, created_at
        FROM {schema}.recurring ORDER BY name""";

  /**
   * One schedule, locked for its firing, with the database's clock ({@code now()}: the firing's
   * transaction began with this statement), which decides what is due; a concurrent firing skips it.
   */
  static final String LOCK = """
      SELECT name, cron, zone, job_type, queue, payload::text AS payload, priority, max_attempts, missed, catch_up,
             paused, source, disabled, last_slot, created_at, now() AS database_now
        FROM {schema}.recurring WHERE name = ? FOR UPDATE SKIP LOCKED""";

  /** The newest slot handled, and the job of the newest slot enqueued (null: the last job stays). */
  static final String SET_LAST_SLOT = """
      UPDATE {schema}.recurring SET last_slot = ?, last_job_id = COALESCE(?::uuid, last_job_id), updated_at = now()
       WHERE name = ?""";

  static final String ACTIVE = """
      SELECT name FROM {schema}.recurring WHERE NOT paused AND NOT disabled ORDER BY name""";

  // ---------------------------------------------------------------- run-time management
  // (RecurringSchedules decides, RecurringStore runs these)

  /**
   * Schedules with their last job: one primary-key lookup in each job table per schedule (a job is in
   * exactly one of them; one statement, one snapshot, so a job moving between them is seen once).
   * {@code {where}} is empty or a condition on {@code r}.
   */
  static final String VIEW = """
      SELECT r.name, r.cron, r.zone, r.job_type, r.queue, r.payload::text AS payload, r.priority, r.max_attempts,
             r.missed, r.catch_up, r.paused, r.source, r.disabled, r.last_slot, r.created_at, r.updated_at,
             r.last_job_id, j.state AS last_state, j.created_at AS last_created_at, j.finished_at AS last_finished_at
        FROM {schema}.recurring r
        LEFT JOIN LATERAL (
              SELECT state, created_at, NULL::timestamptz AS finished_at FROM {schema}.jobs WHERE id = r.last_job_id
              UNION ALL
              SELECT state, created_at, finished_at FROM {schema}.finished_jobs WHERE id = r.last_job_id
              LIMIT 1) j ON true
       {where}
       ORDER BY r.name""";

  /** A schedule added at run time; nothing when the name exists (the caller answers "already exists"). */
  static final String INSERT_FROM_API = """
      INSERT INTO {schema}.recurring (name, cron, zone, job_type, queue, payload, priority, max_attempts, missed,
                                      catch_up, source)
      VALUES (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, 'api')
      ON CONFLICT (name) DO NOTHING""";

  /**
   * Replaces the definition of a schedule added at run time (pause and last slot kept). A code schedule
   * is left alone: the returned source tells the caller which case it was (no row: no such schedule).
   */
  static final String UPDATE_FROM_API = """
      WITH target AS (SELECT name, source FROM {schema}.recurring WHERE name = ? FOR UPDATE),
           changed AS (
             UPDATE {schema}.recurring r
                SET cron = ?, zone = ?, job_type = ?, queue = ?, payload = ?::jsonb, priority = ?, max_attempts = ?,
                    missed = ?, catch_up = ?, updated_at = now()
               FROM target WHERE r.name = target.name AND target.source = 'api'
             RETURNING r.name)
      SELECT target.source, (SELECT count(*) FROM changed) AS changed FROM target""";

  /** Removes a schedule added at run time; a code schedule is left alone (its source is returned). */
  static final String DELETE_FROM_API = """
      WITH target AS (SELECT name, source FROM {schema}.recurring WHERE name = ? FOR UPDATE),
           gone AS (
             DELETE FROM {schema}.recurring r USING target WHERE r.name = target.name AND target.source = 'api'
             RETURNING r.name)
      SELECT target.source, (SELECT count(*) FROM gone) AS removed FROM target""";

  /** Pauses or resumes any schedule (code ones too); returns the name when it exists. */
  static final String SET_PAUSED = """
      UPDATE {schema}.recurring SET paused = ?, updated_at = now() WHERE name = ? RETURNING name""";

  /** One schedule, locked while a run by hand enqueues its job (waits for a firing in progress). */
  static final String LOCK_FOR_RUN = """
      SELECT name, cron, zone, job_type, queue, payload::text AS payload, priority, max_attempts, missed, catch_up,
             paused, source, disabled, last_slot, created_at
        FROM {schema}.recurring WHERE name = ? FOR UPDATE""";

  static final String SET_LAST_JOB = """
      UPDATE {schema}.recurring SET last_job_id = ?::uuid, updated_at = now() WHERE name = ?""";
}
