/**
 * Metrics. {@link io.pgjobs.metrics.JobMetrics} is the hook; {@link io.pgjobs.metrics.MicrometerJobMetrics}
 * records to a Micrometer registry (an optional dependency, loaded only when used);
 * {@link io.pgjobs.metrics.MetricNames} lists every name. Public.
 */
package io.pgjobs.metrics;
