/**
 * Recurring (cron) jobs: {@link io.pgjobs.recurring.Recurring} schedules declared in code
 * ({@code JobWorker.Builder.recurring}) and stored in the {@code recurring} table, whose slots the
 * maintenance leader fires exactly once each ({@link io.pgjobs.recurring.RecurringStore#fire}).
 */
package io.pgjobs.recurring;
