/**
 * INTERNAL. One class per resource ({@code JobsApi}, {@code QueuesApi}, {@code WorkersApi},
 * {@code StatsApi}, {@code DeadLettersApi}, {@code EventsApi}, {@code HealthApi}, {@code MetricsApi}),
 * each registering its routes on {@link io.pgjobs.server.api.Routes} and defining its snake_case
 * response records; strict request reading in {@link io.pgjobs.server.api.JsonBody} and
 * {@link io.pgjobs.server.api.QueryParams}.
 */
package io.pgjobs.server.api;
