package io.pgjobs.recurring;

/** The SQL of recurring schedules ({@code {schema}} is the pgjobs schema, substituted by the store). */
final class RecurringSql {
  private RecurringSql() {}

  /** A schedule declared in code: inserted, or its definition updated (pause and last slot kept). */
  static final String UPSERT_FROM_CODE =
      """
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
  static final String DISABLE_UNDECLARED =
      """
      UPDATE {schema}.recurring SET disabled = true, updated_at = now()
       WHERE source = 'code' AND NOT disabled AND job_type = ANY (?) AND NOT (name = ANY (?))
      RETURNING name""";

  static final String LIST =
      """
      SELECT name, cron, zone, job_type, queue, payload::text AS payload, priority, max_attempts, missed, catch_up,
             paused, source, disabled, last_slot, created_at
        FROM {schema}.recurring ORDER BY name""";

  /** One schedule, locked for its firing; a concurrent firing skips it. */
  static final String LOCK =
      """
      SELECT name, cron, zone, job_type, queue, payload::text AS payload, priority, max_attempts, missed, catch_up,
             paused, source, disabled, last_slot, created_at
        FROM {schema}.recurring WHERE name = ? FOR UPDATE SKIP LOCKED""";

  static final String SET_LAST_SLOT =
      """
      UPDATE {schema}.recurring SET last_slot = ?, updated_at = now() WHERE name = ?""";

  static final String ACTIVE =
      """
      SELECT name FROM {schema}.recurring WHERE NOT paused AND NOT disabled ORDER BY name""";
}
