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
   * allows, keep the first record; the caller reads it back). Returns a row if this one was recorded.
   * Parameters: run, name, run (for the sequence), kind, state, result (JSON text or null), error.
   */
  static final String RECORD = """
      INSERT INTO {schema}.workflow_steps AS s (run_id, name, seq, kind, state, result, error)
      VALUES (?, ?, (SELECT coalesce(max(p.seq), 0) + 1 FROM {schema}.workflow_steps AS p WHERE p.run_id = ?),
              ?, ?, ?::jsonb, ?)
      ON CONFLICT (run_id, name) DO NOTHING
      RETURNING 1""";

  /** One recorded step: state, result. Parameters: run, name. */
  static final String STEP = """
      SELECT state, result::text FROM {schema}.workflow_steps WHERE run_id = ? AND name = ?""";

  /**
   * A done step's compensation ended: {@code compensated} or {@code compensation_failed} with its error.
   * Returns a row if it was done (a compensation recorded before is not recorded again). Parameters:
   * state, error, run, name.
   */
  static final String COMPENSATED = """
      UPDATE {schema}.workflow_steps SET state = ?, error = ?, finished_at = now()
       WHERE run_id = ? AND name = ? AND state = 'done'
      RETURNING 1""";

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
          UPDATE {schema}.jobs SET run_at = now()
           WHERE id = ? AND state IN ('queued', 'retrying') AND run_at > now()
          RETURNING queue
      )
      SELECT (SELECT state FROM {schema}.jobs WHERE id = ?),
             (SELECT pg_notify('{schema}_jobs_ready', queue) FROM woken)""";

  /** Deletes a pruned run's signals. Parameter: the run ids. */
  static final String PRUNE_SIGNALS = """
      DELETE FROM {schema}.workflow_signals WHERE run_id = ANY (?)""";

  /**
   * Asks a run to cancel: its job's cancel flag, and if it waits (asleep, or due later) it is made due now,
   * so that an execution replays its recorded steps, compensates them and ends it cancelled; a running
   * one's worker is told by the flag's trigger. Returns the job's state (no row: it has ended) and whether
   * the flag was set now. Parameters: the run, twice.
   */
  static final String CANCEL = """
      WITH flagged AS (
          UPDATE {schema}.jobs
             SET cancel_requested = true,
                 run_at = CASE WHEN state IN ('queued', 'retrying') THEN least(run_at, now()) ELSE run_at END
           WHERE id = ? AND NOT cancel_requested AND state IN ('queued', 'retrying', 'running')
          RETURNING queue, state
      )
      SELECT (SELECT j.state FROM {schema}.jobs AS j WHERE j.id = ?),
             (SELECT count(*) FROM flagged),
             (SELECT pg_notify('{schema}_jobs_ready', f.queue) FROM flagged AS f WHERE f.state <> 'running')""";

  /** Whether a run's cancellation was asked. Parameter: the run. */
  static final String CANCEL_REQUESTED = """
      SELECT cancel_requested FROM {schema}.jobs WHERE id = ?""";
}
