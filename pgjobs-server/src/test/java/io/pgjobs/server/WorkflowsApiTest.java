package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.worker.JobWorker;
import io.pgjobs.workflow.WorkflowType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Workflow runs over HTTP (issue 30) against a real server, database and worker: start (both paths),
 * read a run with its recorded steps while it waits for a signal, signal it, see it end; refusals.
 * Responses are checked against the OpenAPI document.
 */
class WorkflowsApiTest {
  /** A signal's payload. */
  public record Approval(String by) {}

  /** The server knows type "task" (TestTypes); here its jobs are the runs of a workflow of that name. */
  static final WorkflowType<TestTypes.Task> APPROVAL =
      WorkflowType.of("task", TestTypes.Task.class);

  static ApiTestSupport api;
  static SpecValidator spec;
  static JobWorker worker;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start();
    spec = new SpecValidator(api.get("/openapi.json").json());
    worker = JobWorker.builder(api.db.dataSource())
        .shutdownGrace(Duration.ofSeconds(2))
        .workflow(APPROVAL, (ctx, task) -> {
          ctx.step("prepare", String.class, () -> "prepared " + task.note())
              .compensate(prepared -> {})
              .run();
          Approval a = ctx.awaitSignal("approved", Approval.class, Duration.ofMinutes(5));
          return Map.of("approved_by", a.by());
        })
        .build()
        .start();
  }

  @AfterAll
  static void stop() {
    try {
      worker.close();
    } finally {
      api.close();
    }
  }

  static Response conforming(String method, String specPath, Response response) {
    assertThat(spec.problems(method, specPath, response)).as(response.body()).isEmpty();
    return response;
  }

  private static List<String> steps(JsonNode run) {
    List<String> out = new ArrayList<>();
    run.path("steps")
        .forEach(s -> out.add(s.path("name").asString() + " " + s.path("state").asString()));
    return out;
  }

  @Test
  void aRunStartedOverHttpWaitsForItsSignalShowsItsStepsAndEndsWhenSignalled() {
    Response started = conforming(
        "POST",
        "/workflows/{name}/start",
        api.post("/workflows/task/start", "{\"input\": {\"note\": \"order 7\"}}"));
    assertThat(started.status()).as(started.body()).isEqualTo(201);
    String id = started.json().path("id").asString();
    assertThat(started.header("Location")).isEqualTo("/workflows/" + id);
    assertThat(started.json().path("workflow").asString()).isEqualTo("task");

    // Waiting for its signal: the step recorded, its job asleep.
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      JsonNode run =
          conforming("GET", "/workflows/{id}", api.get("/workflows/" + id)).json();
      assertThat(steps(run)).containsExactly("prepare done", "signal-deadline:approved done");
      assertThat(run.path("state").asString()).isEqualTo("queued");
    });

    Response signalled = conforming(
        "POST",
        "/workflows/{id}/signals/{signal}",
        api.post("/workflows/" + id + "/signals/approved", "{\"payload\": {\"by\": \"ada\"}}"));
    assertThat(signalled.status()).as(signalled.body()).isEqualTo(202);
    assertThat(signalled.json().path("stored").asBoolean()).isTrue();

    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      JsonNode run =
          conforming("GET", "/workflows/{id}", api.get("/workflows/" + id)).json();
      assertThat(run.path("state").asString()).isEqualTo("succeeded");
      assertThat(run.path("output").path("approved_by").asString()).isEqualTo("ada");
      assertThat(steps(run))
          .containsExactly("prepare done", "signal-deadline:approved done", "signal:approved done");
      assertThat(run.path("steps").get(0).path("result").asString()).isEqualTo("prepared order 7");
    });

    Response late = conforming(
        "POST",
        "/workflows/{id}/signals/{signal}",
        api.post("/workflows/" + id + "/signals/approved", "{\"payload\": {\"by\": \"bob\"}}"));
    assertThat(late.status()).as(late.body()).isEqualTo(409);
  }

  @Test
  void theSeedsStartPathStartsARunAndBadRequestsAreRefused() {
    Response seed = conforming(
        "POST",
        "/_api/workflows/{name}/start",
        api.post(
            "/_api/workflows/task/start",
            "{\"input\": {\"note\": \"seed\"}, \"priority\": \"high\"}"));
    assertThat(seed.status()).as(seed.body()).isEqualTo(201);

    // A name of pgjobs' own (its cancel marker) is not a signal a client may send.
    Response reserved = conforming(
        "POST",
        "/workflows/{id}/signals/{signal}",
        api.post(
            "/workflows/" + seed.json().path("id").asString() + "/signals/(cancel)",
            "{\"payload\": 1}"));
    assertThat(reserved.status()).as(reserved.body()).isEqualTo(422);
    assertThat(reserved.body()).contains("\"signal\"").contains("not starting with '('");

    List<Long> before = api.rowCounts();
    Response unknown = conforming(
        "POST",
        "/workflows/{name}/start",
        api.post("/workflows/no_such_flow/start", "{\"input\": {}}"));
    assertThat(unknown.status()).isEqualTo(422);
    assertThat(unknown.body()).contains("no_such_flow");
    Response noInput = conforming(
        "POST", "/workflows/{name}/start", api.post("/workflows/task/start", "{\"queue\": \"q\"}"));
    assertThat(noInput.status()).isEqualTo(422);
    assertThat(noInput.body()).contains("input");
    Response badInput = conforming(
        "POST",
        "/workflows/{name}/start",
        api.post("/workflows/task/start", "{\"input\": {\"colour\": 1}}"));
    assertThat(badInput.status()).isEqualTo(400);
    assertThat(api.rowCounts()).isEqualTo(before);

    assertThat(conforming("GET", "/workflows/{id}", api.get("/workflows/" + UUID.randomUUID()))
            .status())
        .isEqualTo(404);
    assertThat(conforming(
                "POST",
                "/workflows/{id}/signals/{signal}",
                api.post("/workflows/" + UUID.randomUUID() + "/signals/go", "{\"payload\": 1}"))
            .status())
        .isEqualTo(404);
  }

  @Test
  void aWaitingRunCancelledOverHttpEndsCancelledWithItsStepCompensated() {
    Response started = api.post("/workflows/task/start", "{\"input\": {\"note\": \"to cancel\"}}");
    String id = started.json().path("id").asString();
    await()
        .atMost(Duration.ofSeconds(20))
        .untilAsserted(() -> assertThat(steps(api.get("/workflows/" + id).json()))
            .containsExactly("prepare done", "signal-deadline:approved done"));

    Response cancel = conforming(
        "POST", "/workflows/{id}/cancel", api.post("/workflows/" + id + "/cancel", null));
    assertThat(cancel.status()).as(cancel.body()).isEqualTo(202);
    assertThat(cancel.json().path("cancel_requested").asBoolean()).isTrue();
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
      JsonNode run = api.get("/workflows/" + id).json();
      assertThat(run.path("state").asString()).isEqualTo("cancelled");
      assertThat(steps(run))
          .containsExactly("prepare compensated", "signal-deadline:approved done");
    });
    assertThat(conforming(
                "POST", "/workflows/{id}/cancel", api.post("/workflows/" + id + "/cancel", null))
            .status())
        .isEqualTo(409);
  }
}
