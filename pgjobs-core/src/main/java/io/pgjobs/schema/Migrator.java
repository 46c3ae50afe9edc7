package io.pgjobs.schema;

import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Brings the pgjobs schema up to date with Flyway. pgjobs keeps its own history table
 * ({@value #HISTORY_TABLE}) inside its own schema, so it never touches an application's Flyway setup.
 * Safe to run from many processes at once: Flyway serialises them with an advisory lock.
 */
public final class Migrator {
  /** Flyway's history table for pgjobs. */
  public static final String HISTORY_TABLE = "pgjobs_schema_history";
  private static final String LOCATION = "classpath:io/pgjobs/db/migration";

  private Migrator() {}

  /**
   * Creates {@code schema} if missing and applies pending migrations.
   *
   * @return the number of migrations applied
   */
  public static int migrate(DataSource dataSource, String schema) {
    MigrateResult result =
        Flyway.configure(Migrator.class.getClassLoader())
            .dataSource(dataSource)
            .schemas(schema)
            .defaultSchema(schema)
            .createSchemas(true)
            .table(HISTORY_TABLE)
            .locations(LOCATION)
            .loggers("slf4j")
            .load()
            .migrate();
    return result.migrationsExecuted;
  }
}
