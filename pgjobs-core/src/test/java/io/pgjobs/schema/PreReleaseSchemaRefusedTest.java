package io.pgjobs.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.JobClient;
import io.pgjobs.PgJobsException;
import io.pgjobs.testkit.Tags;
import io.pgjobs.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A schema migrated by the pre-release history (reset before the first release) cannot be upgraded: migrating
 * it is refused, before anything changes, with a message that says what to do, and doing that works.
 */
@Tag(Tags.SLOW)
class PreReleaseSchemaRefusedTest {
  private static TestDatabase db;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create();
  }

  @AfterAll
  static void dropDatabase() {
    if (db != null) {
      db.close();
    }
  }

  @ParameterizedTest(name = "history up to version {1}")
  @CsvSource({"pre_release_full, latest, 24", "pre_release_v1, 1, 1", "pre_release_v9, 9, 9"})
  void migratingAPreReleaseSchemaIsRefusedAndChangesNothing(
      String schema, String target, String lastVersion) throws Exception {
    SchemaDump.migratePreRelease(db, schema, target);
    db.execute("INSERT INTO " + schema
        + ".job_keys (idempotency_key, job_id) VALUES ('kept', gen_random_uuid())");
    List<String> ddlBefore = SchemaDump.statements(db, schema);
    List<String> historyBefore = history(schema);

    assertThatThrownBy(() -> Migrator.migrate(db.dataSource(), schema))
        .isInstanceOf(PgJobsException.class)
        .hasMessageStartingWith("schema \"" + schema + "\" was created by a pre-release pgjobs")
        .hasMessageContaining(
            "starts with V1__create_jobs.sql and reached version " + lastVersion + ")")
        .hasMessageContaining("nothing was changed")
        .hasMessageContaining("DROP SCHEMA \"" + schema + "\" CASCADE;")
        .hasMessageContaining("or use a new database or another schema name");
    JobClient client = JobClient.builder(db.dataSource()).schema(schema).build();
    assertThatThrownBy(client::migrate)
        .as("the public API, which the CLI and the Spring starter call")
        .isInstanceOf(PgJobsException.class)
        .hasMessageContaining("DROP SCHEMA \"" + schema + "\" CASCADE;");

    assertThat(SchemaDump.statements(db, schema)).isEqualTo(ddlBefore);
    assertThat(history(schema)).isEqualTo(historyBefore);
    assertThat(db.queryLong(
            "SELECT count(*) FROM " + schema + ".job_keys WHERE idempotency_key = 'kept'"))
        .isEqualTo(1);

    // What the message says to do.
    db.execute("DROP SCHEMA \"" + schema + "\" CASCADE");
    int migrations = migrationFiles();
    assertThat(Migrator.migrate(db.dataSource(), schema)).isEqualTo(migrations);
    assertThat(history(schema))
        .filteredOn(row -> row.startsWith("SQL "))
        .hasSize(migrations)
        .first()
        .asString()
        .startsWith("SQL 1 V1__schema.sql ");
  }

  /** Every row of the schema's Flyway history: type, version, script, checksum, success, rank. */
  private static List<String> history(String schema) {
    List<String> rows = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(
            "SELECT concat_ws(' ', type, version, script, checksum, success, installed_rank)"
                + " FROM " + schema + "." + Migrator.HISTORY_TABLE + " ORDER BY installed_rank")) {
      while (rs.next()) {
        rows.add(rs.getString(1));
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return rows;
  }

  /** How many migrations the build holds (V1__schema.sql, V2__…): every one applies to a new schema. */
  private static int migrationFiles() throws Exception {
    java.nio.file.Path dir = java.nio.file.Path.of(
        PreReleaseSchemaRefusedTest.class.getResource("/io/pgjobs/db/migration").toURI());
    try (var files = java.nio.file.Files.list(dir)) {
      return (int) files
          .filter(f -> f.getFileName().toString().matches("V\\d+__.*\\.sql"))
          .count();
    }
  }
}
