package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.server.ApiTestSupport.Response;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /jobs} whose database connection is lost while the enqueue is under way: 503
 * {@code enqueue-outcome-unknown}, telling the client to send it again with the same key; the retry stores
 * the job once.
 */
class EnqueueOutcomeUnknownApiTest {
  private static ApiTestSupport api;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start();
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  @Test
  void anEnqueueCutOffMidStatementIs503OutcomeUnknownAndItsRetryWithTheKeyStoresOnce()
      throws Exception {
    String body = "{\"type\":\"task\",\"payload\":{\"note\":\"cut\"}}";
    HttpRequest request = HttpRequest.newBuilder(api.uri("/jobs"))
        .timeout(Duration.ofSeconds(60))
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", "cut-1")
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .build();
    CompletableFuture<HttpResponse<String>> answer;
    try (Connection locker = api.db.dataSource().getConnection();
        Statement st = locker.createStatement()) {
      locker.setAutoCommit(false);
      st.execute("LOCK TABLE pgjobs.jobs IN EXCLUSIVE MODE"); // the enqueue's insert waits here
      answer = api.http.sendAsync(request, HttpResponse.BodyHandlers.ofString());
      // The API's session that waits on the lock is cut off: the enqueue's outcome is unknown to
      // it.
      await().atMost(Duration.ofSeconds(20)).until(() -> api.db.queryLong("""
          SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()""") > 0);
      HttpResponse<String> cut = answer.get(30, TimeUnit.SECONDS);
      assertThat(cut.statusCode()).as(cut.body()).isEqualTo(503);
      assertThat(cut.body())
          .contains("urn:pgjobs:problem:enqueue-outcome-unknown", "Idempotency-Key");
      locker.rollback();
    }
    Response retry = api.post("/jobs", body, "Idempotency-Key", "cut-1");
    assertThat(retry.status()).isIn(200, 201);
    Response again = api.post("/jobs", body, "Idempotency-Key", "cut-1");
    assertThat(again.status()).isEqualTo(200);
    assertThat(api.db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE payload->>'note' = 'cut'"))
        .isEqualTo(1);
  }
}
