package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The job list uses the optional trigram index (the operator's to create) only when it can serve
 * queries. The history is partitioned (V7__partitioned_history.sql), so the index is a partitioned one,
 * valid only once every partition has its part: not while a hand-made build has done some partitions
 * only, nor after a build that failed.
 */
class TextIndexLookupTest extends PgJobsTestBase {
  private static final String CREATE = "SELECT pgjobs.create_history_text_index()";

  @AfterEach
  void dropIndex() {
    db.execute("DROP INDEX IF EXISTS pgjobs.finished_jobs_text_trgm_idx");
  }

  /** A fresh store each time: a store asks again only every 30 s. */
  private static boolean usable() throws Exception {
    AdminStore store =
        new AdminStore(db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
    try (Connection c = db.dataSource().getConnection()) {
      return store.trigramIndex(c);
    }
  }

  private static long invalid() {
    return db.queryLong(
        "SELECT count(*) FROM pg_index"
            + " WHERE indexrelid = to_regclass('pgjobs.finished_jobs_text_trgm_idx') AND NOT indisvalid");
  }

  @Test
  void anIndexOnSomePartitionsOnlyIsNotUsedUntilEveryPartitionHasItsPart() throws Exception {
    assertThat(usable()).as("no index until the operator creates it").isFalse();
    // By hand, as an operator building each partition's part CONCURRENTLY would leave it midway:
    // the
    // partitioned index, and no part yet.
    db.execute("""
        CREATE INDEX finished_jobs_text_trgm_idx ON ONLY pgjobs.finished_jobs
            USING gin ((payload::text || coalesce(E'\\n' || context, '')) pgjobs.gin_trgm_ops)""");
    assertThat(invalid()).isEqualTo(1);
    assertThat(usable()).as("in the catalog, not valid yet").isFalse();
    db.execute(CREATE);
    assertThat(invalid()).isZero();
    assertThat(usable()).as("every partition's part built and attached").isTrue();
    // A partition made afterwards gets its part when it is attached: the index stays valid.
    db.execute("SELECT pgjobs.ensure_history_partitions(interval '1 hour', interval '12 hours')");
    assertThat(invalid()).isZero();
    assertThat(usable()).isTrue();
  }

  @Test
  void aBuildCancelledByItsStatementTimeoutLeavesNoIndex() throws Exception {
    db.execute("""
        INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                                          run_at, created_at, errors, finished_at)
        SELECT gen_random_uuid(), 'x', 'default', jsonb_build_object('text', repeat(md5(g::text), 20)), 0,
               'succeeded', 1, 1, now(), now(), '[]', now()
          FROM generate_series(1, 200000) AS g""");
    try (Connection builder = DriverManager.getConnection(db.jdbcUrl());
        Statement b = builder.createStatement()) {
      b.execute("SET statement_timeout = '100ms'");
      assertThatThrownBy(() -> b.execute(CREATE)).hasMessageContaining("statement timeout");
    }
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_class WHERE oid = to_regclass('pgjobs.finished_jobs_text_trgm_idx')"))
        .as("one transaction: all of it or nothing")
        .isZero();
    assertThat(usable()).isFalse();
  }
}
