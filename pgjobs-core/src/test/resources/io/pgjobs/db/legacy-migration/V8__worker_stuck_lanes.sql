-- pgjobs schema, version 8: a worker reports, with every heartbeat, how many of its lanes are held by a
-- handler it had to let go (one that ignored its timeout, cancellation or shutdown), so a stuck lane is
-- visible in GET /workers and on the dashboard, not only in that worker's log.
ALTER TABLE workers ADD COLUMN stuck_lanes integer NOT NULL DEFAULT 0;
ALTER TABLE workers ADD CONSTRAINT workers_stuck_lanes_check CHECK (stuck_lanes >= 0);
