/**
 * INTERNAL. The only package that talks SQL: {@link io.pgjobs.store.JobSql} holds every statement of the
 * module as a whole text block; {@link io.pgjobs.store.JobStore} exposes one method per state transition,
 * each a single guarded statement. Not part of the public API.
 */
package io.pgjobs.store;
