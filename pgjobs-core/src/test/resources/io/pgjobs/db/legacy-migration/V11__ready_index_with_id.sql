-- pgjobs schema, version 11: the ready index orders each priority level by (run_at, id).
--
-- A claim resumes each level's range just past the last job it claimed there, (run_at, id) > (cursor),
-- instead of at the range's low end, where every job claimed since the oldest open snapshot left a dead
-- entry that neither vacuum nor index scans may remove while a long transaction elsewhere is open. The id
-- makes the position exact: jobs enqueued together in one bulk insert share one run_at.
DROP INDEX jobs_ready_idx;
CREATE INDEX jobs_ready_idx ON jobs (queue, priority DESC, run_at, id) WHERE state IN ('queued', 'retrying');
