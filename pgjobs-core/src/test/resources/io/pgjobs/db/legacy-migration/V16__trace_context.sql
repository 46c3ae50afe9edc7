-- pgjobs schema, version 16: tracing. The W3C trace context of the enqueue (traceparent, then ';' and
-- the tracestate if any), stored only when tracing is on, so the worker's run span joins the enqueuing
-- trace. NULL otherwise. Nullable columns without a default: adding them rewrites nothing.
ALTER TABLE jobs ADD COLUMN trace_context text;
ALTER TABLE finished_jobs ADD COLUMN trace_context text;
-- NOT VALID: every existing row is NULL, so there is nothing to check, and skipping the check spares a
-- scan of a possibly large table under an exclusive lock. New and updated rows are checked. 1024
-- characters hold a traceparent (55) and a tracestate of the 512 characters W3C asks vendors to pass on.
ALTER TABLE jobs ADD CONSTRAINT jobs_trace_context_length
  CHECK (trace_context IS NULL OR length(trace_context) <= 1024) NOT VALID;
