package io.pgjobs.store;

/**
 * SQL of job dependencies (JobGraph): the edges stored with a graph, and what is read of them. Their
 * resolution when a parent ends is in the database (resolve_dependents, V3__dependencies.sql), run by
 * the statement that ends the parent. Placeholders as in {@link JobSql}.
 */
final class DependencySql {
  private DependencySql() {}

  /** The edges of a graph, by COPY: parent, child, on_failure. */
  static final String COPY_EDGES = """
      COPY {schema}.job_dependencies (parent_id, child_id, on_failure) FROM STDIN""";

  /**
   * Takes a graph's idempotency key, or finds it taken (no row: then {@link #FIND_GRAPH_KEY}); waits for a
   * concurrent enqueue under the same key to end. Parameters: key, fingerprint, first job, jobs (JSON).
   */
  static final String INSERT_GRAPH_KEY = """
      INSERT INTO {schema}.graph_keys (idempotency_key, fingerprint, first_job, jobs)
      VALUES (?, ?, ?, ?::jsonb)
      ON CONFLICT (idempotency_key) DO NOTHING
      RETURNING 1""";

  /** What a graph's key names: fingerprint, first job, jobs (JSON). Parameter: the key. */
  static final String FIND_GRAPH_KEY = """
      SELECT fingerprint, first_job, jobs::text FROM {schema}.graph_keys WHERE idempotency_key = ?""";

  /** The names of a graph's jobs, by COPY: job, name. */
  static final String COPY_NAMES = """
      COPY {schema}.job_graph_names (job_id, name) FROM STDIN""";

  /**
   * Marks the parents that are still in the hot table as having dependents, and locks their rows until
   * the graph commits: a parent that ends meanwhile waits for the commit, and its end then resolves the
   * new edges. Returns the parents marked; the others have already ended (or never existed). Parameter:
   * the parent ids.
   */
  static final String MARK_PARENTS = """
      UPDATE {schema}.jobs SET has_dependents = true
       WHERE id = ANY (?)
      RETURNING id""";

  /** The final states of parents that have already ended. Parameter: their ids. */
  static final String ENDED_PARENTS = """
      SELECT id, state FROM {schema}.finished_jobs WHERE id = ANY (?)""";

  /** Resolves the edges from parents that had ended before the graph. Parameters: parent ids, their states. */
  static final String RESOLVE_ENDED = """
      UPDATE {schema}.job_dependencies AS d SET parent_state = e.state
        FROM unnest(?::uuid[], ?::text[]) AS e(id, state)
       WHERE d.parent_id = e.id AND d.child_id = ANY (?) AND d.parent_state IS NULL""";

  /**
   * Counts the edges not resolved of the graph's jobs that wait for jobs enqueued before it (their edges
   * within the graph included) and blocks those with any. Parameter: those jobs' ids.
   */
  static final String BLOCK_WAITING = """
      UPDATE {schema}.jobs AS j SET state = 'blocked', waiting_on = w.n
        FROM (SELECT d.child_id, count(*) AS n FROM {schema}.job_dependencies AS d
               WHERE d.child_id = ANY (?) AND d.parent_state IS NULL
               GROUP BY d.child_id) AS w
       WHERE j.id = w.child_id""";

  /**
   * Cancels jobs of a graph whose parent had already failed or been cancelled (with the default
   * {@code cancel}), or whose parents had all succeeded when they run only if one fails ({@code only});
   * the trigger cancels what waits on them in turn. Parameters: their ids, the message.
   */
  static final String CANCEL_DOOMED = """
      WITH cancelled AS (
          DELETE FROM {schema}.jobs WHERE id = ANY (?) AND state IN ('queued', 'blocked')
          RETURNING *
      )
      """
      + JobSql.insertFinished(
          "cancelled",
          "'cancelled'",
          "errors || " + JobSql.errorEntry("dependency", "?::text"),
          "NULL");

  /**
   * Queues jobs of a graph that run only if a parent fails ({@code only}) and whose parent had already
   * failed or been cancelled before the graph. Parameter: their ids. The jobs are read by their key:
   * {@code state = (SELECT 'blocked')} does not prove jobs_blocked_idx's predicate, which statistics taken
   * before the graph's COPY would price at one row (V9__dependency_trigger_reads_children_by_key.sql).
   */
  static final String QUEUE_FIRED = """
      UPDATE {schema}.jobs SET state = 'queued', waiting_on = NULL
       WHERE id = ANY (?) AND state = (SELECT 'blocked')""";

  /**
   * The parents of a job and how each ended (NULL: not yet), in the order of their edges. Parameter: the
   * child's id.
   */
  static final String PARENTS = """
      SELECT d.parent_id, d.on_failure, d.parent_state,
             coalesce(j.type::text, f.type) AS type, f.output::text AS output
        FROM {schema}.job_dependencies AS d
        LEFT JOIN {schema}.jobs AS j ON j.id = d.parent_id
        LEFT JOIN {schema}.finished_jobs AS f ON f.id = d.parent_id
       WHERE d.child_id = ?
       ORDER BY d.parent_id""";

  /**
   * The jobs connected to one through edges either way (itself first), at most {@code ?} of them: a
   * walk of job_dependencies by both of its indexes, which stops once it has found that many. Parameters:
   * the job's id, the bound.
   */
  static final String GRAPH_IDS = """
      WITH RECURSIVE reached(id) AS (
          SELECT ?::uuid
        UNION
          SELECT n.id
            FROM reached AS r
           CROSS JOIN LATERAL (
                 SELECT d.child_id FROM {schema}.job_dependencies AS d WHERE d.parent_id = r.id
                 UNION ALL
                 SELECT d.parent_id FROM {schema}.job_dependencies AS d WHERE d.child_id = r.id) AS n(id)
      )
      SELECT id FROM reached LIMIT ?""";

  /** Type, state, queue and graph name of jobs, running or finished. Parameters: their ids, twice. */
  static final String GRAPH_NODES = """
      SELECT n.id, n.type, n.state, n.queue, g.name
        FROM (SELECT id, type::text, state, queue::text FROM {schema}.jobs WHERE id = ANY (?)
              UNION ALL
              SELECT id, type, state, queue FROM {schema}.finished_jobs WHERE id = ANY (?)) AS n(id, type, state, queue)
        LEFT JOIN {schema}.job_graph_names AS g ON g.job_id = n.id""";

  /** The edges between jobs. Parameters: their ids, twice. */
  static final String GRAPH_EDGES = """
      SELECT parent_id, child_id, on_failure, parent_state FROM {schema}.job_dependencies
       WHERE child_id = ANY (?) AND parent_id = ANY (?)""";
}
