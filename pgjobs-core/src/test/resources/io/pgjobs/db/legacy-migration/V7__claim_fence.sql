-- pgjobs schema, version 7: the claim fence, and what dead-worker rescue needs to know.
--
-- claim_token: every claim statement draws one number from claim_tokens and writes it to every job it
-- claims. Every later write to a running job (success, failure, retry, snooze, release, progress,
-- heartbeat) matches on (id, claim_token), so a write from a claim that is no longer the job's current one
-- (its worker was cut off, the job was rescued, retried by an operator and claimed again) changes nothing,
-- and the writer learns that from the row count. The attempt number cannot be this fence: retrying a
-- finished job starts its attempts from 0 again. A worker's own writes keep the token on the row they
-- leave behind (in jobs or finished_jobs), so a write whose reply was lost can be recognised afterwards;
-- rescue and administrative moves clear it.
--
-- prefetched: set by the worker's heartbeat on jobs it has claimed but not started. When the worker is
-- found dead, such jobs go back to the queue as they were (the claim's attempt taken back): they never
-- ran. A job that started after the last heartbeat is counted as an attempt lost, as it should be.

CREATE SEQUENCE claim_tokens AS bigint;

ALTER TABLE jobs ADD COLUMN claim_token bigint;
ALTER TABLE jobs ADD COLUMN prefetched boolean NOT NULL DEFAULT false;
ALTER TABLE finished_jobs ADD COLUMN claim_token bigint;

-- Jobs running when this migration runs were claimed by a worker of an earlier version: give them a
-- token so the constraint below holds.
UPDATE jobs SET claim_token = nextval('claim_tokens') WHERE state = 'running';

ALTER TABLE jobs ADD CONSTRAINT jobs_running_has_token CHECK (state <> 'running' OR claim_token IS NOT NULL);
