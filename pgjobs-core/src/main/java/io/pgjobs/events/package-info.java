/**
 * Live job events from PostgreSQL NOTIFY: state changes (one notification per statement, listing up to
 * 50 of its jobs, fewer when their names are long, with the true count) and progress.
 * {@link io.pgjobs.events.JobEventListener} is public; the HTTP event stream and the dashboard are built
 * on it.
 */
package io.pgjobs.events;
