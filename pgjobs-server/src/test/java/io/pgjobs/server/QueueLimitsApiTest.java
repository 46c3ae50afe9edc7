package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.QueueLimits;
import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.worker.JobWorker;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;

/**
 * {@code /queues/{name}/limits} and the {@code limits} of {@code GET /queues} (issue 29) against a real
 * server and database: the round trip, usage with running jobs and why the others wait, every refused
 * input (named field, nothing stored), the guards every write passes, and {@code partition} at enqueue.
 * Every response checked is also checked against the OpenAPI document.
 */
class QueueLimitsApiTest {
  static ApiTestSupport api;
  static SpecValidator spec;
  /** A queue with a job (so it exists) and no limits, for the refused requests. */
  static String known;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start();
    spec = new SpecValidator(api.get("/openapi.json").json());
    known = queue("known");
    assertThat(api.post("/jobs", job("seed", known)).status()).isEqualTo(201);
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  static String queue(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  static String job(String note, String queue) {
    return "{\"type\":\"task\",\"payload\":{\"note\":\"" + note + "\"},\"queue\":\"" + queue
        + "\"}";
  }

  static Response put(String path, String json, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(api.uri(path))
        .timeout(Duration.ofSeconds(60))
        .header("Content-Type", "application/json")
        .PUT(HttpRequest.BodyPublishers.ofString(json));
    if (headers.length > 0) {
      b.headers(headers);
    }
    return api.send(b.build());
  }

  static Response delete(String path, String... headers) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(api.uri(path)).timeout(Duration.ofSeconds(60)).DELETE();
    if (headers.length > 0) {
      b.headers(headers);
    }
    return api.send(b.build());
  }

  /** {@code response} conforms to the document for {@code method specPath}. */
  static Response conforming(String method, String specPath, Response response) {
    assertThat(spec.problems(method, specPath, response)).isEmpty();
    return response;
  }

  static JsonNode queueInOverview(String name) {
    Response r = conforming("GET", "/queues", api.get("/queues"));
    for (JsonNode q : r.json().path("queues")) {
      if (q.path("name").asString().equals(name)) {
        return q;
      }
    }
    throw new AssertionError("queue " + name + " is not in GET /queues: " + r.body());
  }

  @Test
  void putStoresTheLimitsThatGetQueuesAndGetLimitsShowUntilDeleteRemovesThem() {
    String q = queue("round");
    assertThat(api.post("/jobs", job("n", q)).status()).isEqualTo(201);
    String body = """
        {"global_concurrency": 10, "rate": {"limit": 100, "period": "1m"},
         "partition_by": "input.note", "partition_concurrency": 2,
         "partition_rate": {"limit": 5, "period": "1s", "burst": 3}}""";

    Response put =
        conforming("PUT", "/queues/{name}/limits", put("/queues/" + q + "/limits", body));

    assertThat(put.status()).isEqualTo(200);
    JsonNode l = put.json();
    assertThat(l.path("global_concurrency").asInt()).isEqualTo(10);
    assertThat(l.path("rate").toString())
        .as("burst left out: the default, 200 ms of 100 a minute, at least 2")
        .isEqualTo("{\"limit\":100,\"period\":\"1m\",\"burst\":2}");
    assertThat(l.path("partition_by").asString()).isEqualTo("input.note");
    assertThat(l.path("partition_concurrency").asInt()).isEqualTo(2);
    assertThat(l.path("partition_rate").toString())
        .isEqualTo("{\"limit\":5,\"period\":\"1s\",\"burst\":3}");
    assertThat(l.path("source").asString()).isEqualTo("api");
    assertThat(l.path("updated_at").asString()).endsWith("Z");
    assertThat(l.path("usage").path("waiting").asLong()).isEqualTo(1);
    assertThat(l.path("usage").path("partitions").get(0).path("partition").asString())
        .isEqualTo("n");
    assertThat(api.client.limits(q))
        .contains(QueueLimits.builder()
            .globalConcurrency(10)
            .rate(100, Duration.ofMinutes(1))
            .partitionBy("input.note")
            .partitionConcurrency(2)
            .partitionRate(5, Duration.ofSeconds(1), 3)
            .build());

    Response get = conforming("GET", "/queues/{name}/limits", api.get("/queues/" + q + "/limits"));
    assertThat(get.status()).isEqualTo(200);
    assertThat(get.json().path("global_concurrency").asInt()).isEqualTo(10);
    JsonNode inOverview = queueInOverview(q).path("limits");
    assertThat(inOverview.path("global_concurrency").asInt()).isEqualTo(10);
    assertThat(inOverview.path("partition_rate").path("burst").asInt()).isEqualTo(3);

    // A PUT replaces every limit: what it leaves out is no longer limited.
    Response replaced = conforming(
        "PUT",
        "/queues/{name}/limits",
        put("/queues/" + q + "/limits", "{\"global_concurrency\": 3}"));
    assertThat(replaced.status()).isEqualTo(200);
    assertThat(replaced.json().path("rate").isNull()).isTrue();
    assertThat(replaced.json().path("partition_by").isNull()).isTrue();
    assertThat(replaced.json().path("usage").path("partitions").isEmpty()).isTrue();
    assertThat(queueInOverview(q).path("limits").path("global_concurrency").asInt())
        .as("GET /queues shows the change at once")
        .isEqualTo(3);

    Response deleted =
        conforming("DELETE", "/queues/{name}/limits", delete("/queues/" + q + "/limits"));
    assertThat(deleted.status()).isEqualTo(204);
    assertThat(deleted.body()).isEmpty();
    assertThat(api.client.limits(q)).isEmpty();
    assertThat(queueInOverview(q).path("limits").isNull()).isTrue();
    Response gone = conforming("GET", "/queues/{name}/limits", api.get("/queues/" + q + "/limits"));
    assertThat(gone.status()).isEqualTo(404);
    assertThat(gone.json().path("detail").asString()).contains("has no limits");
    assertThat(delete("/queues/" + q + "/limits").status())
        .as("removing limits that are gone is no error")
        .isEqualTo(204);
  }

  @Test
  void aQueueKnownOnlyByAPauseOrALiveWorkerCanBeLimitedAndShowsInGetQueuesWithoutJobs() {
    String paused = queue("paused");
    assertThat(api.post("/queues/" + paused + "/pause", null).status()).isEqualTo(200);
    assertThat(api.post("/queues/" + paused + "/resume", null).status()).isEqualTo(200);
    assertThat(
            put("/queues/" + paused + "/limits", "{\"global_concurrency\": 2}").status())
        .isEqualTo(200);
    JsonNode shown = queueInOverview(paused);
    assertThat(shown.path("counts").path("queued").asLong()).isZero();
    assertThat(shown.path("limits").path("global_concurrency").asInt()).isEqualTo(2);

    String served = queue("served");
    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .register(TestTypes.TASK, (ctx, t) -> null)
        .queue(served, 1)
        .build()
        .start()) {
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> api.client.workers().stream()
              .anyMatch(w -> w.alive() && w.queues().containsKey(served)));
      Response r = conforming(
          "PUT",
          "/queues/{name}/limits",
          put("/queues/" + served + "/limits", "{\"rate\": {\"limit\": 5, \"period\": \"1s\"}}"));
      assertThat(r.status()).isEqualTo(200);
      assertThat(
              queueInOverview(served).path("limits").path("rate").path("limit").asInt())
          .isEqualTo(5);
    }
  }

  @Test
  void usageShowsRunningJobsAndWhyTheOthersWait() {
    String busy = queue("busy");
    String slow = queue("slow");
    CountDownLatch release = new CountDownLatch(1);
    // Each job is its own partition (partition_by input.note), one at a time each.
    assertThat(api.post("/queues/" + busy + "/pause", null).status()).isEqualTo(200);
    assertThat(put(
                "/queues/" + busy + "/limits",
                "{\"global_concurrency\": 3, \"partition_by\": \"input.note\","
                    + " \"partition_concurrency\": 1}")
            .status())
        .isEqualTo(200);
    for (String note : List.of("block-a", "block-a", "block-b")) {
      assertThat(api.post("/jobs", job(note, busy)).status()).isEqualTo(201);
    }
    // One start a day: the second job waits for the rate.
    assertThat(api.post("/jobs", job("quick", slow)).status()).isEqualTo(201);
    assertThat(api.post("/jobs", job("quick", slow)).status()).isEqualTo(201);
    assertThat(put(
                "/queues/" + slow + "/limits",
                "{\"rate\": {\"limit\": 1, \"period\": \"24h\", \"burst\": 1}}")
            .status())
        .isEqualTo(200);
    assertThat(api.post("/queues/" + busy + "/resume", null).status()).isEqualTo(200);

    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .register(TestTypes.TASK, (ctx, t) -> {
          if (t.note().startsWith("block")) {
            release.await();
          }
          return null;
        })
        .queue(busy, 4)
        .queue(slow, 4)
        .pollInterval(Duration.ofMillis(100))
        .build()
        .start()) {
      try {
        assertUsage(busy, slow);
      } finally {
        release.countDown();
      }
    }
  }

  private static void assertUsage(String busy, String slow) {
    {
      // block-a and block-b run; the second block-a waits for its partition, and every partition
      // with waiting jobs is at its limit while the queue is below its own.
      JsonNode usage = await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () -> queueInOverview(busy).path("limits").path("usage"),
              u -> u.path("running").asLong() == 2 && u.path("waiting").asLong() == 1);
      assertThat(usage.path("waiting_for").asString()).isEqualTo("partitions_busy");
      assertThat(usage.path("next_start").isNull()).isTrue();
      Map<String, JsonNode> partitions = new java.util.HashMap<>();
      usage.path("partitions").forEach(p -> partitions.put(p.path("partition").asString(), p));
      assertThat(partitions.get("block-a").path("running").asLong()).isEqualTo(1);
      assertThat(partitions.get("block-a").path("waiting").asLong()).isEqualTo(1);
      assertThat(partitions.get("block-a").path("waiting_for").asString())
          .isEqualTo("partition_busy");
      assertThat(partitions.get("block-b").path("running").asLong()).isEqualTo(1);
      assertThat(partitions.get("block-b").path("waiting_for").isNull()).isTrue();

      // Lowered to what runs now: the queue itself is the limit.
      assertThat(put(
                  "/queues/" + busy + "/limits",
                  "{\"global_concurrency\": 2, \"partition_by\": \"input.note\","
                      + " \"partition_concurrency\": 1}")
              .status())
          .isEqualTo(200);
      assertThat(queueInOverview(busy)
              .path("limits")
              .path("usage")
              .path("waiting_for")
              .asString())
          .isEqualTo("at_global_limit");

      JsonNode slowUsage = await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () -> conforming(
                      "GET", "/queues/{name}/limits", api.get("/queues/" + slow + "/limits"))
                  .json()
                  .path("usage"),
              u -> u.path("waiting").asLong() == 1 && u.path("waiting_for").isString());
      assertThat(slowUsage.path("waiting_for").asString()).isEqualTo("rate_limited");
      assertThat(java.time.Instant.parse(slowUsage.path("next_start").asString()))
          .isAfter(java.time.Instant.now().plus(Duration.ofHours(23)));
    }
  }

  /**
   * One refused request.
   *
   * @param field the field the problem must name, or null
   */
  record Bad(String name, String method, String path, String body, int status, String field) {
    @Override
    public String toString() {
      return name;
    }
  }

  static Bad bad(String name, String body, int status, String field) {
    return new Bad(name, "PUT", "/queues/" + known + "/limits", body, status, field);
  }

  static Stream<Bad> refused() {
    String rate = "{\"limit\": 10, \"period\": \"1s\"}";
    return Stream.of(
        bad("global_concurrency zero", "{\"global_concurrency\": 0}", 422, "global_concurrency"),
        bad(
            "global_concurrency negative",
            "{\"global_concurrency\": -5}",
            422,
            "global_concurrency"),
        bad(
            "global_concurrency over 100000",
            "{\"global_concurrency\": 100001}",
            422,
            "global_concurrency"),
        bad(
            "global_concurrency beyond any integer",
            "{\"global_concurrency\": 99999999999999999999999}",
            422,
            "global_concurrency"),
        bad(
            "global_concurrency a string",
            "{\"global_concurrency\": \"10\"}",
            400,
            "global_concurrency"),
        bad(
            "global_concurrency fractional",
            "{\"global_concurrency\": 1.5}",
            400,
            "global_concurrency"),
        bad("rate a string", "{\"rate\": \"100/m\"}", 400, "rate"),
        bad("rate limit zero", "{\"rate\": {\"limit\": 0, \"period\": \"1s\"}}", 422, "rate.limit"),
        bad(
            "rate limit over a million",
            "{\"rate\": {\"limit\": 1000001, \"period\": \"1s\"}}",
            422,
            "rate.limit"),
        bad("rate without limit", "{\"rate\": {\"period\": \"1s\"}}", 422, "rate.limit"),
        bad("rate without period", "{\"rate\": {\"limit\": 10}}", 422, "rate.period"),
        bad(
            "rate period zero",
            "{\"rate\": {\"limit\": 10, \"period\": \"0s\"}}",
            422,
            "rate.period"),
        bad(
            "rate period over a day",
            "{\"rate\": {\"limit\": 10, \"period\": \"25h\"}}",
            422,
            "rate.period"),
        bad(
            "rate period not a duration",
            "{\"rate\": {\"limit\": 10, \"period\": \"soon\"}}",
            422,
            "rate.period"),
        bad(
            "rate period a number",
            "{\"rate\": {\"limit\": 10, \"period\": 1000}}",
            400,
            "rate.period"),
        bad(
            "rate period below a millisecond",
            "{\"rate\": {\"limit\": 10, \"period\": \"PT0.0005S\"}}",
            422,
            "rate.period"),
        bad(
            "rate burst zero",
            "{\"rate\": {\"limit\": 10, \"period\": \"1s\", \"burst\": 0}}",
            422,
            "rate.burst"),
        bad(
            "rate with an unknown member",
            "{\"rate\": {\"limit\": 10, \"period\": \"1s\", \"per\": 1}}",
            400,
            "rate.per"),
        bad("partition_by not a rule", "{\"partition_by\": \"host\"}", 422, "partition_by"),
        bad(
            "partition_by input without a field",
            "{\"partition_by\": \"input.\"}",
            422,
            "partition_by"),
        bad("partition_by a number", "{\"partition_by\": 5}", 400, "partition_by"),
        bad(
            "partition_concurrency without partition_by",
            "{\"partition_concurrency\": 2}",
            422,
            "partition_by"),
        bad(
            "partition_rate without partition_by",
            "{\"partition_rate\": " + rate + "}",
            422,
            "partition_by"),
        bad(
            "partition_concurrency zero",
            "{\"partition_by\": \"type\", \"partition_concurrency\": 0}",
            422,
            "partition_concurrency"),
        bad(
            "partition_rate period over a day",
            "{\"partition_by\": \"type\", \"partition_rate\": {\"limit\": 1, \"period\": \"2d\"}}",
            422,
            "partition_rate.period"),
        bad("unknown field", "{\"global_concurrency\": 2, \"max_running\": 2}", 400, "max_running"),
        bad("empty object", "{}", 422, "body"),
        bad("every limit null", "{\"global_concurrency\": null, \"rate\": null}", 422, "body"),
        bad("body an array", "[]", 400, "body"),
        bad("malformed JSON", "{\"global_concurrency\": ", 400, null),
        new Bad(
            "bad queue name",
            "PUT",
            "/queues/bad%20queue/limits",
            "{\"global_concurrency\": 1}",
            400,
            "name"),
        new Bad(
            "queue name too long",
            "PUT",
            "/queues/" + "q".repeat(256) + "/limits",
            "{\"global_concurrency\": 1}",
            400,
            "name"),
        new Bad(
            "queue nothing knows",
            "PUT",
            "/queues/nowhere-" + UUID.randomUUID() + "/limits",
            "{\"global_concurrency\": 1}",
            404,
            null),
        new Bad(
            "get limits of a queue without any",
            "GET",
            "/queues/" + known + "/limits",
            null,
            404,
            null),
        new Bad(
            "get limits with a bad queue name",
            "GET",
            "/queues/bad%20queue/limits",
            null,
            400,
            "name"),
        new Bad(
            "delete limits of a queue nothing knows",
            "DELETE",
            "/queues/nowhere-" + UUID.randomUUID() + "/limits",
            null,
            404,
            null));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("refused")
  void aRefusedRequestIsAProblemNamingTheFieldAndStoresNothing(Bad bad) {
    Response r = switch (bad.method()) {
      case "PUT" -> put(bad.path(), bad.body());
      case "DELETE" -> delete(bad.path());
      default -> api.get(bad.path());
    };

    assertThat(r.status()).as(r.body()).isEqualTo(bad.status());
    assertThat(r.isProblem()).as(r.contentType()).isTrue();
    assertThat(spec.problems(bad.method(), "/queues/{name}/limits", r)).isEmpty();
    if (bad.field() != null) {
      List<String> fields = new ArrayList<>();
      r.json().path("errors").forEach(e -> fields.add(e.path("field").asString()));
      assertThat(fields).as(r.body()).contains(bad.field());
    }
    assertThat(api.client.limitsStatus())
        .noneMatch(s -> s.queue().equals(known)
            || s.queue().startsWith("nowhere-")
            || s.queue().startsWith("bad"));
  }

  @Test
  void problemsSayWhatIsAllowed() {
    JsonNode empty = put("/queues/" + known + "/limits", "{}").json();
    assertThat(empty.path("detail").asString())
        .contains("at least one limit", "DELETE /queues/" + known + "/limits");
    JsonNode zero =
        put("/queues/" + known + "/limits", "{\"global_concurrency\": 0}").json();
    assertThat(zero.path("detail").asString()).contains("between 1 and 100000, was 0");
    JsonNode period = put(
            "/queues/" + known + "/limits", "{\"rate\": {\"limit\": 1, \"period\": \"25h\"}}")
        .json();
    assertThat(period.path("detail").asString()).contains("1ms to 24h", "25h");
    JsonNode rule =
        put("/queues/" + known + "/limits", "{\"partition_by\": \"host\"}").json();
    assertThat(rule.path("detail").asString()).contains("'type', 'partition' or 'input.<field>'");
    JsonNode missing =
        put("/queues/" + known + "/limits", "{\"partition_concurrency\": 1}").json();
    assertThat(missing.path("detail").asString()).contains("partition_by: is required");
  }

  @Test
  void theDocumentedRequestSchemaAndTheServerAgreeOnTheShapeOfALimitsBody() {
    String q = queue("shape");
    assertThat(api.post("/jobs", job("n", q)).status()).isEqualTo(201);
    // Nulls mean "left out", in the document as in the server.
    String accepted = "{\"global_concurrency\": 2, \"rate\": {\"limit\": 5, \"period\": \"1s\","
        + " \"burst\": null}, \"partition_by\": null, \"partition_concurrency\": null,"
        + " \"partition_rate\": null}";
    assertThat(spec.requestProblems(
            "PUT", "/queues/{name}/limits", ApiTestSupport.JSON.readTree(accepted)))
        .isEmpty();
    assertThat(put("/queues/" + q + "/limits", accepted).status()).isEqualTo(200);
    // What the document's shape forbids, the server refuses with 400.
    for (String shape : List.of(
        "{\"global_concurrency\": \"2\"}",
        "{\"rate\": {\"limit\": 5, \"period\": \"1s\", \"per\": 1}}",
        "{\"rate\": {\"limit\": 5, \"period\": 1000}}",
        "{\"max_running\": 1}")) {
      assertThat(spec.requestProblems(
              "PUT", "/queues/{name}/limits", ApiTestSupport.JSON.readTree(shape)))
          .as(shape)
          .isNotEmpty();
      assertThat(put("/queues/" + q + "/limits", shape).status()).as(shape).isEqualTo(400);
    }
  }

  @Test
  void aRefusedPutLeavesTheLimitsThatWereThere() {
    String q = queue("kept");
    assertThat(api.post("/jobs", job("n", q)).status()).isEqualTo(201);
    assertThat(put("/queues/" + q + "/limits", "{\"global_concurrency\": 4}").status())
        .isEqualTo(200);

    Response r = put(
        "/queues/" + q + "/limits",
        "{\"global_concurrency\": 1, \"rate\": {\"limit\": 0, \"period\": \"1s\"}}");

    assertThat(r.status()).isEqualTo(422);
    assertThat(api.client.limits(q))
        .contains(QueueLimits.builder().globalConcurrency(4).build());
  }

  @Test
  void aLimitsWriteFromAForeignPageIsRefusedAndStoresNothing() {
    String q = queue("guarded");
    assertThat(api.post("/jobs", job("n", q)).status()).isEqualTo(201);

    Response put = put(
        "/queues/" + q + "/limits", "{\"global_concurrency\": 1}", "Origin", "http://evil.example");
    assertThat(put.status()).isEqualTo(403);
    assertThat(put.json().path("type").asString()).endsWith("cross-site-request");
    assertThat(api.client.limits(q)).isEmpty();

    api.client.setLimits(q, QueueLimits.builder().globalConcurrency(2).build());
    Response delete =
        delete("/queues/" + q + "/limits", "Sec-Fetch-Site", "cross-site", "Origin", "null");
    assertThat(delete.status()).isEqualTo(403);
    assertThat(api.client.limits(q)).isPresent();
  }

  @Test
  void aReadTokenMayReadLimitsButNotSetOrRemoveThem() {
    String admin = "admin-token-0123456789";
    String read = "read-token-0123456789";
    try (ApiTestSupport tokens = ApiTestSupport.start(
        b -> b.tokens(Map.of(admin, ApiServer.Scope.ADMIN, read, ApiServer.Scope.READ)))) {
      String q = queue("tokens");
      tokens.client.pauseQueue(q);
      HttpRequest.Builder b = HttpRequest.newBuilder(tokens.uri("/queues/" + q + "/limits"))
          .header("Content-Type", "application/json");
      String body = "{\"global_concurrency\": 1}";

      assertThat(tokens
              .send(b.copy().PUT(HttpRequest.BodyPublishers.ofString(body)).build())
              .status())
          .isEqualTo(401);
      assertThat(tokens
              .send(b.copy()
                  .header("Authorization", "Bearer " + read)
                  .PUT(HttpRequest.BodyPublishers.ofString(body))
                  .build())
              .status())
          .isEqualTo(403);
      assertThat(tokens.client.limits(q)).isEmpty();
      assertThat(tokens
              .send(b.copy()
                  .header("Authorization", "Bearer " + admin)
                  .PUT(HttpRequest.BodyPublishers.ofString(body))
                  .build())
              .status())
          .isEqualTo(200);
      assertThat(tokens
              .get("/queues/" + q + "/limits", "Authorization", "Bearer " + read)
              .status())
          .isEqualTo(200);
      assertThat(tokens
              .send(b.copy().header("Authorization", "Bearer " + read).DELETE().build())
              .status())
          .isEqualTo(403);
      assertThat(tokens.client.limits(q)).isPresent();
    }
  }

  @Test
  void postJobsWithAPartitionStoresItAsTheJobsLimitKey() {
    String q = queue("keyed");
    Response created = conforming(
        "POST",
        "/jobs",
        api.post(
            "/jobs",
            "{\"type\":\"task\",\"payload\":{\"note\":\"n\"},\"queue\":\"" + q
                + "\",\"partition\":\"example.com\"}"));
    assertThat(created.status()).isEqualTo(201);
    Response dispatched = conforming(
        "POST",
        "/jobs/{type}/dispatch",
        api.post(
            "/jobs/task/dispatch",
            "{\"args\":{\"note\":\"n\"},\"queue\":\"" + q + "\",\"partition\":\"tenant-7\"}"));
    assertThat(dispatched.status()).isEqualTo(201);

    assertThat(api.db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE queue = '" + q
            + "' AND limit_key = 'example.com' AND id = '"
            + created.json().path("id").asString() + "'"))
        .isEqualTo(1);
    assertThat(api.db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE queue = '" + q
            + "' AND limit_key = 'tenant-7'"))
        .isEqualTo(1);

    List<Long> before = api.rowCounts();
    Response tooLong = api.post(
        "/jobs",
        "{\"type\":\"task\",\"payload\":{\"note\":\"n\"},\"queue\":\"" + q + "\",\"partition\":\""
            + "p".repeat(256) + "\"}");
    assertThat(tooLong.status()).isEqualTo(422);
    assertThat(tooLong.json().path("errors").get(0).path("field").asString())
        .isEqualTo("partition");
    assertThat(tooLong.json().path("detail").asString()).contains("at most 255 characters");
    Response number =
        api.post("/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"n\"},\"partition\":7}");
    assertThat(number.status()).isEqualTo(400);
    assertThat(number.json().path("errors").get(0).path("field").asString()).isEqualTo("partition");
    assertThat(api.rowCounts()).isEqualTo(before);
  }

  private static String posted(String note, String queue) {
    Response r = api.post("/jobs", job(note, queue));
    assertThat(r.status()).isEqualTo(201);
    return r.json().path("id").asString();
  }

  private static JsonNode jobDetail(String id) {
    Response r = conforming("GET", "/jobs/{id}", api.get("/jobs/" + id));
    assertThat(r.status()).isEqualTo(200);
    return r.json();
  }

  @Test
  void getJobShowsItsPartitionAndWhyItWaits() {
    String busy = queue("why-busy");
    String slow = queue("why-slow");
    String free = queue("why-free");
    CountDownLatch release = new CountDownLatch(1);
    assertThat(api.post("/queues/" + busy + "/pause", null).status()).isEqualTo(200);
    assertThat(put(
                "/queues/" + busy + "/limits",
                "{\"partition_by\": \"input.note\", \"partition_concurrency\": 1}")
            .status())
        .isEqualTo(200);
    String first = posted("block-a", busy);
    String second = posted("block-a", busy);
    String other = posted("block-b", busy);
    // One start a day: the second job waits for the queue's rate.
    String slowFirst = posted("quick", slow);
    String slowSecond = posted("quick", slow);
    assertThat(put("/queues/" + slow + "/limits", "{\"rate\": {\"limit\": 1, \"period\": \"24h\"}}")
            .status())
        .isEqualTo(200);
    String unlimited = posted("quick", free);
    assertThat(api.post("/queues/" + busy + "/resume", null).status()).isEqualTo(200);

    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .register(TestTypes.TASK, (ctx, t) -> {
          if (t.note().startsWith("block")) {
            release.await();
          }
          return null;
        })
        .queue(busy, 4)
        .queue(slow, 4)
        .queue(free, 4)
        .pollInterval(Duration.ofMillis(100))
        .build()
        .start()) {
      try {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> jobDetail(first).path("state").asString().equals("running")
                && jobDetail(other).path("state").asString().equals("running")
                && !jobDetail(slowFirst).path("state").asString().equals("queued")
                && jobDetail(unlimited).path("state").asString().equals("succeeded"));

        JsonNode waiting = jobDetail(second);
        assertThat(waiting.path("state").asString()).isEqualTo("queued");
        assertThat(waiting.path("partition").asString()).isEqualTo("block-a");
        assertThat(waiting.path("waiting_for").asString()).isEqualTo("partition_busy");

        JsonNode running = jobDetail(first);
        assertThat(running.path("partition").asString()).isEqualTo("block-a");
        assertThat(running.path("waiting_for").isNull())
            .as("running, not waiting")
            .isTrue();

        JsonNode rated = jobDetail(slowSecond);
        assertThat(rated.path("state").asString()).isEqualTo("queued");
        assertThat(rated.path("partition").asString()).as("no partition rule").isEmpty();
        assertThat(rated.path("waiting_for").asString()).isEqualTo("rate_limited");

        JsonNode done = jobDetail(unlimited);
        assertThat(done.path("partition").isNull()).isTrue();
        assertThat(done.path("waiting_for").isNull()).isTrue();

        Response list = conforming("GET", "/jobs", api.get("/jobs?queue=" + busy));
        list.json().path("jobs").forEach(j -> {
          assertThat(j.path("partition").isNull())
              .as("lists leave the limits out")
              .isTrue();
          assertThat(j.path("waiting_for").isNull()).isTrue();
        });
      } finally {
        release.countDown();
      }
    }
  }
}
