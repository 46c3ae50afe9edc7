package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.server.ApiTestSupport.Response;
import java.net.http.HttpRequest;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class AuthTest {
  static final String ADMIN = "admin-token-0123456789";
  static final String READ = "read-token-0123456789";
  static final String JOB = "{\"type\":\"task\",\"payload\":{\"note\":\"auth\"}}";
  static ApiTestSupport api;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start(
        b -> b.tokens(Map.of(ADMIN, ApiServer.Scope.ADMIN, READ, ApiServer.Scope.READ))
            .corsOrigins(List.of("https://ops.example.com")));
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  static String bearer(String token) {
    return "Bearer " + token;
  }

  @Test
  void withoutATokenEveryApiRouteIs401Problem() {
    for (Response r : List.of(
        api.get("/jobs"),
        api.get("/queues"),
        api.get("/metrics"),
        api.post("/jobs", JOB),
        api.get("/events", "Accept", "text/event-stream"))) {
      assertThat(r.status()).isEqualTo(401);
      assertThat(r.isProblem()).isTrue();
      assertThat(r.header("WWW-Authenticate")).startsWith("Bearer");
    }
    assertThat(api.rowCounts().get(0)).isZero();
  }

  @Test
  void anUnknownTokenOrAnotherSchemeIs401() {
    assertThat(
            api.get("/jobs", "Authorization", bearer("not-a-known-token-000")).status())
        .isEqualTo(401);
    assertThat(api.get("/jobs", "Authorization", "Basic YWRtaW46YWRtaW4=").status())
        .isEqualTo(401);
    assertThat(api.get("/jobs", "Authorization", bearer(ADMIN + "x")).status()).isEqualTo(401);
  }

  @Test
  void aReadTokenMayReadButNotChangeAnything() {
    assertThat(api.get("/jobs", "Authorization", bearer(READ)).status()).isEqualTo(200);
    assertThat(api.get("/metrics", "Authorization", bearer(READ)).status()).isEqualTo(200);
    Response post = api.post("/jobs", JOB, "Authorization", bearer(READ));
    assertThat(post.status()).isEqualTo(403);
    assertThat(post.isProblem()).isTrue();
    assertThat(post.json().path("type").asString()).isEqualTo("urn:pgjobs:problem:forbidden");
    assertThat(api.post("/queues/default/pause", null, "Authorization", bearer(READ))
            .status())
        .isEqualTo(403);
  }

  @Test
  void anAdminTokenMayDoEverything() {
    Response created = api.post("/jobs", JOB, "Authorization", bearer(ADMIN));
    assertThat(created.status()).isEqualTo(201);
    String id = created.json().path("id").asString();
    assertThat(api.get("/jobs/" + id, "Authorization", bearer(ADMIN)).status()).isEqualTo(200);
    assertThat(api.post("/jobs/" + id + "/cancel", null, "Authorization", bearer(ADMIN))
            .status())
        .isEqualTo(200);
  }

  @Test
  void healthDocsAndTheDashboardStayOpen() {
    assertThat(api.get("/health/live").status()).isEqualTo(200);
    assertThat(api.get("/health/ready").status()).isEqualTo(200);
    assertThat(api.get("/openapi.json").status()).isEqualTo(200);
    assertThat(api.get("/docs").status()).isEqualTo(200);
    assertThat(api.get("/").status()).isEqualTo(200);
  }

  @Test
  void corsAnswersPreflightsOfConfiguredOriginsWithoutATokenAndIgnoresOthers() {
    Response preflight = api.send(HttpRequest.newBuilder(api.uri("/jobs"))
        .method("OPTIONS", HttpRequest.BodyPublishers.noBody())
        .header("Origin", "https://ops.example.com")
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "authorization, content-type")
        .build());
    assertThat(preflight.status()).isEqualTo(204);
    assertThat(preflight.header("Access-Control-Allow-Origin"))
        .isEqualTo("https://ops.example.com");
    assertThat(preflight.header("Access-Control-Allow-Methods")).contains("POST");
    assertThat(preflight.header("Access-Control-Allow-Headers")).contains("Authorization");

    Response get =
        api.get("/jobs", "Origin", "https://ops.example.com", "Authorization", bearer(READ));
    assertThat(get.header("Access-Control-Allow-Origin")).isEqualTo("https://ops.example.com");
    assertThat(get.header("Access-Control-Expose-Headers"))
        .contains("X-Request-Id")
        .contains("Unique-Conflict");

    Response stranger =
        api.get("/jobs", "Origin", "https://evil.example.com", "Authorization", bearer(READ));
    assertThat(stranger.status()).isEqualTo(200);
    assertThat(stranger.header("Access-Control-Allow-Origin")).isNull();
  }
}
