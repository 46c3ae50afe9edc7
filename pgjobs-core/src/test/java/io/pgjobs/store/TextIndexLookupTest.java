package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The job list uses the optional trigram index (the operator's to create) only when it can serve
 * queries: not while {@code CREATE INDEX CONCURRENTLY} is still building it, nor when such a build left
 * it invalid.
 */
class TextIndexLookupTest extends PgJobsTestBase {
  private static final String CREATE = """
      CREATE INDEX CONCURRENTLY finished_jobs_text_trgm_idx ON pgjobs.finished_jobs
          USING gin ((payload::text || coalesce(E'\\n' || context, '')) pgjobs.gin_trgm_ops)""";

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

  @Test
  void anIndexStillBeingBuiltConcurrentlyIsNotUsedUntilItIsValid() throws Exception {
    assertThat(usable()).as("no index until the operator creates it").isFalse();
    CompletableFuture<Void> build;
    // A transaction holding a snapshot: the concurrent build waits for it before the index becomes
    // valid.
    try (Connection old = DriverManager.getConnection(db.jdbcUrl());
        Statement st = old.createStatement()) {
      old.setAutoCommit(false);
      st.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
      st.executeQuery("SELECT count(*) FROM pgjobs.jobs").close();
      build = CompletableFuture.runAsync(() -> db.execute(CREATE));
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> db.queryLong(
                  "SELECT count(*) FROM pg_index WHERE indexrelid = to_regclass('pgjobs.finished_jobs_text_trgm_idx')"
                      + " AND NOT indisvalid")
              == 1);
      assertThat(usable()).as("being built: in the catalog, not valid yet").isFalse();
      old.rollback();
    }
    build.get();
    assertThat(usable()).as("built").isTrue();
  }

  @Test
  void anIndexLeftInvalidByAFailedBuildIsNotUsed() throws Exception {
    // A build cancelled by its statement timeout after the catalog entry was committed leaves it
    // invalid.
    try (Connection old = DriverManager.getConnection(db.jdbcUrl());
        Statement st = old.createStatement()) {
      old.setAutoCommit(false);
      st.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
      st.executeQuery("SELECT count(*) FROM pgjobs.jobs").close();
      try (Connection builder = DriverManager.getConnection(db.jdbcUrl());
          Statement b = builder.createStatement()) {
        b.execute("SET statement_timeout = '1s'");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> b.execute(CREATE))
            .hasMessageContaining("statement timeout");
      }
      old.rollback();
    }
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_index"
                    + " WHERE indexrelid = to_regclass('pgjobs.finished_jobs_text_trgm_idx') AND NOT indisvalid"))
        .isEqualTo(1);
    assertThat(usable()).isFalse();
  }
}
