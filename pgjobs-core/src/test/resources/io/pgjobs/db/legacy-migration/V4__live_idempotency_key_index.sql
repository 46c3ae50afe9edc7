-- pgjobs schema, version 4.
-- Belt and braces for idempotency: job_keys is the guarantee (it outlives the job's move between
-- tables); this partial unique index makes a second live job with the same key impossible even for a
-- row written around pgjobs.
CREATE UNIQUE INDEX jobs_idempotency_key_uidx ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
