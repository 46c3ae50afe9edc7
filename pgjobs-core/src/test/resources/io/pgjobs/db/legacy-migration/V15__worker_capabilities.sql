-- pgjobs schema, version 15: worker capabilities.
--
-- A job may need a capability (a name such as 'media' or 'gpu'); only a worker that declares it claims
-- the job. A job that needs none is claimed by any worker of its queue. The column is copied from the
-- job type's default or the enqueue options, and kept in finished_jobs so history shows it.
ALTER TABLE jobs ADD COLUMN capability text NULL
    CONSTRAINT jobs_capability_check CHECK (capability ~ '^[A-Za-z0-9_.-]{1,64}$');
ALTER TABLE finished_jobs ADD COLUMN capability text NULL;

-- The capabilities each worker declared ('{}' for none), written by its heartbeat.
ALTER TABLE workers ADD COLUMN capabilities text[] NOT NULL DEFAULT '{}';

-- The ready index keeps to jobs that need no capability, so the claim of a worker that declares none
-- (the common case) reads exactly the index it read before: same plan, same buffers, however many jobs
-- with a capability wait. Plain CREATE INDEX in Flyway's transaction, as version 11 did.
DROP INDEX jobs_ready_idx;
CREATE INDEX jobs_ready_idx ON jobs (queue, priority DESC, run_at, id)
    WHERE state IN ('queued', 'retrying') AND capability IS NULL;

-- Ready jobs that need a capability: the extra part of a capable worker's claim, and the report of jobs
-- that no live worker can run (GET /queues). Small while such jobs are few.
CREATE INDEX jobs_ready_capability_idx ON jobs (capability, queue, priority DESC, run_at, id)
    WHERE state IN ('queued', 'retrying') AND capability IS NOT NULL;
