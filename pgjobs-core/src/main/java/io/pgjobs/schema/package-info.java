/** Applies pgjobs' database migrations (Flyway, own history table): {@link io.pgjobs.schema.Migrator}. */
package io.pgjobs.schema;
