package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.JobClient;
import io.pgjobs.testkit.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The HTTP API on a pool whose connections come with auto-commit off: what it answers as done is stored.
 */
class AutoCommitOffApiTest {
  private static TestDatabase db;
  private static HikariDataSource pool;
  private static ApiServer server;
  private static final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void start() {
    db = TestDatabase.create();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setAutoCommit(false);
    config.setMaximumPoolSize(5);
    pool = new HikariDataSource(config);
    JobClient client = JobClient.builder(pool).knownTypes(TestTypes.TASK).build();
    client.migrate();
    server = ApiServer.builder(client).host("127.0.0.1").port(0).build().start();
  }

  @AfterAll
  static void stop() {
    server.close();
    pool.close();
    db.close();
  }

  private static HttpResponse<String> post(String path, String json) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + server.port() + path))
        .timeout(Duration.ofSeconds(30));
    b = json == null
        ? b.POST(HttpRequest.BodyPublishers.noBody())
        : b.header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void anEnqueueACancelAndAPauseAnsweredAsDoneAreStored() throws Exception {
    HttpResponse<String> created =
        post("/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"a\"},\"delay_ms\":3600000}");
    assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
    String id = ApiTestSupport.JSON.readTree(created.body()).path("id").asText();
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE id = '" + id + "'"))
        .isEqualTo(1);

    HttpResponse<String> cancelled = post("/jobs/" + id + "/cancel", null);
    assertThat(cancelled.statusCode()).as(cancelled.body()).isEqualTo(200);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs WHERE id = '" + id
            + "' AND state = 'cancelled'"))
        .isEqualTo(1);

    HttpResponse<String> retried = post("/jobs/" + id + "/retry", null);
    assertThat(retried.statusCode()).as(retried.body()).isEqualTo(200);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE id = '" + id + "'"))
        .isEqualTo(1);

    HttpResponse<String> paused = post("/queues/default/pause", null);
    assertThat(paused.statusCode()).as(paused.body()).isEqualTo(200);
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.queues WHERE name = 'default' AND paused"))
        .isEqualTo(1);
  }
}
