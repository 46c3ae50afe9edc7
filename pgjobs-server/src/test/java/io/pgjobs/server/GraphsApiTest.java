package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.server.ApiTestSupport.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;

/**
 * {@code POST /graphs} and {@code GET /jobs/{id}/parents} (issue 30) against a real server and database:
 * a graph goes in whole with its jobs blocked, a parent's cancellation cancels what waits on it, and
 * every refused graph is a problem naming the job by its place, with nothing stored. Responses are
 * checked against the OpenAPI document.
 */
class GraphsApiTest {
  static ApiTestSupport api;
  static SpecValidator spec;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start();
    spec = new SpecValidator(api.get("/openapi.json").json());
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  static Response conforming(String method, String specPath, Response response) {
    assertThat(spec.problems(method, specPath, response)).as(response.body()).isEmpty();
    return response;
  }

  static String queue() {
    return "graphs-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void aGraphGoesInWholeItsWaitingJobsBlockedAndItsParentsListed() {
    String q = queue();
    Response before = api.post(
        "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"earlier\"},\"queue\":\"" + q + "\"}");
    String earlier = before.json().path("id").asString();
    Response r = conforming("POST", "/graphs", api.post("/graphs", """
        {"jobs": [
          {"name": "a", "type": "task", "payload": {"note": "a"}, "queue": "%1$s"},
          {"name": "b", "type": "task", "payload": {"note": "b"}, "queue": "%1$s", "after": ["a"]},
          {"name": "c", "type": "send_email", "payload": {"to": "ada@example.com", "subject": "done"},
           "queue": "%1$s", "priority": "high",
           "after": [{"name": "b", "on_failure": "run"}, {"job": "%2$s"}]}
        ]}""".formatted(q, earlier)));
    assertThat(r.status()).as(r.body()).isEqualTo(201);
    JsonNode ids = r.json().path("jobs");
    assertThat(ids.propertyNames()).containsExactly("a", "b", "c");

    Response a =
        conforming("GET", "/jobs/{id}", api.get("/jobs/" + ids.path("a").asString()));
    assertThat(a.json().path("state").asString()).isEqualTo("queued");
    Response c =
        conforming("GET", "/jobs/{id}", api.get("/jobs/" + ids.path("c").asString()));
    assertThat(c.json().path("state").asString()).isEqualTo("blocked");
    assertThat(c.json().path("priority").asInt()).isEqualTo(75);

    Response parents = conforming(
        "GET", "/jobs/{id}/parents", api.get("/jobs/" + ids.path("c").asString() + "/parents"));
    assertThat(parents.status()).isEqualTo(200);
    List<String> seen = new ArrayList<>();
    parents
        .json()
        .path("parents")
        .forEach(p -> seen.add(p.path("id").asString() + " "
            + p.path("on_failure").asString() + " " + p.path("state").isNull()));
    assertThat(seen)
        .containsExactlyInAnyOrder(
            ids.path("b").asString() + " run true", earlier + " cancel true");

    // The queue's counts show them (GET /queues serves its overview from a short cache on a loaded
    // machine: the new queue may take a moment to be listed).
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
      Response queues = conforming("GET", "/queues", api.get("/queues"));
      long blocked = -1;
      for (JsonNode queue : queues.json().path("queues")) {
        if (queue.path("name").asString().equals(q)) {
          blocked = queue.path("counts").path("blocked").asLong();
        }
      }
      assertThat(blocked).as(queues.body()).isEqualTo(2);
    });
    // And the metrics (refreshed at most once a second).
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(10))
        .untilAsserted(() -> assertThat(api.get("/metrics").body())
            .contains("pgjobs_queue_blocked{queue=\"" + q + "\"} 2.0"));
  }

  @Test
  void cancellingAParentOverHttpCancelsWhatWaitsOnItAndTheParentsSayHowItEnded() {
    String q = queue();
    Response r = api.post("/graphs", """
        {"jobs": [
          {"name": "p", "type": "task", "payload": {"note": "p"}, "queue": "%1$s"},
          {"name": "k", "type": "task", "payload": {"note": "k"}, "queue": "%1$s", "after": ["p"]},
          {"name": "g", "type": "task", "payload": {"note": "g"}, "queue": "%1$s", "after": ["k"]}
        ]}""".formatted(q));
    assertThat(r.status()).as(r.body()).isEqualTo(201);
    JsonNode ids = r.json().path("jobs");

    assertThat(api.post("/jobs/" + ids.path("p").asString() + "/cancel", "").status())
        .isEqualTo(200);
    for (String name : List.of("k", "g")) {
      Response job = api.get("/jobs/" + ids.path(name).asString());
      assertThat(job.json().path("state").asString()).as(name).isEqualTo("cancelled");
    }
    Response parents = conforming(
        "GET", "/jobs/{id}/parents", api.get("/jobs/" + ids.path("k").asString() + "/parents"));
    assertThat(parents.json().path("parents").get(0).path("state").asString())
        .isEqualTo("cancelled");
    assertThat(conforming(
                "GET", "/jobs/{id}/parents", api.get("/jobs/" + UUID.randomUUID() + "/parents"))
            .status())
        .isEqualTo(404);
  }

  /** A refused graph: its body, the status, the field the problem must name. */
  record Bad(String name, String body, int status, String field) {
    @Override
    public String toString() {
      return name;
    }
  }

  static Stream<Bad> refused() {
    String task = "\"type\": \"task\", \"payload\": {\"note\": \"n\"}";
    return Stream.of(
        new Bad("jobs missing", "{}", 422, "jobs"),
        new Bad("jobs not an array", "{\"jobs\": {}}", 400, "jobs"),
        new Bad("no job", "{\"jobs\": []}", 422, "jobs"),
        new Bad("a job not an object", "{\"jobs\": [3]}", 400, "jobs[0]"),
        new Bad("no name", "{\"jobs\": [{" + task + "}]}", 422, "jobs[0].name"),
        new Bad(
            "unknown member",
            "{\"jobs\": [{\"name\": \"a\", " + task + ", \"color\": 1}]}",
            400,
            "jobs[0].color"),
        new Bad(
            "duplicate name",
            "{\"jobs\": [{\"name\": \"a\", " + task + "}, {\"name\": \"a\", " + task + "}]}",
            422,
            "jobs[1]"),
        new Bad(
            "waits for a later job",
            "{\"jobs\": [{\"name\": \"a\", " + task + ", \"after\": [\"b\"]}, {\"name\": \"b\", "
                + task + "}]}",
            422,
            "jobs[0].after"),
        new Bad(
            "bad policy",
            "{\"jobs\": [{\"name\": \"a\", " + task + "}, {\"name\": \"b\", " + task
                + ", \"after\": [{\"name\": \"a\", \"on_failure\": \"retry\"}]}]}",
            422,
            "jobs[1].after[0].on_failure"),
        new Bad(
            "name and job",
            "{\"jobs\": [{\"name\": \"a\", " + task + "}, {\"name\": \"b\", " + task
                + ", \"after\": [{\"name\": \"a\", \"job\": \"" + UUID.randomUUID() + "\"}]}]}",
            422,
            "jobs[1].after[0]"),
        new Bad(
            "not a uuid",
            "{\"jobs\": [{\"name\": \"a\", " + task + ", \"after\": [{\"job\": \"42\"}]}]}",
            422,
            "jobs[0].after[0].job"),
        new Bad(
            "unknown parent id",
            "{\"jobs\": [{\"name\": \"first\", " + task + "}, {\"name\": \"a\", " + task
                + ", \"after\": [{\"job\": \"" + UUID.randomUUID() + "\"}]}]}",
            422,
            "jobs[1].after"),
        new Bad(
            "payload the type refuses",
            "{\"jobs\": [{\"name\": \"ok\", " + task
                + "}, {\"name\": \"mail\", \"type\": \"send_email\", \"payload\": {\"to\": \"x\"}}]}",
            422,
            "jobs[1].payload.subject"),
        new Bad(
            "unique",
            "{\"jobs\": [{\"name\": \"a\", " + task + ", \"unique\": {}}]}",
            400,
            "jobs[0].unique"),
        new Bad(
            "name with U+0000",
            "{\"jobs\": [{\"name\": \"a\\u0000b\", " + task + "}]}",
            422,
            "jobs[0].name"),
        new Bad(
            "name too long",
            "{\"jobs\": [{\"name\": \"" + "n".repeat(256) + "\", " + task + "}]}",
            422,
            "jobs[0].name"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("refused")
  void aRefusedGraphIsAProblemNamingTheJobsPlaceAndStoresNothing(Bad bad) {
    List<Long> before = api.rowCounts();
    long edges = api.db.queryLong("SELECT count(*) FROM pgjobs.job_dependencies");
    Response r = api.post("/graphs", bad.body());
    assertThat(r.status()).as(r.body()).isEqualTo(bad.status());
    assertThat(r.isProblem()).as(r.contentType()).isTrue();
    conforming("POST", "/graphs", r);
    List<String> fields = new ArrayList<>();
    r.json().path("errors").forEach(e -> fields.add(e.path("field").asString()));
    assertThat(fields).as(r.body()).contains(bad.field());
    assertThat(api.rowCounts()).isEqualTo(before);
    assertThat(api.db.queryLong("SELECT count(*) FROM pgjobs.job_dependencies")).isEqualTo(edges);
  }

  @Test
  void aJobsGraphHoldsEveryJobConnectedToItEitherWayWithItsEdges() {
    String q = queue();
    Response r = api.post("/graphs", """
        {"jobs": [
          {"name": "a", "type": "task", "payload": {"note": "a"}, "queue": "%1$s"},
          {"name": "b", "type": "task", "payload": {"note": "b"}, "queue": "%1$s", "after": ["a"]},
          {"name": "c", "type": "task", "payload": {"note": "c"}, "queue": "%1$s"},
          {"name": "d", "type": "task", "payload": {"note": "d"}, "queue": "%1$s",
           "after": ["b", {"name": "c", "on_failure": "only"}]}
        ]}""".formatted(q));
    assertThat(r.status()).as(r.body()).isEqualTo(422);
    assertThat(r.body()).contains("jobs[3].after").contains("waits only on such dependencies");

    r = api.post("/graphs", """
        {"jobs": [
          {"name": "a", "type": "task", "payload": {"note": "a"}, "queue": "%1$s"},
          {"name": "b", "type": "task", "payload": {"note": "b"}, "queue": "%1$s", "after": ["a"]},
          {"name": "c", "type": "task", "payload": {"note": "c"}, "queue": "%1$s"},
          {"name": "d", "type": "task", "payload": {"note": "d"}, "queue": "%1$s",
           "after": ["b", {"name": "c", "on_failure": "run"}]}
        ]}""".formatted(q));
    assertThat(r.status()).as(r.body()).isEqualTo(201);
    JsonNode ids = r.json().path("jobs");

    // Asked from "c" (a root with one child): the walk goes down to "d", then up to "b" and "a".
    Response graph = conforming(
        "GET", "/jobs/{id}/graph", api.get("/jobs/" + ids.path("c").asString() + "/graph"));
    assertThat(graph.status()).isEqualTo(200);
    List<String> jobs = new ArrayList<>();
    graph.json().path("jobs").forEach(j -> jobs.add(j.path("id").asString()));
    assertThat(jobs.get(0)).isEqualTo(ids.path("c").asString());
    List<String> names = new ArrayList<>();
    graph.json().path("jobs").forEach(j -> names.add(j.path("name").asString()));
    assertThat(names).containsExactlyInAnyOrder("a", "b", "c", "d");
    assertThat(jobs)
        .containsExactlyInAnyOrder(
            ids.path("a").asString(),
            ids.path("b").asString(),
            ids.path("c").asString(),
            ids.path("d").asString());
    List<String> edges = new ArrayList<>();
    graph
        .json()
        .path("edges")
        .forEach(e -> edges.add(e.path("parent").asString() + ">"
            + e.path("child").asString() + " " + e.path("on_failure").asString()));
    assertThat(edges)
        .containsExactlyInAnyOrder(
            ids.path("a").asString() + ">" + ids.path("b").asString() + " cancel",
            ids.path("b").asString() + ">" + ids.path("d").asString() + " cancel",
            ids.path("c").asString() + ">" + ids.path("d").asString() + " run");
    assertThat(graph.json().path("truncated").asBoolean()).isFalse();

    // A job without dependencies is a graph of one; an unknown job is 404.
    Response single = api.post(
        "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"x\"},\"queue\":\"" + q + "\"}");
    Response one = conforming(
        "GET",
        "/jobs/{id}/graph",
        api.get("/jobs/" + single.json().path("id").asString() + "/graph"));
    assertThat(one.json().path("jobs")).hasSize(1);
    assertThat(one.json().path("jobs").get(0).path("name").isNull()).isTrue();
    assertThat(one.json().path("edges")).isEmpty();
    assertThat(
            conforming("GET", "/jobs/{id}/graph", api.get("/jobs/" + UUID.randomUUID() + "/graph"))
                .status())
        .isEqualTo(404);
  }

  @Test
  void aGraphPostedAgainWithItsIdempotencyKeyIsAReplayAndAnotherGraphUnderItIsRefused() {
    String q = queue();
    String body = """
        {"jobs": [
          {"name": "a", "type": "task", "payload": {"note": "a"}, "queue": "%1$s"},
          {"name": "b", "type": "task", "payload": {"note": "b"}, "queue": "%1$s", "after": ["a"]}
        ]}""".formatted(q);
    String key = "graph-" + UUID.randomUUID();
    Response first =
        conforming("POST", "/graphs", api.post("/graphs", body, "Idempotency-Key", key));
    assertThat(first.status()).as(first.body()).isEqualTo(201);
    List<Long> after = api.rowCounts();

    Response replay =
        conforming("POST", "/graphs", api.post("/graphs", body, "Idempotency-Key", key));
    assertThat(replay.status()).as(replay.body()).isEqualTo(200);
    assertThat(replay.header("Idempotent-Replayed")).isEqualTo("true");
    assertThat(replay.json().path("jobs")).isEqualTo(first.json().path("jobs"));
    assertThat(api.rowCounts()).isEqualTo(after);

    Response other = conforming(
        "POST",
        "/graphs",
        api.post(
            "/graphs", body.replace("\"note\": \"b\"", "\"note\": \"c\""), "Idempotency-Key", key));
    assertThat(other.status()).as(other.body()).isEqualTo(422);
    assertThat(other.body()).contains("idempotency-key-reused");
    assertThat(api.rowCounts()).isEqualTo(after);
  }
}
