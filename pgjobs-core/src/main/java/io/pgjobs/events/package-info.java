/**
 * Live job events from PostgreSQL NOTIFY: state changes (one notification per statement, up to 50 jobs
 * each) and progress. {@link io.pgjobs.events.JobEventListener} is public; the HTTP event stream and
 * the dashboard are built on it.
 */
package io.pgjobs.events;
