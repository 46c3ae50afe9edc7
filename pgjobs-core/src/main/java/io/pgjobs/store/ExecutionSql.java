package io.pgjobs.store;

import static io.pgjobs.store.JobSql.insertFinished;

/**
 * The statements that claim jobs and change running ones, each readable whole. Placeholders as in
 * {@link JobSql}.
 *
 * <p><b>The fence.</b> A claim statement draws one number from the {@code claim_tokens} sequence and
 * writes it to every job it claims. Every write to a running job matches on its being running and on
 * that job's {@code claim_token}: a write from a claim that is no longer the job's current one changes
 * nothing, whatever happened meanwhile (rescue, an operator's retry that reset the attempts, a new claim
 * by another worker). Each write returns the state it left each job in, so the caller counts outcomes
 * from what was written. The worker's own writes keep the token on the row they leave behind;
 * {@link #CLAIM_STATUS} reads it to tell a write whose reply was lost from one that never happened.
 *
 * <p><b>Running, written {@code locked_by}.</b> Statements that find their jobs by id say "running" as
 * {@code locked_by IS NOT NULL} (or {@code locked_by = worker}), equivalent to {@code state = 'running'}
 * by the jobs_running_is_locked CHECK: {@code state = 'running'} would make the partial index of running
 * jobs (on heartbeat_at) a candidate plan, which the planner picks when its statistics count few running
 * jobs — a scan of every entry of that index, which a long transaction elsewhere fills with dead ones
 * (W5: clearing the prefetch marks of 2–20 jobs read ~30,000 pages that way). The id is then the only
 * way in: the primary key.
 */
final class ExecutionSql {
  private ExecutionSql() {}

  /**
   * For {@code ExecutionStore.explainClaim}: prepares the full-pass claim ({@link #CLAIM}, its five
   * parameters worker id and queue four times) under a name of its own, so that {@link #EXPLAIN_CLAIM}
   * can show its custom and its generic plan; {@code {claim}} is the claim's text with {@code $n}
   * placeholders.
   */
  static final String PREPARE_EXPLAINED_CLAIM =
      "PREPARE pgjobs_explained_claim (text, text, text, text, text) AS {claim}";

  /**
   * Runs the prepared claim under EXPLAIN (worker id {@code explain}, the queue four times). {@code {queue}}
   * is the queue as a quoted literal: EXPLAIN, a utility statement, takes no bind parameters.
   */
  static final String EXPLAIN_CLAIM = "EXPLAIN (ANALYZE, BUFFERS) EXECUTE pgjobs_explained_claim"
      + " ('explain', {queue}, {queue}, {queue}, {queue})";

  /** Drops {@link #PREPARE_EXPLAINED_CLAIM}'s statement. */
  static final String DEALLOCATE_EXPLAINED_CLAIM = "DEALLOCATE pgjobs_explained_claim";

  /**
   * The transaction-local setting a claim statement turns on before it updates a row, so that the
   * statement-level trigger {@code jobs_events_update} ({@code WHEN} the setting is not
   * {@code on}) does not fire for it: the claim announces its jobs itself ({@link #CLAIM_TAIL}). Firing
   * the trigger, with its transition tables, cost a single-row claim ~50 µs of its ~90 µs in the server
   * (docs/bench-journal/issue-15-part-3.md, "Claims announce themselves"). Claims run in auto-commit mode,
   * so the setting ends with the claim's own transaction and no other statement is affected.
   */
  static final String CLAIM_ANNOUNCES_SETTING = "pgjobs.claim_announces";

  /**
   * A claim statement ({@link #CLAIM}, {@link #CLAIM_RESUME}, {@link #CLAIM_CAPABLE}) with its limit, the
   * most jobs it claims, written in (see {@link #CLAIM} for why it is not a parameter).
   *
   * @throws IllegalArgumentException if {@code limit} is not positive
   */
  static String withLimit(String claimSql, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("claim limit must be at least 1, was " + limit);
    }
    return claimSql.replace("{limit}", Integer.toString(limit));
  }

  /**
   * The claim statements' type filter, written into their text where they say {@code {types}} (the ready
   * rows' scan, after the index has found them): none for a store that claims every type ({@code types}
   * null), else {@code AND type IN ('a', 'b')}, so a worker claims only jobs it has a handler for, as
   * graphile-worker claims only the task identifiers a worker knows. Written in, not bound: a worker's
   * types are fixed when it is built, and literals keep the generic plan's estimates those of the
   * statement without a filter (an array parameter would be costed as ten values). The filter is applied
   * to rows the index scan reads in claim order, so jobs of types this worker does not run are stepped
   * over, never locked; the cost is a comparison per row read, and rows of other types are read only when
   * they wait ahead of this worker's own.
   *
   * @throws IllegalArgumentException if {@code types} is empty (such a worker could claim nothing)
   */
  static String typeFilter(java.util.Collection<String> types) {
    if (types == null) {
      return "";
    }
    if (types.isEmpty()) {
      throw new IllegalArgumentException(
          "a worker that claims only the types it runs needs at least one type");
    }
    return types.stream()
        .sorted()
        .distinct()
        .map(t -> "'" + t.replace("'", "''") + "'")
        .collect(java.util.stream.Collectors.joining(", ", " AND type IN (", ")"));
  }

  /**
   * The start of every claim statement, up to the ids it claims ({@code j.id = ANY (ARRAY(} the
   * statement's own selection {@code ))}): the update that starts the jobs under one new claim token, in CTE
   * {@code claimed}, after turning {@link #CLAIM_ANNOUNCES_SETTING} on (a one-time filter, evaluated before
   * any row is updated, so the trigger sees it).
   */
  static final String CLAIM_HEAD = """
      WITH claimed AS (
      UPDATE {schema}.jobs AS j
         SET state = 'running', attempts = j.attempts + 1, attempted_at = now(),
             heartbeat_at = now(), locked_by = ?, prefetched = false,
             claim_token = (SELECT nextval('{schema}.claim_tokens'))
       WHERE (SELECT set_config('%s', 'on', true)) = 'on'
         AND j.id = ANY (ARRAY(""".formatted(CLAIM_ANNOUNCES_SETTING);

  /**
   * The end of every claim statement: the claimed rows of CTE {@code claimed}, in the column order
   * {@code ExecutionStore.readClaimed} reads, and the job event announcing them {@code running}
   * ({@link JobSql#stateEvent}: the same message the events trigger sends for any other state change).
   * The event is an uncorrelated subquery, evaluated once when the first row is read: a claim that got
   * no job announces nothing, as the trigger did not.
   */
  static final String CLAIM_TAIL = """
          RETURNING j.id, j.type, j.queue, j.payload::text AS payload, j.priority, j.attempts, j.max_attempts,
                    j.run_at, j.created_at, j.context, j.timeout_ms, j.claim_token, j.trace_context, j.state,
                    j.snoozes, j.has_dependents
      ), announced AS (
      """ + JobSql.stateEvent("claimed") + """

      )
      SELECT id, type, queue, payload, priority, attempts, max_attempts, run_at, created_at, context,
             timeout_ms, claim_token, trace_context, (SELECT count(*) FROM announced) AS announced, snoozes,
             has_dependents
        FROM claimed""";

  /**
   * The claim from the low end of every level (the full pass of a {@link ClaimCursor} that knows no
   * level yet, and the claim without a cursor): up to
   * {@code limit} due jobs of a queue, by priority (higher first), then {@code run_at} (then id);
   * rows another worker holds are skipped (SKIP LOCKED), so concurrent workers never wait on or share a
   * row. A paused queue yields nothing, and so does a limited one (its jobs are claimed by the {@code claim_limited} function, LimitsSql). RETURNING order is unspecified: callers sort. Only jobs that need
   * no capability: jobs_ready_idx holds no others, so this reads the same index
   * ranges, whatever the jobs that need a capability are; a worker with capabilities also runs
   * {@link #CLAIM_CAPABLE}.
   *
   * <p>Three choices keep its cost independent of how many jobs wait in the future (scheduled, or
   * retrying after a backoff) and of the hot table's ever-stale statistics:
   * <ul>
   *   <li><b>One bounded index range per priority level.</b> In jobs_ready_idx (queue, priority DESC,
   *       run_at) the due jobs of a level come first and its future jobs after them, so a single scan
   *       "ORDER BY priority DESC, run_at" that finds fewer due jobs than its limit walks every future
   *       entry (5 million scheduled jobs: 150 ms per claim). Instead the recursive CTE finds the
   *       priority levels present with one index probe each (a loose index scan, evaluated lazily: it
   *       stops once the limit is met), and for each level the scan is bounded by
   *       {@code priority = level AND run_at <= now()}.
   *   <li><b>{@code id = ANY(ARRAY(...))}</b> for the UPDATE, not a join: a join lets the planner pick a
   *       hash join over a sequential scan of the whole hot table (it does, with a generic plan); the
   *       array form is answered by primary-key lookups of the locked rows — except in a generic plan
   *       made while the table was nearly empty, which scans it sequentially, and keeps doing so as it
   *       grows until a vacuum or analyze re-plans (the maintenance leader's {@code HotTableVacuum}
   *       sees to both).
   *   <li>{@code attempts < max_attempts} keeps a row that somehow has no attempts left from failing
   *       the CHECK constraint and wedging the whole batch.
   * </ul>
   * The token is an uncorrelated scalar subquery, so it is drawn once per statement (an InitPlan):
   * one sequence call per claim, not per job.
   *
   * <p><b>The limit is written into the text</b> ({@code {limit}}, see {@link #withLimit}), not bound: with
   * {@code LIMIT $n} a generic plan is costed for a tenth of the rows the scans could return, which makes
   * it look several times dearer than the plans made for the values bound (a claim of 10 from 10,000
   * waiting jobs: 548 against 134), so PostgreSQL planned every claim afresh — about 0.5 ms of a claim's
   * ~0.8 ms in the server (this statement is large to plan: the levels' recursive CTE, the lateral
   * scans, the event). With the limit in the text the generic plan is costed like the others, PostgreSQL
   * keeps it after its fifth execution, and a claim is planned in ~0.01 ms. Each limit is a statement of
   * its own, so the worker claims in a few sizes only ({@code QueuePoller}).
   *
   * <p>Parameters: worker id; the queue four times (first level, paused check, next levels, ready rows).
   */
  static final String CLAIM = CLAIM_HEAD + """
              WITH RECURSIVE levels(priority) AS (
                  SELECT max(priority) FROM {schema}.jobs
                   WHERE queue = ? AND state IN ('queued', 'retrying') AND capability IS NULL
                     AND NOT EXISTS (SELECT 1 FROM {schema}.queues q WHERE q.name = ? AND (q.paused OR q.limited))
                UNION ALL
                  SELECT (SELECT max(n.priority) FROM {schema}.jobs AS n
                           WHERE n.queue = ? AND n.state IN ('queued', 'retrying') AND n.capability IS NULL
                             AND n.priority < l.priority)
                    FROM levels AS l
                   WHERE l.priority IS NOT NULL
              )
              SELECT ready.id
                FROM levels
               CROSS JOIN LATERAL (
                     SELECT id FROM {schema}.jobs
                      WHERE queue = ? AND state IN ('queued', 'retrying') AND capability IS NULL
                        AND priority = levels.priority AND run_at <= now() AND attempts < max_attempts{types}
                      ORDER BY run_at, id
                      LIMIT {limit}
                        FOR UPDATE SKIP LOCKED) AS ready
               LIMIT {limit}))
      """ + CLAIM_TAIL;

  /** The positions of {@link #CLAIM_RESUME}: one row per level the worker knows. */
  private static final String RESUME_POSITIONS =
      "SELECT * FROM unnest(?::int[], ?::text[], ?::uuid[])";

  /**
   * The claim that resumes where the last one ended ({@link ClaimCursor}): for each priority level the
   * worker knows (highest first, in the order of the arrays), the due jobs just past its position
   * {@code (run_at, id)} — a range of jobs_ready_idx (queue, priority DESC, run_at, id) that starts after
   * every entry this worker's earlier claims left dead, so its cost does not grow with them while a
   * long transaction elsewhere keeps vacuum from removing them. Otherwise as {@link #CLAIM}: SKIP LOCKED,
   * a paused queue yields nothing, primary-key lookups for the UPDATE, one token per statement.
   *
   * <p>A level above every level the worker knows is looked for first, from its start (one probe of the
   * index above the highest known level): a more urgent job enqueued meanwhile goes first at once, not
   * at the cursor's next probe ({@link #FIRST_CLAIMABLE}). A new level below the highest known one waits
   * for that probe.
   *
   * <p>Parameters: worker id; the queue and the highest known level (the probe for a higher one); the
   * levels (int[]), their positions' run_at (text[] written by {@code ClaimCursor.appendInstant}, exact to the
   * microsecond) and id (uuid[]); the queue; the paused check's queue. The limit is written into the text,
   * as in {@link #CLAIM}.
   */
  static final String CLAIM_RESUME = CLAIM_HEAD + """
              SELECT ready.id
                FROM (SELECT top.priority, '-infinity', '00000000-0000-0000-0000-000000000000'::uuid
                        FROM (SELECT max(priority) AS priority FROM {schema}.jobs
                               WHERE queue = ? AND state IN ('queued', 'retrying') AND capability IS NULL
                                 AND priority > ?) AS top
                       WHERE top.priority IS NOT NULL
                      UNION ALL
                      """ + RESUME_POSITIONS + """

                     ) AS c(priority, after_run_at, after_id)
               CROSS JOIN LATERAL (
                     SELECT id FROM {schema}.jobs
                      WHERE queue = ? AND state IN ('queued', 'retrying') AND capability IS NULL
                        AND priority = c.priority AND (run_at, id) > (c.after_run_at::timestamptz, c.after_id)
                        AND run_at <= now() AND attempts < max_attempts{types}
                      ORDER BY run_at, id
                      LIMIT {limit}
                        FOR UPDATE SKIP LOCKED) AS ready
               WHERE NOT EXISTS (SELECT 1 FROM {schema}.queues q WHERE q.name = ? AND (q.paused OR q.limited))
               LIMIT {limit}))
      """ + CLAIM_TAIL;

  /**
   * {@link #CLAIM_RESUME} for a worker that knows one level (a queue whose jobs all have one priority: the
   * usual case), with the same parameters: its position is read as the arrays' first elements, one row
   * of {@code VALUES}. Why a statement of its own: PostgreSQL estimates ten rows for {@code unnest} of an
   * array parameter, so the generic plan of {@link #CLAIM_RESUME} is costed for ten levels' scans and
   * looks dearer than the plans made for one (114 against 48 on a small table): the claim would be planned
   * afresh at every execution (see {@link #CLAIM}). Costed for the one row it reads, the generic plan is
   * kept.
   */
  static final String CLAIM_RESUME_ONE_LEVEL = replaceOnce(
      CLAIM_RESUME, RESUME_POSITIONS, "VALUES ((?::int[])[1], (?::text[])[1], (?::uuid[])[1])");

  private static String replaceOnce(String sql, String target, String replacement) {
    int at = sql.indexOf(target);
    if (at < 0 || sql.indexOf(target, at + 1) >= 0) {
      throw new IllegalStateException("expected '" + target + "' once in the claim statement");
    }
    return sql.replace(target, replacement);
  }

  /**
   * The probe of {@link ClaimCursor}: the first claimable job of every priority level present in a queue
   * (priority, run_at, id), due or not, among the jobs that need no capability. Read-only and without
   * row locks (a job another claim holds right now may be listed: the claim that then resumes before it
   * skips it), so it holds up no claim however long it takes. A loose index scan of jobs_ready_idx: one
   * descent per level, each stepping over the dead entries at the low end of its level — the walk a
   * claim no longer makes.
   *
   * <p>Parameters: the queue (first level); the queue (next levels).
   */
  static final String FIRST_CLAIMABLE = """
      WITH RECURSIVE levels(priority, run_at, id) AS (
          (SELECT priority, run_at, id FROM {schema}.jobs
            WHERE queue = ? AND state IN ('queued', 'retrying') AND capability IS NULL
              AND attempts < max_attempts
            ORDER BY priority DESC, run_at, id
            LIMIT 1)
        UNION ALL
          SELECT n.priority, n.run_at, n.id
            FROM levels AS l
           CROSS JOIN LATERAL (
                 SELECT priority, run_at, id FROM {schema}.jobs
                  WHERE queue = ? AND state IN ('queued', 'retrying') AND capability IS NULL
                    AND attempts < max_attempts AND priority < l.priority
                  ORDER BY priority DESC, run_at, id
                  LIMIT 1) AS n
      )
      SELECT priority, run_at, id FROM levels""";

  /** The most capabilities {@link #CLAIM_CAPABLE} binds one by one (see there); more are one array. */
  static final int CAPABILITIES_INLINE = 32;

  /**
   * The part of a claim that only a worker with capabilities makes, before {@link #CLAIM} or
   * {@link #CLAIM_RESUME} fill its remaining slots: up to {@code limit} due jobs of a queue that need one of
   * the worker's capabilities, by priority (higher first), then {@code run_at}, then id. Built as
   * {@link #CLAIM} is, on jobs_ready_capability_idx (capability, queue, priority DESC, run_at, id), which
   * holds only waiting jobs that need a capability: the recursive CTE finds, for each capability, the
   * priority levels present (one index probe each), and each (capability, level) range is read from its
   * first due job, bounded by {@code run_at <= now()}, so the cost follows the jobs claimed and the levels
   * present, not the scheduled jobs. Levels are served highest first; within one level, capabilities in
   * the order the worker declared them (not merged by run_at). The outer LIMIT stops pulling rows as
   * soon as it has enough, so no more rows are locked than are claimed. SKIP LOCKED, a paused queue yields
   * nothing, primary-key lookups for the UPDATE, one token per statement, as {@link #CLAIM}. No cursor:
   * such jobs are expected to be few (see {@link ClaimCursor} for why the generic claim has one).
   *
   * <p>Parameters: worker id; the queue (first level); the capabilities ({@code {capabilities}}: up to
   * {@link #CAPABILITIES_INLINE} of them a placeholder each, {@code ARRAY[?, ?]::text[]}, an array of a
   * known length that PostgreSQL plans for as many rows, where an array parameter is planned for ten and
   * the claim would be planned afresh each time, see {@link #CLAIM}; more, one array parameter,
   * {@code ?::text[]}); the paused check's queue; the queue (next level); the queue (ready rows). The limit
   * is written into the text, as in {@link #CLAIM}.
   */
  static final String CLAIM_CAPABLE = CLAIM_HEAD + """
              WITH RECURSIVE levels(capability, rank, priority) AS (
                  SELECT c.capability, c.rank,
                         (SELECT max(priority) FROM {schema}.jobs
                           WHERE capability = c.capability AND queue = ? AND state IN ('queued', 'retrying'))
                    FROM unnest({capabilities}) WITH ORDINALITY AS c(capability, rank)
                   WHERE NOT EXISTS (SELECT 1 FROM {schema}.queues q WHERE q.name = ? AND (q.paused OR q.limited))
                UNION ALL
                  SELECT l.capability, l.rank,
                         (SELECT max(n.priority) FROM {schema}.jobs AS n
                           WHERE n.capability = l.capability AND n.queue = ? AND n.state IN ('queued', 'retrying')
                             AND n.priority < l.priority)
                    FROM levels AS l
                   WHERE l.priority IS NOT NULL
              )
              SELECT ready.id
                FROM (SELECT * FROM levels WHERE priority IS NOT NULL ORDER BY priority DESC, rank) AS lv
               CROSS JOIN LATERAL (
                     SELECT id FROM {schema}.jobs
                      WHERE capability = lv.capability AND queue = ? AND state IN ('queued', 'retrying')
                        AND priority = lv.priority AND run_at <= now() AND attempts < max_attempts{types}
                      ORDER BY run_at, id
                      LIMIT {limit}
                        FOR UPDATE SKIP LOCKED) AS ready
               LIMIT {limit}))
      """ + CLAIM_TAIL;

  /**
   * The move of {@link #SUCCEED_BATCH} and {@link #SUCCEED_BATCH_HANDING_OFF}: CTEs {@code done} (the
   * rows deleted, under the batch's lock timeout) and {@code moved} (their finished rows).
   */
  private static final String SUCCEED_BATCH_MOVE =
      """
      WITH done AS (
          DELETE FROM {schema}.jobs AS j
           WHERE j.id = ANY (?) AND j.locked_by = ? AND j.claim_token = (? ->> j.id::text)::bigint
             AND (SELECT set_config('lock_timeout', ?, true)) IS NOT NULL
          RETURNING j.*
      ), moved AS (
      """ + insertFinished("done", "'succeeded'", "errors", "? -> id::text", "claim_token") + """

          RETURNING 1
      )""";

  /**
   * Success of many jobs in one round trip: each job in the id array that this worker still runs under
   * the claim token the first jsonb object maps its id to moves to finished_jobs with the output the
   * second object maps it to (absent: none). Returns how many were written: the usual answer is all of
   * them, and a count is cheaper to send back than a thousand ids; when some are missing, the caller
   * asks {@link #CLAIM_STATUS} which.
   *
   * <p>This is the fast form, run with a short lock timeout (its last parameter, set for this statement's
   * own transaction by the one-time filter before any row is read): a row another transaction holds (a
   * handler's own open transaction, an operator's cancel in a long transaction) makes it wait, and when
   * the lock timeout ends the wait (SQLState 55P03) the batch is written again with
   * {@link #SUCCEED_BATCH_SKIP_LOCKED}, so one locked row never holds up every success of the worker for
   * long. A lock timeout, not a statement timeout: the statement may rightly run long without waiting for
   * anyone, when a job it ends unblocks a large graph (a fan-out of 50,000 children takes about a second in
   * the dependency trigger), and cancelling that work to do it again would double it. Locking the rows first in every
   * batch (what the skip-locked form does) would write a lock record per row before its delete.
   *
   * <p>The shape is chosen for a plan that cannot go wrong with the hot table's ever-stale statistics:
   * {@code id = ANY(array)} is answered from the primary key only, and the per-job values are looked up
   * in jsonb objects (parameters typed jsonb, so parsed once) instead of joining an {@code unnest}, which
   * the planner may turn into a nested loop over every running job per completed job. The guard is
   * {@code locked_by} rather than {@code state = 'running'} (equivalent by the jobs_running_is_locked
   * CHECK) so that the partial index of running jobs is never a candidate either.
   */
  static final String SUCCEED_BATCH = SUCCEED_BATCH_MOVE + """

      SELECT count(*) FROM moved""";

  /**
   * {@link #SUCCEED_BATCH} that skips, rather than waits for, rows another transaction holds: for a batch
   * whose fast form timed out on a lock, and for successes skipped before.
   */
  static final String SUCCEED_BATCH_SKIP_LOCKED =
      """
      WITH mine AS (
          SELECT j.id FROM {schema}.jobs AS j
           WHERE j.id = ANY (?) AND j.locked_by = ? AND j.claim_token = (? ->> j.id::text)::bigint
             FOR UPDATE SKIP LOCKED
      ), done AS (
          DELETE FROM {schema}.jobs AS j
           WHERE j.id = ANY (ARRAY(SELECT id FROM mine))
          RETURNING j.*
      ), moved AS (
      """ + insertFinished("done", "'succeeded'", "errors", "? -> id::text", "claim_token") + """

          RETURNING 1
      )
      SELECT count(*) FROM moved""";

  /**
   * {@link #SUCCEED_BATCH} that also hands this worker the children the batch's successes unblocked, at
   * once: a child whose last unresolved parent is among the jobs ended here (so no other parent can be
   * ending at the same time: {@code waiting_on = 1}), whose edge runs it after a success (not
   * {@code 'only'}), due now, needing no capability, of a queue this worker serves and has room in
   * (the queues parameter), of a type it runs ({@code {types}}), in a queue neither
   * paused nor limited, and not held by another transaction (SKIP LOCKED: such a child is left to the
   * dependency trigger, as every child is without this statement). Such a child goes from
   * {@code blocked} straight to {@code running} under this worker, with a claim token of its own, in the
   * statement that ends its parent: one write instead of two (blocked to queued by the trigger, queued to
   * running by a claim), and no claim between a chain's links (Temporal's eager activity dispatch
   * does the same for activities). The dependency trigger, which runs at the statement's end, finds these children no longer
   * blocked and leaves them (their edges it resolves as before); the events trigger announces them
   * {@code running}. As the trigger does for a child it queues, the child's {@code run_at} becomes the
   * moment it was unblocked (it waited for its parents, not for a worker). At most as many children as the
   * last parameter says are handed over.
   *
   * <p>Result: one row per child handed over (the claim columns, {@code ExecutionStore.readClaimedRow}),
   * or one row of NULLs if none was, each with the count of successes written in column 17.
   * Parameters: ids, worker id, tokens, lock wait, outputs (as {@link #SUCCEED_BATCH}); worker id, queues,
   * limit.
   */
  static final String SUCCEED_BATCH_HANDING_OFF = SUCCEED_BATCH_MOVE + """
      , handed AS (
          UPDATE {schema}.jobs AS j
             SET state = 'running', waiting_on = NULL, attempts = j.attempts + 1, attempted_at = now(),
                 run_at = greatest(j.run_at, now()), heartbeat_at = now(), locked_by = ?, prefetched = false,
                 claim_token = (SELECT nextval('{schema}.claim_tokens'))
           WHERE j.id = ANY (ARRAY(
                 SELECT c.id FROM {schema}.jobs AS c
                  WHERE c.id = ANY (ARRAY(
                            SELECT d.child_id FROM done AS p
                              JOIN {schema}.job_dependencies AS d ON d.parent_id = p.id
                             WHERE p.has_dependents AND d.parent_state IS NULL AND d.on_failure <> 'only'))
                    AND c.state = (SELECT 'blocked') AND c.waiting_on = 1 AND c.capability IS NULL
                    AND c.run_at <= now() AND c.attempts < c.max_attempts AND c.queue = ANY (?){types}
                    AND NOT EXISTS (SELECT 1 FROM {schema}.queues AS q
                                     WHERE q.name = c.queue AND (q.paused OR q.limited))
                  LIMIT ?
                    FOR UPDATE OF c SKIP LOCKED))
          RETURNING j.id, j.type, j.queue, j.payload::text AS payload, j.priority, j.attempts, j.max_attempts,
                    j.run_at, j.created_at, j.context, j.timeout_ms, j.claim_token, j.trace_context, j.state,
                    j.snoozes, j.has_dependents
      )
      SELECT h.id, h.type, h.queue, h.payload, h.priority, h.attempts, h.max_attempts, h.run_at, h.created_at,
             h.context, h.timeout_ms, h.claim_token, h.trace_context, 0 AS announced, h.snoozes,
             h.has_dependents, m.n
        FROM (SELECT count(*) AS n FROM moved) AS m
        LEFT JOIN handed AS h ON true""";

  /**
   * Where each (job, claim token) pair stands now: {@code running} if the job still runs that claim (the
   * write has not happened: a row lock skipped it, or it failed), the state of the row that this claim's
   * own write left behind (the write did happen, though its reply may have been lost), or no row if the
   * job is no longer this claim's (rescued, cancelled by an operator, claimed again).
   */
  static final String CLAIM_STATUS = """
      SELECT m.id,
             COALESCE((SELECT j.state FROM {schema}.jobs AS j WHERE j.id = m.id AND j.claim_token = m.token),
                      (SELECT f.state FROM {schema}.finished_jobs AS f
                        WHERE f.id = m.id AND f.claim_token = m.token)) AS state
        FROM unnest(?::uuid[], ?::bigint[]) AS m(id, token)""";

  /**
   * Claimed jobs that never started (a worker's prefetch given back, jobs of a claim whose reply was
   * lost) go back to the queue as they were: the attempt the claim counted is taken back. Guarded as
   * {@link #SUCCEED_BATCH}, locked rows skipped, so one held row does not hold up the others or the
   * caller: the worker keeps holding a skipped job and gives it back again once its row is free
   * (JobCompleter). A job whose cancellation was asked meanwhile ends cancelled. Workers of the queues concerned are woken. Returns each job written and its new state.
   */
  static final String UNCLAIM_BATCH =
      """
      WITH mine AS (
          SELECT j.id, j.cancel_requested FROM {schema}.jobs AS j
           WHERE j.id = ANY (?) AND j.locked_by = ? AND j.claim_token = (? ->> j.id::text)::bigint
             FOR UPDATE SKIP LOCKED
      ), cancelled AS (
          DELETE FROM {schema}.jobs AS j
           WHERE j.id = ANY (ARRAY(SELECT id FROM mine WHERE cancel_requested))
          RETURNING *
      ), moved AS (
      """ + insertFinished("cancelled", "'cancelled'", "errors", "NULL", "claim_token") + """

          RETURNING id, state
      ), back AS (
          UPDATE {schema}.jobs AS j
             SET state = CASE WHEN jsonb_array_length(j.errors) = 0 THEN 'queued' ELSE 'retrying' END,
                 attempts = j.attempts - 1, locked_by = NULL, heartbeat_at = NULL, prefetched = false
           WHERE j.id = ANY (ARRAY(SELECT id FROM mine WHERE NOT cancel_requested))
          RETURNING j.id, j.state, pg_notify('{schema}_jobs_ready', j.queue) AS woken
      )
      SELECT id, state FROM moved UNION ALL SELECT id, state FROM back""";

  /**
   * The running jobs of a queue that this worker holds in the database but does not know of (a claim
   * committed and its reply was lost), with their claim tokens, for {@link #UNCLAIM_BATCH}.
   */
  static final String UNKNOWN_CLAIMS = """
      SELECT id, claim_token FROM {schema}.jobs
       WHERE state = 'running' AND locked_by = ? AND queue = ? AND NOT (id = ANY (?))""";

  /** Success of one job, in the caller's transaction (JobContext.complete). */
  static final String SUCCEED_ONE =
      """
      WITH done AS (
          DELETE FROM {schema}.jobs
           WHERE id = ? AND claim_token = ? AND locked_by IS NOT NULL
          RETURNING *
      )
      """ + insertFinished("done", "'succeeded'", "errors", "?::jsonb", "claim_token");

  /**
   * A running attempt ends for good ({@code failed} or {@code cancelled}), its error appended. Returns
   * the state written.
   */
  static final String FINISH_UNSUCCESSFUL =
      """
      WITH done AS (
          DELETE FROM {schema}.jobs
           WHERE id = ? AND claim_token = ? AND locked_by IS NOT NULL
          RETURNING *
      ), moved AS (
      """ + insertFinished("done", "CAST(? AS text)", "errors || ?::jsonb", "NULL", "claim_token")
          + """

          RETURNING state
      )
      SELECT state FROM moved""";

  /**
   * The head of a write that ends a running attempt one of two ways, decided by whether its
   * cancellation was asked: CTE {@code mine} locks the job's row if this claim still holds it
   * (parameters: id, claim token) and reads {@code cancel_requested} from the row it locked. Why a lock
   * first: the statement's other parts read their snapshot, taken before any wait. A cancel that commits
   * while the write waits for its row lock would be seen as not asked by a part that reads the snapshot
   * (the DELETE of a cancelled job matches nothing) and as asked by the part that re-checks the row it
   * waited for (the UPDATE of a job not cancelled matches nothing): nothing written, the job left
   * running with its worker told it was no longer its claim. {@code FOR UPDATE} returns the newest row
   * version once the lock is granted (READ COMMITTED), so exactly one of the two parts matches; they
   * find the row by the id {@code mine} returned, which the newest version still has.
   */
  private static final String LOCK_MINE = """
      WITH mine AS (
          SELECT id, cancel_requested FROM {schema}.jobs
           WHERE id = ? AND claim_token = ? AND locked_by IS NOT NULL
             FOR UPDATE
      ), cancelled AS (
          DELETE FROM {schema}.jobs
           WHERE id = (SELECT id FROM mine WHERE cancel_requested)
          RETURNING *
      ), moved AS (
      """;

  /**
   * A failed attempt with attempts left: wait {@code delay} ms, keep the error. A job whose cancellation
   * was asked meanwhile (its worker had not yet heard, or the cancel committed while this waited for the
   * row) ends cancelled instead of running again ({@link #LOCK_MINE}). Returns the state written.
   *
   * <p>Parameters: id, claim token; the error (cancelled); the delay (ms), the error (retrying).
   */
  static final String RETRY_LATER = LOCK_MINE
      + insertFinished("cancelled", "'cancelled'", "errors || ?::jsonb", "NULL", "claim_token")
      + """

          RETURNING state
      ), retried AS (
          UPDATE {schema}.jobs
             SET state = 'retrying', run_at = now() + ?::bigint * interval '1 millisecond',
                 locked_by = NULL, heartbeat_at = NULL, errors = errors || ?::jsonb
           WHERE id = (SELECT id FROM mine WHERE NOT cancel_requested)
          RETURNING state
      )
      SELECT state FROM moved UNION ALL SELECT state FROM retried""";

  /**
   * Back to the queue without spending the attempt: snooze, and jobs a worker has no handler for
   * (yet). The claim had added one; this takes it back. A job whose cancellation was asked meanwhile
   * ends cancelled instead ({@link #LOCK_MINE}). Returns the state written.
   *
   * <p>Parameters: id, claim token; the delay (ms).
   */
  static final String SNOOZE =
      LOCK_MINE + insertFinished("cancelled", "'cancelled'", "errors", "NULL", "claim_token") + """

          RETURNING state
      ), snoozed AS (
          UPDATE {schema}.jobs
             SET state = 'queued', attempts = attempts - 1, snoozes = snoozes + 1,
                 run_at = now() + ?::bigint * interval '1 millisecond',
                 locked_by = NULL, heartbeat_at = NULL
           WHERE id = (SELECT id FROM mine WHERE NOT cancel_requested)
          RETURNING state
      )
      SELECT state FROM moved UNION ALL SELECT state FROM snoozed""";

  /**
   * Back to waiting without spending the attempt, until the jobs this one depends on have ended (a
   * workflow awaiting the jobs it started): {@code blocked} with its count of edges not resolved, or
   * {@code queued} and its queue's workers woken if none is left. The edges are locked first: a parent
   * whose end is being written waits for this, or has resolved its edge and is not counted (its count-down
   * found this job running, not blocked, and left it). A job whose cancellation was asked meanwhile ends
   * cancelled instead ({@link #LOCK_MINE}). Returns the state written.
   *
   * <p>Parameters: id, claim token.
   */
  static final String SNOOZE_BLOCKED =
      LOCK_MINE + insertFinished("cancelled", "'cancelled'", "errors", "NULL", "claim_token") + """

          RETURNING state
      ), waiting AS (
          SELECT d.parent_id FROM {schema}.job_dependencies AS d
           WHERE d.child_id = (SELECT id FROM mine WHERE NOT cancel_requested) AND d.parent_state IS NULL
             FOR UPDATE
      ), blocked AS (
          UPDATE {schema}.jobs
             SET state = CASE WHEN (SELECT count(*) FROM waiting) > 0 THEN 'blocked' ELSE 'queued' END,
                 waiting_on = nullif((SELECT count(*) FROM waiting), 0)::integer,
                 attempts = attempts - 1, snoozes = snoozes + 1, run_at = now(),
                 locked_by = NULL, heartbeat_at = NULL
           WHERE id = (SELECT id FROM mine WHERE NOT cancel_requested)
          RETURNING state, queue
      ), woken AS (
          SELECT pg_notify('{schema}_jobs_ready', queue) FROM blocked WHERE state = 'queued'
      )
      SELECT state FROM moved
      UNION ALL
      SELECT state FROM blocked WHERE (SELECT count(*) FROM woken) >= 0""";

  /**
   * A worker that is shutting down (or about to be presumed dead) gives a running job back, due at
   * once. The attempt stays counted (the handler did start, and may have done part of its work) unless
   * it was the last one: a job is never failed because its worker stopped. A job whose cancellation was
   * asked ends cancelled instead ({@link #LOCK_MINE}). Workers of the queue are woken. Returns the state
   * written.
   *
   * <p>Parameters: id, claim token; the error (cancelled); the error (released).
   */
  static final String RELEASE = LOCK_MINE
      + insertFinished("cancelled", "'cancelled'", "errors || ?::jsonb", "NULL", "claim_token")
      + """

          RETURNING state
      ), released AS (
          UPDATE {schema}.jobs
             SET state = 'retrying', run_at = now(), locked_by = NULL, heartbeat_at = NULL,
                 attempts = CASE WHEN attempts >= max_attempts THEN attempts - 1 ELSE attempts END,
                 errors = errors || ?::jsonb
           WHERE id = (SELECT id FROM mine WHERE NOT cancel_requested)
          RETURNING state, pg_notify('{schema}_jobs_ready', queue) AS woken
      )
      SELECT state FROM moved UNION ALL SELECT state FROM released""";

  /**
   * Progress of a running attempt; announced on the job events channel for live views. The row keeps
   * the whole message; the event carries at most its first 1,000 characters, which take at most 4,002
   * bytes in JSON unless they contain control characters (6 bytes each, as an escape): such a
   * message is cut to 666 characters, which fit whatever they are. With the names (at most 1,530 bytes
   * each, see {@link JobSql#EVENT_NAME_MAX_CHARS}) the event stays under 7,300 bytes, below PostgreSQL's
   * 8,000-byte payload limit, so a progress write never fails for its notification.
   */
  static final String PROGRESS = """
      WITH p AS (
          UPDATE {schema}.jobs
             SET progress_percent = ?, progress_message = ?, heartbeat_at = now()
           WHERE id = ? AND claim_token = ? AND locked_by IS NOT NULL
          RETURNING id, type, queue, attempts, progress_percent, left(progress_message, 1000) AS message
      )
      """ + JobSql.progressEvent("p");

  /** A heartbeat of one running attempt, asked for by its handler. */
  static final String HEARTBEAT = """
      UPDATE {schema}.jobs SET heartbeat_at = now()
       WHERE id = ? AND claim_token = ? AND locked_by IS NOT NULL""";

  /**
   * Lanes start jobs the worker's heartbeat had marked {@code prefetched}: from now on, should the worker
   * die, each counts as started (its attempt stands), not as never run. One statement for every lane
   * starting such a job meanwhile (the jsonb object maps each id to its claim token); returns the ids that
   * are still this claim's. Waits for a row another transaction holds, as the single-row form did (the
   * handler has not started, so no handler's transaction can hold it).
   */
  static final String CLEAR_PREFETCHED = """
      UPDATE {schema}.jobs AS j SET prefetched = false
       WHERE j.id = ANY (?) AND j.claim_token = (? ->> j.id::text)::bigint AND j.locked_by IS NOT NULL
      RETURNING j.id""";

  /**
   * How long ago (ms) a running job was created, by the database's clock ({@code created_at} is written
   * with it): the unknown-type grace is measured on one clock, not the worker's against the database's.
   * No row if the job no longer runs that claim.
   */
  static final String CREATED_AGO = """
      SELECT (extract(epoch FROM now() - created_at) * 1000)::bigint FROM {schema}.jobs
       WHERE id = ? AND claim_token = ? AND locked_by IS NOT NULL""";

  static final String IS_RUNNING = """
      SELECT 1 FROM {schema}.jobs WHERE id = ? AND claim_token = ? AND locked_by IS NOT NULL""";
}
