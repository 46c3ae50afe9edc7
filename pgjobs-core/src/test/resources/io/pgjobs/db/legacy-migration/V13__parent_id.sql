-- pgjobs schema, version 13: child jobs. A job enqueued by a running handler (ctx.enqueue) records the
-- job that enqueued it; the job detail links both ways.
ALTER TABLE jobs ADD COLUMN parent_id uuid;
ALTER TABLE finished_jobs ADD COLUMN parent_id uuid;
CREATE INDEX jobs_parent_idx ON jobs (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX finished_jobs_parent_idx ON finished_jobs (parent_id) WHERE parent_id IS NOT NULL;
