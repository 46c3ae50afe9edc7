package io.pgjobs.schema;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.testkit.Tags;
import io.pgjobs.testkit.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The migration history from before the first release (V1 to V24, kept as test resources) was reset into one
 * {@code V1__schema.sql}. That file must build exactly the schema the old history built: every table, column
 * (in the same order), default, constraint, domain, sequence, index, function, trigger and storage parameter,
 * compared as {@code pg_dump --schema-only} writes them, and the same extensions.
 */
@Tag(Tags.SLOW)
class SquashedSchemaTest {
  private static TestDatabase squashed;
  private static TestDatabase preRelease;

  @BeforeAll
  static void migrateBothWays() {
    squashed = TestDatabase.create();
    preRelease = TestDatabase.create();
    // V1 only: later migrations (V2__flow_control.sql, ...) are changes after the reset.
    assertThat(Migrator.migrate(squashed.dataSource(), "pgjobs", "1"))
        .as("migrations the squashed history applies")
        .isEqualTo(1);
    SchemaDump.migratePreRelease(preRelease, "pgjobs", "latest");
    assertThat(preRelease.queryLong("SELECT count(*) FROM pgjobs." + Migrator.HISTORY_TABLE
            + " WHERE success AND type = 'SQL'"))
        .as("migrations of the pre-release history")
        .isEqualTo(24);
  }

  @AfterAll
  static void drop() {
    if (squashed != null) {
      squashed.close();
    }
    if (preRelease != null) {
      preRelease.close();
    }
  }

  @Test
  void squashedSchemaIsExactlyTheOnePreReleaseHistoryBuilt() {
    List<String> expected = SchemaDump.statements(preRelease, "pgjobs");
    List<String> actual = SchemaDump.statements(squashed, "pgjobs");

    assertThat(expected)
        .as("the dump holds the schema, not only its envelope")
        .anyMatch(s -> s.startsWith("CREATE INDEX jobs_ready_idx ON pgjobs.jobs"))
        .anyMatch(s -> s.startsWith("CREATE TRIGGER jobs_events_update"))
        .noneMatch(s -> s.contains(Migrator.HISTORY_TABLE));
    assertThat(difference(expected, actual))
        .as("statements that differ (- pre-release history, + squashed V1)")
        .isEmpty();
    assertThat(actual).as("the same statements in the same order").isEqualTo(expected);
  }

  /** The statements only in {@code before} ("- ") and only in {@code after} ("+ "). */
  private static List<String> difference(List<String> before, List<String> after) {
    List<String> lines = new java.util.ArrayList<>();
    before.stream().filter(s -> !after.contains(s)).forEach(s -> lines.add("- " + s));
    after.stream().filter(s -> !before.contains(s)).forEach(s -> lines.add("+ " + s));
    return lines;
  }

  @Test
  void sameExtensionsInTheSameSchemas() {
    assertThat(SchemaDump.extensions(squashed)).isEqualTo(SchemaDump.extensions(preRelease));
  }

  /** The comparison above would notice one index that differs (here: one more column). */
  @Test
  void comparisonSeesAnIndexThatDiffers() {
    try (TestDatabase changed = TestDatabase.create()) {
      Migrator.migrate(changed.dataSource(), "pgjobs", "1");
      changed.execute(
          "DROP INDEX pgjobs.jobs_running_idx",
          "CREATE INDEX jobs_running_idx ON pgjobs.jobs (heartbeat_at, id) WHERE state = 'running'");

      List<String> dump = SchemaDump.statements(changed, "pgjobs");
      List<String> expected = SchemaDump.statements(squashed, "pgjobs");

      assertThat(difference(expected, dump))
          .containsExactly(
              "- CREATE INDEX jobs_running_idx ON pgjobs.jobs USING btree (heartbeat_at) WHERE (state = 'running'::text);",
              "+ CREATE INDEX jobs_running_idx ON pgjobs.jobs USING btree (heartbeat_at, id)"
                  + " WHERE (state = 'running'::text);");
    }
  }
}
