-- pgjobs schema, version 24: each job counts its snoozes.
--
-- Why: a snooze gives its attempt back (attempts stays where it was), so a handler could not tell a first
-- run from a run after a snooze, and a "snooze once, then go on" handler snoozed forever. The count is
-- read by the claim (JobContext.snoozes()), shown with the job, kept when it finishes, and starts at 0
-- again when a failed or cancelled job is retried by hand. No CHECK: only SNOOZE writes it (+1).
ALTER TABLE jobs ADD COLUMN snoozes int NOT NULL DEFAULT 0;
ALTER TABLE finished_jobs ADD COLUMN snoozes int NOT NULL DEFAULT 0;
