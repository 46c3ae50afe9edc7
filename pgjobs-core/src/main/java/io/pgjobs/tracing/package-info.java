/**
 * Tracing of enqueues and job runs with OpenTelemetry (an optional dependency). {@link
 * io.pgjobs.tracing.JobTracing} is the seam the client and the worker call; it never references
 * OpenTelemetry types, so pgjobs runs without the API on the class path. Span names and attributes are
 * listed in {@link io.pgjobs.tracing.TracingNames} and in docs/operations.md ("Tracing"). Internal: use
 * {@code JobClient.Builder.openTelemetry} and {@code JobWorker.Builder.openTelemetry}.
 */
package io.pgjobs.tracing;
