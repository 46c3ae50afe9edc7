-- pgjobs schema, version 17: the last job of each recurring schedule.
--
-- The API, CLI and dashboard show each schedule's last run and its outcome. Finding it from the jobs
-- (the newest job whose idempotency key starts with 'recurring:<name>:') would need an index on
-- job_keys that every enqueue pays for, and a prefix scan over every kept job of the schedule; instead
-- the job's id is written in the same transaction that enqueues it (a fired slot or a run by hand), and
-- reading it is one primary-key lookup in jobs or finished_jobs. No foreign key: finished jobs are pruned
-- after their retention, and the schedule then shows its last run as no longer kept.
ALTER TABLE recurring ADD COLUMN last_job_id uuid;
