/** INTERNAL. Applies pgjobs' database migrations (Flyway, own history table). */
package io.pgjobs.schema;
