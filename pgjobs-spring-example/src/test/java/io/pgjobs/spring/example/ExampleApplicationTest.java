package io.pgjobs.spring.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.testkit.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The example over HTTP: an order's receipt runs once; a failed order leaves neither order nor job. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
class ExampleApplicationTest {
  static final TestDatabase db = TestDatabase.create();

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", db::jdbcUrl);
  }

  @AfterAll
  static void stopWorkerThenDropDatabase(ConfigurableApplicationContext context) {
    context.getBean(io.pgjobs.spring.PgJobsWorkerLifecycle.class).stop();
    db.close();
  }

  @Autowired
  Environment environment;

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void placedOrderGetsItsReceiptAndAFailedOrderLeavesNoJob() throws Exception {
    HttpResponse<String> placed = post("{\"email\":\"ada@example.com\",\"item\":\"book\"}");
    assertThat(placed.statusCode()).isEqualTo(201);
    assertThat(placed.body()).contains("\"orderId\":1");

    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> get("/orders/1").body().contains("\"receipt_sent_at\":\"20"));

    HttpResponse<String> failed =
        post("{\"email\":\"bob@example.com\",\"item\":\"pen\",\"fail\":true}");
    assertThat(failed.statusCode()).isEqualTo(409);
    assertThat(db.queryLong("SELECT count(*) FROM orders")).isEqualTo(1);
    assertThat(
            db.queryLong(
                "SELECT (SELECT count(*) FROM pgjobs.jobs) + (SELECT count(*) FROM pgjobs.finished_jobs)"))
        .isEqualTo(1);
    assertThat(get("/actuator/health/pgjobs").body()).contains("\"status\":\"UP\"");
  }

  @Test
  void dashboardAndApiAreMountedAtJobsBehindTheToken() throws Exception {
    assertThat(get("/jobs/jobs").statusCode()).isEqualTo(401);
    HttpResponse<String> jobs = http.send(
        HttpRequest.newBuilder(url("/jobs/jobs"))
            .header("Authorization", "Bearer example-admin-token-change-me")
            .build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(jobs.statusCode()).isEqualTo(200);
    assertThat(jobs.body()).startsWith("{\"jobs\":[");
    assertThat(get("/jobs/").body()).contains("<title>pgjobs</title>");
  }

  private HttpResponse<String> post(String json) throws Exception {
    return http.send(
        HttpRequest.newBuilder(url("/orders"))
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(url(path)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private URI url(String path) {
    return URI.create("http://127.0.0.1:" + environment.getProperty("local.server.port") + path);
  }
}
