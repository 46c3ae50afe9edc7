-- pgjobs schema, version 9.
-- An idempotency key now remembers what was asked under it: a SHA-256 of the request (type, payload
-- as canonical JSON, and the options the caller gave; see IdempotencyFingerprint). A second enqueue
-- under the key with another fingerprint is refused instead of silently answered with the first job.
-- Keys stored before this version have none (NULL) and keep answering any request, as they did.
ALTER TABLE job_keys ADD COLUMN fingerprint text;
