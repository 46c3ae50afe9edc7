package io.pgjobs.pgbouncer;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.CancelResult;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobFilter;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The whole library on a direct connection with {@code prepareThreshold=0} (what a pooler in transaction
 * mode needs): every statement runs unnamed, and the same statements repeated far past pgjdbc's default
 * threshold of 5 never create a server-side prepared statement.
 */
class PrepareThresholdZeroTest extends PgJobsTestBase {
  private static final int SESSIONS = 5;
  private HikariDataSource pool;

  @BeforeEach
  void openPool() {
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(db.jdbcUrl() + (db.jdbcUrl().contains("?") ? "&" : "?") + "prepareThreshold=0");
    c.setMaximumPoolSize(SESSIONS);
    c.setMinimumIdle(SESSIONS);
    pool = new HikariDataSource(c);
  }

  @AfterEach
  void closePool() {
    pool.close();
  }

  @Test
  void enqueueRunListAndCancelPreparingNothingOnTheServer() throws Exception {
    JobClient c = JobClient.builder(pool).knownTypes(NUMBERED).build();
    c.migrate();
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      ids.add(c.enqueue(NUMBERED, new Numbered(i)).job().id()); // one statement, 20 times
    }
    ids.addAll(c.enqueueAll(
        NUMBERED,
        IntStream.range(0, 200).mapToObj(Numbered::new).toList(),
        EnqueueOptions.DEFAULTS));
    UUID later = c.enqueue(
            NUMBERED,
            new Numbered(-1),
            EnqueueOptions.builder().delay(Duration.ofHours(1)).build())
        .job()
        .id();
    assertThat(c.cancel(later).outcome()).isEqualTo(CancelResult.Outcome.CANCELLED);

    JobWorker worker = start(JobWorker.builder(pool)
        .shutdownGrace(Duration.ofSeconds(2))
        .queue("default", 1)
        .register(NUMBERED, (ctx, p) -> null));
    for (UUID id : ids) {
      awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(60));
    }
    for (int i = 0; i < 10; i++) {
      assertThat(c.list(JobFilter.builder().state(JobState.SUCCEEDED).limit(100).build())
              .jobs())
          .hasSize(100);
    }
    worker.close();

    // Every session of the pool at once (held together, so each is a different one).
    List<Connection> sessions = new ArrayList<>();
    try {
      for (int i = 0; i < SESSIONS; i++) {
        sessions.add(pool.getConnection());
      }
      for (Connection conn : sessions) {
        try (Statement st = conn.createStatement();
            ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_prepared_statements")) {
          rs.next();
          assertThat(rs.getLong(1))
              .as("named server-side prepared statements in a session of the pool")
              .isZero();
        }
      }
    } finally {
      for (Connection conn : sessions) {
        conn.close();
      }
    }
  }
}
