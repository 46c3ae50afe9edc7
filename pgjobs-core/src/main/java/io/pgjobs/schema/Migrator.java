package io.pgjobs.schema;

import io.pgjobs.PgJobsException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Brings the pgjobs schema up to date with Flyway. pgjobs keeps its own history table
 * ({@value #HISTORY_TABLE}) inside its own schema, so it never touches an application's Flyway setup.
 * Safe to run from many processes at once: Flyway serialises them with an advisory lock.
 *
 * <p>Released migrations are append-only. The history from before the first release was reset into one
 * {@code V1__schema.sql}; a schema migrated by that older history is refused (see {@link #migrate}).
 */
public final class Migrator {
  /** Flyway's history table for pgjobs. */
  public static final String HISTORY_TABLE = "pgjobs_schema_history";

  private static final String LOCATION = "classpath:io/pgjobs/db/migration";
  /** The first script of the history reset before the first release: its presence marks a pre-release schema. */
  private static final String PRE_RELEASE_V1 = "V1__create_jobs.sql";

  private Migrator() {}

  /**
   * Creates {@code schema} if missing and applies pending migrations.
   *
   * @return the number of migrations applied
   * @throws PgJobsException if {@code schema} was migrated by a pre-release pgjobs, whose migration history
   *     was reset before the first release and cannot be upgraded; the message says what to do, and nothing
   *     was changed
   */
  public static int migrate(DataSource dataSource, String schema) {
    return migrate(dataSource, schema, "latest");
  }

  /**
   * {@link #migrate(DataSource, String)} up to migration {@code target} ("latest": all), for tests that
   * compare one version's schema.
   */
  static int migrate(DataSource dataSource, String schema, String target) {
    refusePreReleaseHistory(dataSource, schema);
    MigrateResult result = Flyway.configure(Migrator.class.getClassLoader())
        .dataSource(dataSource)
        .schemas(schema)
        .defaultSchema(schema)
        .createSchemas(true)
        .table(HISTORY_TABLE)
        .locations(LOCATION)
        .target(target)
        .loggers("slf4j")
        .load()
        .migrate();
    return result.migrationsExecuted;
  }

  /**
   * Refuses a schema whose history starts with the pre-release first migration, before Flyway changes
   * anything. Flyway alone would refuse it too (its version 1 has another checksum, and versions 2 and up
   * exist only in the database), but with a message that does not say what to do.
   */
  private static void refusePreReleaseHistory(DataSource dataSource, String schema) {
    String history = quoted(schema) + "." + quoted(HISTORY_TABLE);
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      try (ResultSet rs =
          st.executeQuery("SELECT to_regclass(" + literal(history) + ") IS NOT NULL")) {
        rs.next();
        if (!rs.getBoolean(1)) {
          return; // a new schema, or one without pgjobs
        }
      }
      String lastVersion;
      try (ResultSet rs = st.executeQuery("SELECT (SELECT version FROM " + history
          + " WHERE success AND version IS NOT NULL"
          + " ORDER BY installed_rank DESC LIMIT 1)"
          + " FROM " + history + " WHERE version = '1' AND script = " + literal(PRE_RELEASE_V1))) {
        if (!rs.next()) {
          return;
        }
        lastVersion = rs.getString(1);
      }
      throw new PgJobsException(preReleaseMessage(schema, lastVersion));
    } catch (SQLException e) {
      throw new PgJobsException(
          "cannot read the migration history " + history + ": " + e.getMessage(), e);
    }
  }

  private static String preReleaseMessage(String schema, String lastVersion) {
    return "schema " + quoted(schema)
        + " was created by a pre-release pgjobs (its migration history starts with "
        + PRE_RELEASE_V1 + " and reached version " + lastVersion
        + "). That history was reset before the first"
        + " release, so this version cannot upgrade it; nothing was changed. Drop the schema and migrate again:"
        + " DROP SCHEMA " + quoted(schema)
        + " CASCADE; (this deletes its jobs, and pg_trgm if pgjobs installed it"
        + " there), or use a new database or another schema name.";
  }

  private static String quoted(String identifier) {
    return '"' + identifier.replace("\"", "\"\"") + '"';
  }

  private static String literal(String text) {
    return "'" + text.replace("'", "''") + "'";
  }
}
