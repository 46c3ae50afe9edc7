package io.pgjobs.store;

/**
 * SQL of durable step workflows (io.pgjobs.workflow): a run's recorded steps (V4__workflows.sql).
 * Placeholders as in {@link JobSql}.
 */
final class WorkflowSql {
  private WorkflowSql() {}

  /** Every recorded step of a run, in the order they first ran. Parameter: the run's id. */
  static final String STEPS = """
      SELECT name, kind, state, result::text, error, seq, finished_at
        FROM {schema}.workflow_steps WHERE run_id = ? ORDER BY seq""";

  /**
   * Records a step's outcome unless one is recorded already (two executions of one run, as at-least-once
   * allows, keep the first record; the caller reads it back). Returns a row if this one was recorded, and
   * then tells the run's followers (a job event, see {@link #stepEvent}).
   * Parameters: run, name, run (for the sequence), kind, state, result (JSON text or null), error.
   */
  static final String RECORD = """
      WITH s AS (
          INSERT INTO {schema}.workflow_steps AS s (run_id, name, seq, kind, state, result, error)
          VALUES (?, ?, (SELECT coalesce(max(p.seq), 0) + 1 FROM {schema}.workflow_steps AS p WHERE p.run_id = ?),
                  ?, ?, ?::jsonb, ?)
          ON CONFLICT (run_id, name) DO NOTHING
          RETURNING run_id
      ), announced AS (
      """ + stepEvent() + """
      )
      SELECT 1 FROM s CROSS JOIN (SELECT count(*) FROM announced) AS n""";

  /** One recorded step: state, result. Parameters: run, name. */
  static final String STEP = """
      SELECT state, result::text FROM {schema}.workflow_steps WHERE run_id = ? AND name = ?""";

  /**
   * A done step's compensation ended: {@code compensated} or {@code compensation_failed} with its error.
   * Returns a row if it was done (a compensation recorded before is not recorded again). Parameters:
   * state, error, run, name.
   */
  static final String COMPENSATED = """
      WITH s AS (
          UPDATE {schema}.workflow_steps SET state = ?, error = ?, finished_at = now()
           WHERE run_id = ? AND name = ? AND state = 'done'
          RETURNING run_id
      ), announced AS (
      """ + stepEvent() + """
      )
      SELECT 1 FROM s CROSS JOIN (SELECT count(*) FROM announced) AS n""";

  /**
   * The job event of a recorded step (or compensation), for the rows of CTE {@code s} (column run_id): a
   * {@code progress} event of the run's job, its progress as it stands, so that its followers (the
   * browser tracker's {@code trackWorkflow}, the dashboard's job page) read the run's steps again.
   */
  private static String stepEvent() {
    return JobSql.progressEvent("""
        (SELECT j.id, j.type, j.queue, j.attempts, j.progress_percent,
                left(j.progress_message, 1000) AS message
           FROM {schema}.jobs AS j JOIN s ON j.id = s.run_id) AS r""");
  }

  /** Stores a signal unless one of that name came before. Parameters: run, name, payload (JSON). */
  static final String SIGNAL = """
      INSERT INTO {schema}.workflow_signals (run_id, name, payload) VALUES (?, ?, ?::jsonb)
      ON CONFLICT (run_id, name) DO NOTHING
      RETURNING 1""";

  /** A signal's payload, if it came. Parameters: run, name. */
  static final String FIND_SIGNAL = """
      SELECT payload::text FROM {schema}.workflow_signals WHERE run_id = ? AND name = ?""";

  /**
   * Wakes a waiting run: its job, snoozed, becomes due now, and its queue's workers are told. Returns the
   * job's state (no row: not in the hot table, it has ended). Parameter: the run.
   */
  static final String WAKE = """
      WITH woken AS (
          UPDATE {schema}.jobs SET run_at = now(), state = CASE WHEN state = 'blocked' THEN 'queued' ELSE state END,
                 waiting_on = CASE WHEN state = 'blocked' THEN NULL ELSE waiting_on END
           WHERE id = ? AND ((state IN ('queued', 'retrying') AND run_at > now()) OR state = 'blocked')
          RETURNING queue
      )
      SELECT (SELECT state FROM {schema}.jobs WHERE id = ?),
             (SELECT pg_notify('{schema}_jobs_ready', queue) FROM woken)""";

  /**
   * Makes the jobs a run just started (in this transaction) its parents: an edge from each to the run
   * ({@code run}: it waits for them whatever their outcome), and each marked as having a dependent.
   * Parameters: the run, the jobs' ids.
   */
  static final String AWAIT_JOBS = """
      WITH edges AS (
          INSERT INTO {schema}.job_dependencies (parent_id, child_id, on_failure)
          SELECT p.id, ?, 'run' FROM unnest(?::uuid[]) AS p(id)
          RETURNING parent_id
      )
      UPDATE {schema}.jobs SET has_dependents = true WHERE id IN (SELECT parent_id FROM edges)""";

  /** A recorded step's result, set in the transaction that recorded it. Parameters: result, run, name. */
  static final String SET_RESULT = """
      UPDATE {schema}.workflow_steps SET result = ?::jsonb WHERE run_id = ? AND name = ?""";

  /**
   * The jobs of {@code ids} that have ended: id, type, state, output, the message of the last error.
   * Parameter: the ids.
   */
  static final String ENDED_JOBS = """
      SELECT id, type, state, output::text, errors -> -1 ->> 'message'
        FROM {schema}.finished_jobs WHERE id = ANY (?)""";

  /** Deletes a pruned run's signals. Parameter: the run ids. */
  static final String PRUNE_SIGNALS = """
      DELETE FROM {schema}.workflow_signals WHERE run_id = ANY (?)""";

  /**
   * Ends a run cancelled: its job's cancel flag, set by the run's own execution once it compensated, so
   * that the failure it throws next is written {@code cancelled}. Parameter: the run.
   */
  static final String FLAG_CANCELLED = """
      UPDATE {schema}.jobs SET cancel_requested = true WHERE id = ? AND NOT cancel_requested""";

  /**
   * Whether a run's cancellation was asked: the marker signal {@code (cancel)} (JobClient.cancelWorkflow)
   * or its job's cancel flag (a plain job cancel of a running run). Parameters: the run, twice.
   */
  static final String CANCEL_REQUESTED = """
      SELECT EXISTS (SELECT 1 FROM {schema}.workflow_signals WHERE run_id = ? AND name = '(cancel)')
          OR coalesce((SELECT cancel_requested FROM {schema}.jobs WHERE id = ?), false)""";

  /**
   * Whether a run was given one execution more to compensate, its worker lost during its last attempt:
   * the marker signal {@code (rescued)} (WorkerSql.RESCUE). Parameter: the run.
   */
  static final String RESCUED_TO_COMPENSATE = """
      SELECT EXISTS (SELECT 1 FROM {schema}.workflow_signals WHERE run_id = ? AND name = '(rescued)')""";
}
