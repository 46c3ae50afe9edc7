-- pgjobs schema, version 23: a worker's heartbeat names the jobs it holds whose rows it could not renew.
--
-- Why: a heartbeat renews the heartbeat_at of every job the worker holds, skipping rows another transaction
-- has locked (a handler's own transaction on its row must not stall every other job's beat). Rescue now
-- returns a running job whose heartbeat_at is older than the dead-worker threshold even when its worker is
-- alive (a job a live worker no longer holds: its give-back was lost, or a failover brought back a claim the
-- worker had already finished), instead of waiting for the stale threshold. The jobs a live worker still
-- holds but could not renew, because their rows were locked at its last beat, are listed here so rescue
-- leaves them to that worker; the stale threshold still applies to them.
ALTER TABLE workers ADD COLUMN held_locked uuid[] NOT NULL DEFAULT '{}';

-- Each worker also records its own dead-worker threshold, so that what the API and dashboard call a live
-- worker is what rescue believes: a worker silent for longer than its threshold is shown as presumed dead,
-- not as live until the stale threshold removes its row. NULL: a worker of an older version (20 s).
ALTER TABLE workers ADD COLUMN dead_after_ms bigint CHECK (dead_after_ms > 0);
