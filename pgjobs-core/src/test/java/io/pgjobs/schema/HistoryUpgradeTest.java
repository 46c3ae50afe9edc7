package io.pgjobs.schema;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.JobClient;
import io.pgjobs.JobFilter;
import io.pgjobs.testkit.TestDatabase;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * An installation's history written before V7 (one table, pruned row by row) upgrades to the partitioned
 * history (V7__partitioned_history.sql) with every row, every index valid and an operator's trigram index
 * kept as the first part of the partitioned one: the old table becomes the partition of everything up to
 * the next hour, dropped whole once that hour is past the retention.
 */
class HistoryUpgradeTest {
  @Test
  void aV6HistoryWithATrigramIndexBecomesTheFirstPartitionWithEveryRowAndIndex() throws Exception {
    try (TestDatabase db = TestDatabase.create()) {
      Migrator.migrate(db.dataSource(), "pgjobs", "6");
      db.execute(
          """
          INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                 run_at, created_at, context, errors, finished_at)
          SELECT gen_random_uuid(), 'old', 'default', jsonb_build_object('n', g), 50, 'succeeded', 1, 3,
                 t, t, CASE WHEN g = 7 THEN 'the NEEDLE' END, '[]', t
            FROM (SELECT g, now() - g * interval '1 minute' AS t FROM generate_series(1, 3000) AS g) AS s""",
          // As docs/operations.md told operators to create it before V7.
          "CREATE INDEX finished_jobs_text_trgm_idx ON pgjobs.finished_jobs USING gin"
              + " ((payload::text || coalesce(E'\\n' || context, '')) pgjobs.gin_trgm_ops)");
      UUID needle;
      try (var c = db.dataSource().getConnection();
          var st = c.createStatement();
          var rs =
              st.executeQuery("SELECT id FROM pgjobs.finished_jobs WHERE context = 'the NEEDLE'")) {
        rs.next();
        needle = rs.getObject(1, UUID.class);
      }

      assertThat(Migrator.migrate(db.dataSource(), "pgjobs")).isGreaterThanOrEqualTo(1);

      assertThat(db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs")).isEqualTo(3000);
      assertThat(db.queryLong("""
              SELECT count(*) FROM pgjobs.history_partitions()
               WHERE partition_name = 'finished_jobs_before_v7' AND lo IS NULL AND hi > now()"""))
          .as("the old table: the partition of everything up to the next hour")
          .isEqualTo(1);
      assertThat(db.queryLong("""
              SELECT count(*) FROM pg_index AS i
                JOIN pg_class AS c ON c.oid = i.indexrelid
                JOIN pg_namespace AS n ON n.oid = c.relnamespace
               WHERE n.nspname = 'pgjobs' AND NOT (i.indisvalid AND i.indisready)""")).as("indexes not valid").isZero();
      assertThat(db.queryLong("""
              SELECT count(*) FROM pg_index AS i
                JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
               WHERE a.attname = 'created_at'
                 AND i.indrelid IN (SELECT inhrelid FROM pg_inherits
                                     WHERE inhparent = 'pgjobs.finished_jobs'::regclass
                                    UNION ALL SELECT 'pgjobs.finished_jobs'::regclass)"""))
          .as("the created_at index, no longer read by the list's filters, is gone")
          .isZero();
      assertThat(db.queryLong("""
              SELECT count(*) FROM pg_inherits
               WHERE inhparent = 'pgjobs.finished_jobs_text_trgm_idx'::regclass
                 AND inhrelid = 'pgjobs.finished_jobs_before_v7_text_trgm_idx'::regclass"""))
          .as("the operator's trigram index, a part of the partitioned one")
          .isEqualTo(1);

      JobClient client = JobClient.builder(db.dataSource()).build();
      assertThat(client.get(needle)).isPresent();
      assertThat(client.list(JobFilter.builder().text("needle").build()).jobs())
          .extracting(j -> j.id())
          .containsExactly(needle);
    }
  }
}
