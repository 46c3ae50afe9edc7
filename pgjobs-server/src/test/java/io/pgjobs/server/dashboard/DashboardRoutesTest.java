package io.pgjobs.server.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobState;
import io.pgjobs.testkit.Tags;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The API routes and parameters the dashboard added: job types, retry of a dead-letter group, text search, the overview. */
@Tag(Tags.SERIAL)
class DashboardRoutesTest {
  static final JsonMapper JSON = JsonMapper.builder().build();
  static DashboardFixture app;
  static final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void start() {
    app = DashboardFixture.start();
  }

  @AfterAll
  static void stop() {
    app.close();
  }

  record Response(int status, String body) {
    JsonNode json() {
      return JSON.readTree(body);
    }
  }

  static Response send(String method, String path, String json) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.server.port() + path));
    if (json == null) {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      b.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(json));
    }
    try {
      HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
      return new Response(r.statusCode(), r.body());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @Test
  void jobTypesListTheKnownTypesWithDefaultsAndAPayloadTemplate() {
    Response r = send("GET", "/job-types", null);

    assertThat(r.status()).isEqualTo(200);
    JsonNode types = r.json().path("types");
    // Sorted by name: the known workflow's job type (DashboardFixture.FLOW, knownWorkflows) is a
    // known type too, so a run can be started by POST /jobs as well as by its own route.
    assertThat(types.size()).isEqualTo(3);
    assertThat(types.get(0).path("name").asString()).isEqualTo("dash_flow");
    assertThat(types.get(0).path("max_attempts").asInt()).isEqualTo(1);
    JsonNode email = types.get(1);
    assertThat(email.path("name").asString()).isEqualTo("send_email");
    assertThat(email.path("queue").asString()).isEqualTo("emails");
    assertThat(email.path("priority").asInt()).isEqualTo(50);
    assertThat(email.path("max_attempts").asInt()).isEqualTo(3);
    assertThat(email.path("timeout_ms").asLong()).isEqualTo(3_600_000L);
    // The type's example payload (JobType.withExample); a type without one gets its fields with
    // empty values.
    assertThat(email.path("payload_template").toString())
        .isEqualTo("{\"to\":\"ada@example.com\",\"subject\":\"Hello\"}");
    assertThat(types.get(2).path("payload_template").toString())
        .isEqualTo("{\"note\":\"\",\"key\":\"\"}");
    assertThat(types.get(2).path("name").asString()).isEqualTo("task");
    assertThat(r.json().path("accepts_unknown_types").asBoolean()).isFalse();
  }

  @Test
  void retryOfADeadLetterGroupQueuesAgainOnlyTheFailedJobsOfThatTypeAndError() {
    app.gatewayDown(true);
    List<UUID> group = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      group.add(
          app.enqueue("flaky", "r" + i, EnqueueOptions.builder().maxAttempts(1).build()));
    }
    UUID otherError =
        app.enqueue("fail", "other", EnqueueOptions.builder().maxAttempts(1).build());
    group.forEach(id -> app.awaitState(id, JobState.FAILED));
    app.awaitState(otherError, JobState.FAILED);
    app.gatewayDown(false);

    Response otherType = send(
        "POST",
        "/dead-letters/retry",
        "{\"type\":\"send_email\",\"error\":\"java.net.ConnectException\"}");
    assertThat(otherType.status()).isEqualTo(200);
    assertThat(otherType.json().path("retried").asLong()).isZero();

    Response r = send(
        "POST",
        "/dead-letters/retry",
        "{\"type\":\"task\",\"error\":\"java.net.ConnectException\"}");
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.json().path("retried").asLong()).isEqualTo(3);
    group.forEach(id -> app.awaitState(id, JobState.SUCCEEDED));
    assertThat(app.job(otherError).state()).isEqualTo(JobState.FAILED);
    // Their error history is kept.
    assertThat(app.job(group.get(0)).errors())
        .extracting(e -> e.message())
        .first()
        .asString()
        .startsWith("gateway down");
  }

  @Test
  void retryOfADeadLetterGroupNeedsTypeAndError() {
    Response missing = send("POST", "/dead-letters/retry", "{\"type\":\"task\"}");
    assertThat(missing.status()).isEqualTo(422);
    assertThat(missing.json().path("errors").get(0).path("field").asString()).isEqualTo("error");

    Response unknown =
        send("POST", "/dead-letters/retry", "{\"type\":\"task\",\"error\":\"x\",\"queue\":\"q\"}");
    assertThat(unknown.status()).isEqualTo(400);
  }

  @Test
  void jobListFiltersByTextInPayloadOrContext() {
    String mark = "Needle-" + UUID.randomUUID().toString().substring(0, 6);
    UUID inPayload = app.enqueue("ok", mark.toLowerCase(), "parked");
    UUID inContext = app.enqueue(
        "ok",
        "x",
        EnqueueOptions.builder().queue("parked").context("about " + mark).build());
    app.enqueue("ok", "y", "parked");

    Response r = send("GET", "/jobs?text=" + mark.toUpperCase(), null);

    assertThat(r.status()).isEqualTo(200);
    List<String> ids = new ArrayList<>();
    r.json().path("jobs").forEach(j -> ids.add(j.path("id").asString()));
    assertThat(ids).containsExactlyInAnyOrder(inPayload.toString(), inContext.toString());
    assertThat(send("GET", "/jobs?text=" + "x".repeat(201), null).status()).isEqualTo(400);
  }

  @Test
  void queueOverviewOfASmallDatabaseIsFreshOnEveryRequest() {
    String queue = "fresh-" + UUID.randomUUID().toString().substring(0, 6);
    for (int i = 1; i <= 5; i++) {
      app.enqueue("ok", "f" + i, queue);
      JsonNode q = null;
      for (JsonNode each : send("GET", "/queues", null).json().path("queues")) {
        if (each.path("name").asString().equals(queue)) {
          q = each;
        }
      }
      assertThat(q).isNotNull();
      assertThat(q.path("counts").path("queued").asLong()).isEqualTo(i);
    }
  }
}
