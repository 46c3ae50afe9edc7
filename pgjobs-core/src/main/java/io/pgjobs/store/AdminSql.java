package io.pgjobs.store;

import static io.pgjobs.store.JobSql.NOTIFY_INSERTED;
import static io.pgjobs.store.JobSql.insertFinished;

/**
 * The statements of administration: cancel and retry (one job or all that match), pause and resume of
 * queues, counts and overviews. Placeholders as in {@link JobSql}.
 */
final class AdminSql {
  /** The children of a job (jobs its handler enqueued), oldest first, from both tables (parent indexes). */
  static final String CHILDREN = """
      SELECT id FROM (
          SELECT id FROM {schema}.jobs WHERE parent_id = ?
          UNION ALL
          SELECT id FROM {schema}.finished_jobs WHERE parent_id = ?) AS c
       ORDER BY id
       LIMIT ?""";

  /**
   * Whether the list's optional trigram index (named by the parameter, schema-qualified) exists and is
   * valid: a partitioned index that some partition of the history has no part of yet (an operator's
   * build by hand midway, docs/operations.md), or one a failed build left behind, cannot serve a query.
   */
  static final String TEXT_INDEX_USABLE = """
      SELECT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(?) AND indisvalid)""";

  private AdminSql() {}

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
           WHERE id = ? AND state IN ('queued', 'retrying', 'blocked')
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
   * Cancel every job matching a filter ({@code {where}} is built by AdminStore from whitelisted columns,
   * its values bound twice: once per part).
   */
  static final String CANCEL_MATCHING =
      """
      WITH cancelled AS (
          DELETE FROM {schema}.jobs
           WHERE state IN ('queued', 'retrying', 'blocked') AND {where}
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

  /**
   * What {@link #CANCEL_MATCHING} would do, changing nothing (a dry run): waiting jobs it would cancel,
   * running jobs it would flag. The same {where} as there.
   */
  static final String COUNT_CANCEL_MATCHING = """
      SELECT count(*) FILTER (WHERE state IN ('queued', 'retrying', 'blocked')) AS cancelled_now,
             count(*) FILTER (WHERE state = 'running' AND NOT cancel_requested) AS flagged
        FROM {schema}.jobs
       WHERE {where}""";

  /** What {@link #RETRY_MATCHING} would queue again, changing nothing (a dry run). */
  static final String COUNT_RETRY_MATCHING = """
      SELECT count(*) FROM {schema}.finished_jobs WHERE state IN ('failed', 'cancelled') AND {where}""";

  /**
   * A failed or cancelled job goes back to the queue: attempts start again from 0 (it gets a full set
   * of attempts), the error history is kept so earlier failures stay visible. It is due when it was due,
   * or now if that has passed: a job cancelled while scheduled an hour ahead keeps its time, unless the
   * second parameter asks to run it now.
   *
   * <p>Parameters: id, run now (boolean).
   */
  static final String RETRY_FINISHED = """
      WITH moved AS (
          DELETE FROM {schema}.finished_jobs
           WHERE id = ? AND state IN ('failed', 'cancelled')
          RETURNING *
      ), ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                                     run_at, created_at, context, idempotency_key, timeout_ms, errors, parent_id, capability,
                                     trace_context)
          SELECT id, type, queue, payload, priority, 'queued', 0, max_attempts,
                 CASE WHEN ?::boolean THEN now() ELSE greatest(now(), run_at) END, created_at,
                 context, idempotency_key, timeout_ms, errors, parent_id, capability, trace_context
            FROM moved
          RETURNING id, state, type, queue, attempts, run_at
      ), """ + NOTIFY_INSERTED + """

      SELECT id, (SELECT woken FROM notified), (SELECT count(*) FROM announced) FROM ins""";

  /**
   * Every failed or cancelled job matching {@code {where}} back to the queue, as RETRY_FINISHED does
   * (each due when it was due, or now if that has passed).
   */
  static final String RETRY_MATCHING = """
      WITH moved AS (
          DELETE FROM {schema}.finished_jobs
           WHERE state IN ('failed', 'cancelled') AND {where}
          RETURNING *
      ), ins AS (
          INSERT INTO {schema}.jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                                     run_at, created_at, context, idempotency_key, timeout_ms, errors, parent_id, capability,
                                     trace_context)
          SELECT id, type, queue, payload, priority, 'queued', 0, max_attempts, greatest(now(), run_at),
                 created_at, context, idempotency_key, timeout_ms, errors, parent_id, capability, trace_context
            FROM moved
          RETURNING id, state, type, queue, attempts, run_at
      ), """ + NOTIFY_INSERTED + """

      SELECT (SELECT count(*) FROM ins), (SELECT woken FROM notified), (SELECT count(*) FROM announced)""";

  /**
   * The hot table's jobs per queue and state: one part per partial index (waiting jobs that need no
   * capability, waiting jobs that need one, running jobs, blocked jobs of graphs), each saying that index's predicate, so each
   * can be read through its index, only the rows found looked up in the table (for their state). After
   * {@link #PAGES_PRICED_ALIKE} the planner does so when the jobs are few for the table's size (an
   * emptied table: its cost follows the jobs, not the size the table once grew to, see
   * {@link #READY_DEPTH}), and reads the table when it is full of waiting jobs (a backlog of a million:
   * the index as well would read more). Columns: queue, state, jobs, scheduled (queued, not yet due),
   * age in ms of the oldest due job (null if none).
   */
  static final String HOT_COUNTS = """
      SELECT queue, state, count(*) AS jobs,
             count(*) FILTER (WHERE state = 'queued' AND run_at > now()) AS scheduled,
             EXTRACT(EPOCH FROM now() - min(run_at) FILTER (WHERE run_at <= now())) * 1000 AS oldest_due_ms
        FROM (SELECT queue, state, run_at FROM {schema}.jobs
               WHERE state IN ('queued', 'retrying') AND capability IS NULL
              UNION ALL
              SELECT queue, state, run_at FROM {schema}.jobs
               WHERE state IN ('queued', 'retrying') AND capability IS NOT NULL
              UNION ALL
              SELECT queue, state, NULL FROM {schema}.jobs
               WHERE state = 'running'
              UNION ALL
              SELECT queue, state, NULL FROM {schema}.jobs
               WHERE state = 'blocked') AS hot
       GROUP BY queue, state""";

  /**
   * Finished jobs per queue and state: the counts kept for the history's closed partitions plus a count
   * of the others (V7__partitioned_history.sql, history_overview), not a read of the whole history.
   */
  static final String FINISHED_COUNTS = """
      SELECT queue, state, jobs FROM {schema}.history_overview()""";

  /** Pause or resume a queue (upsert). */
  static final String SET_QUEUE_PAUSED = """
      INSERT INTO {schema}.queues (name, paused, updated_at) VALUES (?, ?, now())
      ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now()""";

  /** Wakes the workers of a queue (after a resume). */
  static final String NOTIFY_READY = """
      SELECT pg_notify('{schema}_jobs_ready', ?)""";

  /**
   * The part of the queue overview after {@link #HOT_COUNTS} (which the caller reads first, in the same
   * snapshot): finished jobs per queue and state, and every queue with a pause row, with its flag — one
   * row per queue and state, the state null for a queue with a pause row and no finished job.
   */
  static final String QUEUE_OVERVIEW = """
      WITH done AS (
          SELECT queue, state, jobs FROM {schema}.history_overview()
      )
      SELECT coalesce(d.queue, q.name), d.state, coalesce(d.jobs, 0), coalesce(q.paused, false)
        FROM done AS d
        FULL JOIN {schema}.queues AS q ON q.name = d.queue""";

  /**
   * Said before {@link #HOT_COUNTS}, in its transaction: a page read at random is priced like one read in
   * order (1.1 against PostgreSQL's default 4), which is what it costs for the hot table and its indexes,
   * read all the time and so in memory. At the default the planner reads an emptied table whole rather
   * than its index, which kept its size too and whose every page it prices as a random read, not knowing
   * that the scan skips the pages vacuum emptied (109 MB table, 250 jobs: a sequential scan of 13,983
   * pages against 15 buffers through the indexes; docs/bench-journal/queue-depth.md). Not sequential scans
   * off, nor the index forced as {@link #READY_DEPTH} does: the overview reads columns the indexes lack,
   * and on a backlog of a million waiting jobs reading the index too took twice as long as the table alone.
   */
  static final String PAGES_PRICED_ALIKE = """
      SET LOCAL random_page_cost = 1.1""";

  /**
   * Said after {@link #HOT_COUNTS}, in the same transaction, so what follows (the count of
   * {@code finished_jobs}) is planned as usual.
   */
  static final String PLANNED_AS_USUAL = """
      RESET random_page_cost""";

  /**
   * Said first in the transaction of the counts: the hot and the finished jobs are counted by separate
   * statements (one planned with {@link #PAGES_PRICED_ALIKE}, one as usual), which then see one snapshot,
   * as the single statement they replace did: a job that finishes meanwhile is counted once.
   */
  static final String ONE_SNAPSHOT = """
      SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY""";

  /**
   * Per queue and capability, the waiting jobs (queued or retrying, due or scheduled) that need a
   * capability no live worker serving that queue declares: a worker is live while its heartbeat is newer
   * than the threshold (ms). Reads only jobs_ready_capability_idx (waiting jobs that need a capability),
   * grouped before the workers are looked at, so its cost follows those jobs and the workers, not the
   * hot table.
   */
  static final String UNRUNNABLE = """
      WITH needed AS (
          SELECT queue, capability, count(*) AS jobs
            FROM {schema}.jobs
           WHERE state IN ('queued', 'retrying') AND capability IS NOT NULL
           GROUP BY queue, capability
      )
      SELECT n.queue, n.capability, n.jobs
        FROM needed AS n
       WHERE NOT EXISTS (SELECT 1 FROM {schema}.workers AS w
                          WHERE w.last_heartbeat >= now() - ?::bigint * interval '1 millisecond'
                            AND n.capability = ANY (w.capabilities)
                            AND n.queue IN (SELECT jsonb_object_keys(w.queues)))
       ORDER BY n.queue, n.capability""";

  /**
   * The queues some live worker serves: live as {@link WorkerSql#LIST} judges it (heard from within its own
   * dead-worker threshold, the parameter (ms) for a worker that recorded none, counting silence only while
   * the server was up).
   */
  static final String SERVED_QUEUES = """
      SELECT DISTINCT jsonb_object_keys(w.queues)
        FROM {schema}.workers AS w
       WHERE greatest(w.last_heartbeat, pg_postmaster_start_time())
                 >= now() - coalesce(w.dead_after_ms, ?::bigint) * interval '1 millisecond'""";

  /** Jobs finished per minute over a window, by type, queue and final state. */
  static final String STATS_PER_MINUTE = """
      SELECT date_trunc('minute', finished_at) AS minute, type, queue, state, count(*)
        FROM {schema}.finished_jobs
       WHERE finished_at >= now() - ?::bigint * interval '1 millisecond'
       GROUP BY 1, 2, 3, 4
       ORDER BY 1, 2, 3, 4""";

  /**
   * Due jobs per queue, for the queue depth gauge and {@code JobClient.queueDepth()}: one part per ready
   * index (jobs that need no capability, jobs that need one), each saying that index's predicate, so it
   * can be read alone, index-only ({@code queue} and {@code run_at} are in it). One statement saying
   * {@code state IN (...)} matches neither partial index, so it could only read the table, all of it:
   * the hot table keeps the pages of its busiest moment ({@code vacuum_truncate = false}).
   *
   * <p>Each part asks for its index's order and has a limit the planner cannot see: {@code (SELECT
   * NULL::bigint)}, no limit when it runs, but an expression, for which the planner assumes that a tenth
   * of the rows will be fetched. That makes a sequential scan lose whatever the statistics say: it must
   * read the whole table and sort it before the first row, where the index delivers its first row at once
   * and is priced at a tenth of its scan. Left to plain costs, the planner read a table that had emptied
   * after a peak whole, because it prices each page of the index (which keeps its size too) as a random
   * read, four times a page of the table, not knowing that a scan of a btree skips the pages its vacuum
   * emptied (14,472 pages holding 250 jobs, a 3,976-page index: 14,473 buffers and 16–24 ms for the
   * table, 209 buffers and 0.2 ms for the index; docs/bench-journal/independent-harness.md, "queueDepth()
   * as one statement"). A bound the planner cannot estimate
   * ({@code queue >= (SELECT '')}, a third of the rows) was not enough: under churn the table's row
   * estimate ran ahead of the index's and the sequential scan came back.
   *
   * <p>One statement, run alone in auto-commit: the earlier {@code SET LOCAL enable_seqscan = off} needed a
   * transaction of its own, three round trips more a call, which a producer that asks before every batch
   * paid each time. The plan is the index-only scan that setting forced, which on a backlog of a million
   * waiting jobs cost what the table's scan did (docs/bench-journal/queue-depth.md).
   */
  static final String READY_DEPTH = """
      SELECT queue, count(*) FROM (
          (SELECT queue FROM {schema}.jobs
            WHERE state IN ('queued', 'retrying') AND capability IS NULL AND run_at <= now()
            ORDER BY queue LIMIT (SELECT NULL::bigint))
          UNION ALL
          (SELECT queue FROM {schema}.jobs
            WHERE state IN ('queued', 'retrying') AND capability IS NOT NULL AND run_at <= now()
            ORDER BY capability, queue LIMIT (SELECT NULL::bigint))) AS due
       GROUP BY queue""";

  /**
   * Blocked jobs of graphs per queue, read through jobs_blocked_idx in queue order as {@link #READY_DEPTH}
   * reads its indexes (the {@code ORDER BY ... LIMIT (SELECT NULL)} keeps the planner on the index,
   * whatever the hot table's stale statistics say).
   */
  static final String BLOCKED_DEPTH = """
      SELECT queue, count(*) FROM (
          SELECT queue FROM {schema}.jobs WHERE state = 'blocked'
           ORDER BY queue LIMIT (SELECT NULL::bigint)) AS blocked
       GROUP BY queue""";
}
