-- pgjobs schema, version 10: indexes for the job list's filters over finished jobs.
--
-- The list reads each table newest first (ORDER BY id DESC LIMIT n). Without these, a filter that few
-- finished jobs match (a rare type or queue, an old date, a text) walks the primary key through the whole
-- table. Each index costs one more index entry per finished job (finished_jobs gets one insert per
-- finished job) and its size on disk; figures at 1,000,000 finished jobs are in docs/bench-journal/dashboard-1m-jobs.md
-- ("Dashboard at 1,000,000 jobs").
--
-- Plain CREATE INDEX (Flyway runs this in a transaction): finished_jobs takes no inserts while they
-- build, which is seconds per index at a million rows; finishing workers wait, nothing fails.

-- ?type= and ?queue=: the matching rows newest first, straight from the index.
CREATE INDEX finished_jobs_type_id_idx ON finished_jobs (type, id);
CREATE INDEX finished_jobs_queue_id_idx ON finished_jobs (queue, id);
-- ?created_after= / ?created_before=: a date range that holds few rows is read from here, then sorted.
CREATE INDEX finished_jobs_created_at_idx ON finished_jobs (created_at);

-- ?text=: a trigram index over the text the search reads (payload and context), used by ILIKE '%…%' for
-- texts of 3 or more characters. It needs the pg_trgm extension: created here (in this schema) when the
-- role may create it, used when it is already installed; when neither, no index and the search reads
-- the table, bounded by the API's statement timeout. Decided when this migration runs; the SQL to add the
-- index later, once pg_trgm is installed, is in docs/operations.md.
DO $pgjobs$
DECLARE
    trgm_schema name;
BEGIN
    SELECT n.nspname INTO trgm_schema
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pg_trgm';
    IF trgm_schema IS NULL
       AND EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS pg_trgm;
            SELECT n.nspname INTO trgm_schema
              FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
             WHERE e.extname = 'pg_trgm';
        EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR undefined_file THEN
            RAISE NOTICE 'pgjobs: pg_trgm cannot be created by this role (%); ?text= searches read the table', SQLERRM;
        END;
    END IF;
    IF trgm_schema IS NOT NULL THEN
        EXECUTE format(
            'CREATE INDEX finished_jobs_text_trgm_idx ON finished_jobs USING gin '
            '((payload::text || coalesce(E''\n'' || context, '''')) %I.gin_trgm_ops)', trgm_schema);
    END IF;
END
$pgjobs$;
