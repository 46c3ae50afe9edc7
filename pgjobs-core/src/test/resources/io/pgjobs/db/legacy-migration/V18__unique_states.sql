-- pgjobs schema, version 18: unique jobs among a chosen set of states, finished ones included
-- (UniqueOptions.states, "states" in the "unique" object of POST /jobs). Issue 12.
--
-- The default rule (unique among the unfinished states: queued, scheduled, retrying, running) is
-- unchanged: the job carries jobs.unique_key and the partial unique index of V14 does the work. This
-- table serves only rules whose set also holds finished states (succeeded, failed, cancelled), e.g.
-- "not again if one is waiting, running or succeeded within the last 10 minutes". Such jobs never carry
-- jobs.unique_key: this table is their only constraint. Their key also names the finished states of the
-- rule (UniqueKeys.base), so a rule with states and one without never share a key.
--
-- One row per key names the job that holds it. An enqueue is one INSERT ... ON CONFLICT (unique_key)
-- DO UPDATE here (EnqueueSql.INSERT_UNIQUE_STATES): the key row's lock serializes concurrent enqueuers
-- of one key (as job_keys does for idempotency keys), and the update hands the key to the new job only
-- when the holder no longer counts: it is neither in jobs (every unfinished state is in every set, so an
-- unfinished job always counts) nor in finished_jobs in one of the row's finished_states (it finished in
-- a state outside the set, or was pruned or deleted). The job is inserted in the same statement when
-- the key went to it; otherwise the holder is the answer (a duplicate).
--
-- Why the writer column: the holder check reads jobs and finished_jobs with the statement's snapshot.
-- An enqueuer that waited for the key row's lock while another enqueuer inserted the holder cannot see
-- that new job, and would take it for gone. writer is the transaction that made job_id the holder; when
-- it is not visible in the statement's snapshot (pg_visible_in_snapshot), the holder is as new as it
-- gets and counts. Maintenance (WorkerSql.PRUNE_UNIQUE_KEYS) uses the same guard.
--
-- expires_at is the end of the key's period (NULL: no period). The period is part of the key, so an
-- enqueue never meets an expired row of its own period; maintenance deletes rows past it, and rows whose
-- holder no longer counts, in bounded batches. A finished holder counts until the period ends or the
-- job is pruned (retention), whichever comes first.
CREATE TABLE unique_keys (
    unique_key      bytea PRIMARY KEY,
    job_id          uuid NOT NULL,
    finished_states text[] NOT NULL,
    expires_at      timestamptz,
    writer          xid8 NOT NULL,
    CONSTRAINT unique_keys_finished_states_check
        CHECK (finished_states <@ ARRAY['succeeded', 'failed', 'cancelled']::text[]
               AND cardinality(finished_states) >= 1)
);

-- Maintenance finds expired rows by this index.
CREATE INDEX unique_keys_expires_at_idx ON unique_keys (expires_at) WHERE expires_at IS NOT NULL;
