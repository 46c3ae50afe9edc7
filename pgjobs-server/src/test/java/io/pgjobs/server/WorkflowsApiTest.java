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
 * read a run with its recorded steps while it waits for a signal, signal it, see it end; the known
 * workflows ({@code GET /workflow-types}) and their runs ({@code GET /workflows}); refusals. The server's
 * client knows two workflows: {@link #APPROVAL}, which the worker runs, and {@link #DIGEST}, which no
 * worker runs (its runs stay queued). Responses are checked against the OpenAPI document.
 */
class WorkflowsApiTest {
  /** A signal's payload. */
  public record Approval(String by) {}

  /** The server knows type "task" (TestTypes); here its jobs are the runs of a workflow of that name. */
  static final WorkflowType<TestTypes.Task> APPROVAL =
      WorkflowType.of("task", TestTypes.Task.class);

  /** A digest workflow's input. */
  public record Digest(String text, int sentences) {}

  /** A known workflow no worker runs, with settings and an example of its own. */
  static final WorkflowType<Digest> DIGEST = WorkflowType.of("wf_digest", Digest.class)
      .withMaxAttempts(2)
      .withTimeout(Duration.ofMinutes(10))
      .withExample(new Digest("Jobs are rows.", 1))
      .withVersion(3)
      .withDeadline(Duration.ofDays(2));

  static ApiTestSupport api;
  static SpecValidator spec;
  static JobWorker worker;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start(c -> c.knownWorkflows(APPROVAL, DIGEST), b -> b);
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

  @Test
  void workflowTypesListsTheKnownWorkflowsByNameWithVersionSettingsAndInputTemplate() {
    Response types = conforming("GET", "/workflow-types", api.get("/workflow-types"));
    assertThat(types.status()).as(types.body()).isEqualTo(200);
    JsonNode workflows = types.json().path("workflows");
    assertThat(workflows.size()).as(types.body()).isEqualTo(2);

    JsonNode task = workflows.get(0);
    assertThat(task.path("name").asString()).isEqualTo("task");
    assertThat(task.path("version").asInt()).isEqualTo(1);
    assertThat(task.path("queue").asString()).isEqualTo("default");
    assertThat(task.path("max_attempts").asInt()).isEqualTo(3);
    assertThat(task.path("timeout_ms").asLong()).isEqualTo(Duration.ofHours(1).toMillis());
    assertThat(task.has("deadline_ms") && task.path("deadline_ms").isNull())
        .as("no deadline: null")
        .isTrue();
    // Without an example: the input class's template, exactly as /job-types makes it.
    JsonNode taskType = null;
    for (JsonNode t : api.get("/job-types").json().path("types")) {
      if (t.path("name").asString().equals("task")) {
        taskType = t;
      }
    }
    assertThat(taskType).isNotNull();
    assertThat(task.path("input_template")).isEqualTo(taskType.path("payload_template"));
    assertThat(task.path("input_template").toString()).isEqualTo("{\"note\":\"\"}");

    JsonNode digest = workflows.get(1);
    assertThat(digest.path("name").asString()).isEqualTo("wf_digest");
    assertThat(digest.path("version").asInt()).isEqualTo(3);
    assertThat(digest.path("max_attempts").asInt()).isEqualTo(2);
    assertThat(digest.path("timeout_ms").asLong())
        .isEqualTo(Duration.ofMinutes(10).toMillis());
    assertThat(digest.path("deadline_ms").asLong()).isEqualTo(Duration.ofDays(2).toMillis());
    assertThat(digest.path("input_template").toString())
        .as("its example")
        .isEqualTo("{\"text\":\"Jobs are rows.\",\"sentences\":1}");
  }

  private static List<String> runIds(Response page) {
    List<String> ids = new ArrayList<>();
    page.json().path("runs").forEach(r -> ids.add(r.path("id").asString()));
    return ids;
  }

  private static Response list(String query) {
    Response page = conforming("GET", "/workflows", api.get("/workflows" + query));
    assertThat(page.status()).as(page.body()).isEqualTo(200);
    return page;
  }

  @Test
  void runsAreListedNewestFirstByWorkflowAndStateAPageAtATime() {
    List<String> digests = new ArrayList<>();
    for (int i = 1; i <= 3; i++) {
      Response started = api.post(
          "/workflows/wf_digest/start",
          "{\"input\": {\"text\": \"Text " + i + ".\", \"sentences\": 1}}");
      assertThat(started.status()).as(started.body()).isEqualTo(201);
      digests.add(started.json().path("id").asString());
    }
    Response plain = api.post(
        "/jobs",
        "{\"type\": \"send_email\", \"payload\": {\"to\": \"a@b.c\", \"subject\": \"s\"}}");
    assertThat(plain.status()).as(plain.body()).isEqualTo(201);
    String plainId = plain.json().path("id").asString();
    // The middle run cancelled (no worker runs wf_digest: the others stay queued).
    assertThat(api.post("/jobs/" + digests.get(1) + "/cancel", null).status()).isEqualTo(200);

    Response first = list("?workflow=wf_digest&limit=2");
    assertThat(runIds(first)).containsExactly(digests.get(2), digests.get(1));
    JsonNode newest = first.json().path("runs").get(0);
    assertThat(newest.path("workflow").asString()).isEqualTo("wf_digest");
    assertThat(newest.path("state").asString()).isEqualTo("queued");
    assertThat(newest.path("attempts").asInt()).isZero();
    assertThat(newest.path("max_attempts").asInt())
        .as("the workflow's attempts")
        .isEqualTo(2);
    assertThat(newest.path("created_at").asString()).isNotEmpty();
    assertThat(newest.path("finished_at").isNull()).isTrue();
    assertThat(newest.has("steps")).as("steps are on GET /workflows/{id}").isFalse();
    JsonNode cancelled = first.json().path("runs").get(1);
    assertThat(cancelled.path("state").asString()).isEqualTo("cancelled");
    assertThat(cancelled.path("finished_at").asString()).isNotEmpty();
    String cursor = first.json().path("next_cursor").asString();
    assertThat(cursor).isNotEmpty();

    Response second = list("?workflow=wf_digest&limit=2&cursor=" + cursor);
    assertThat(runIds(second)).containsExactly(digests.get(0));
    assertThat(second.json().path("next_cursor").isNull()).isTrue();

    assertThat(runIds(list("?workflow=wf_digest&state=cancelled"))).containsExactly(digests.get(1));
    assertThat(runIds(list("?workflow=wf_digest&state=queued,running")))
        .containsExactly(digests.get(2), digests.get(0));
    // Without a filter: the runs of every known workflow, and no plain job.
    Response all = list("?limit=1000");
    assertThat(runIds(all)).containsSubsequence(digests.get(2), digests.get(1), digests.get(0));
    assertThat(runIds(all)).doesNotContain(plainId);
    all.json()
        .path("runs")
        .forEach(r -> assertThat(r.path("workflow").asString()).isIn("task", "wf_digest"));
  }

  @Test
  void startingANameThatIsNotAKnownWorkflowIsRefusedNamingItAndStoresNothing() {
    List<Long> before = api.rowCounts();
    for (String path : List.of("/workflows/{name}/start", "/_api/workflows/{name}/start")) {
      // A plain job type the server knows is not a workflow.
      Response plain = conforming(
          "POST",
          path,
          api.post(
              path.replace("{name}", "send_email"),
              "{\"input\": {\"to\": \"a@b.c\", \"subject\": \"s\"}}"));
      assertThat(plain.status()).as(plain.body()).isEqualTo(422);
      assertThat(plain.isProblem()).isTrue();
      JsonNode problem = plain.json();
      assertThat(problem.path("type").asString()).isEqualTo("urn:pgjobs:problem:unknown-workflow");
      assertThat(problem.path("errors").get(0).path("field").asString()).isEqualTo("name");
      assertThat(problem.path("detail").asString()).contains("'send_email'");
      List<String> known = new ArrayList<>();
      problem.path("known_workflows").forEach(n -> known.add(n.asString()));
      assertThat(known).containsExactly("task", "wf_digest");

      Response unknown = conforming(
          "POST", path, api.post(path.replace("{name}", "no_such_type"), "{\"input\": {}}"));
      assertThat(unknown.status()).as(unknown.body()).isEqualTo(422);
      assertThat(unknown.json().path("type").asString())
          .isEqualTo("urn:pgjobs:problem:unknown-workflow");
    }
    assertThat(api.rowCounts()).isEqualTo(before);
  }

  @Test
  void badListParametersAreRefusedNamingTheParameter() {
    Map<String, String> bad = new java.util.LinkedHashMap<>();
    bad.put("?limit=0", "limit");
    bad.put("?limit=1001", "limit");
    bad.put("?limit=ten", "limit");
    bad.put("?state=sleeping", "state");
    bad.put("?workflow=send_email", "workflow");
    bad.put("?workflow=task,no_such_flow", "workflow");
    bad.put("?cursor=not-a-cursor", "cursor");
    bad.put("?limit=1&limit=2", "limit");
    bad.forEach((query, parameter) -> {
      Response refused = conforming("GET", "/workflows", api.get("/workflows" + query));
      assertThat(refused.status()).as(query + ": " + refused.body()).isEqualTo(400);
      assertThat(refused.isProblem()).isTrue();
      assertThat(refused.json().path("errors").get(0).path("field").asString())
          .as(query)
          .isEqualTo(parameter);
    });
    assertThat(api.get("/workflows?workflow=send_email").json().path("detail").asString())
        .contains("known workflows: task, wf_digest");
  }

  @Test
  void
      aServerThatAcceptsUnknownTypesStartsAndListsAnyNameAndOneThatKnowsNoWorkflowStartsKnownTypes() {
    try (ApiTestSupport open =
        ApiTestSupport.start(c -> c.knownWorkflows(APPROVAL), b -> b.acceptUnknownTypes(true))) {
      Response other = open.post("/workflows/other_service_flow/start", "{\"input\": {\"x\": 1}}");
      assertThat(other.status()).as(other.body()).isEqualTo(201);
      Response plain = open.post(
          "/_api/workflows/send_email/start",
          "{\"input\": {\"to\": \"a@b.c\", \"subject\": \"s\"}}");
      assertThat(plain.status()).as(plain.body()).isEqualTo(201);
      Response listed = open.get("/workflows?workflow=other_service_flow");
      assertThat(listed.status()).as(listed.body()).isEqualTo(200);
      assertThat(runIds(listed)).containsExactly(other.json().path("id").asString());
      Response badName = open.get("/workflows?workflow=has%20space");
      assertThat(badName.status()).as(badName.body()).isEqualTo(400);
      assertThat(badName.json().path("errors").get(0).path("field").asString())
          .isEqualTo("workflow");
    }
    // Told of no workflow: a known job type starts as before workflows were declared, nothing is
    // listed.
    try (ApiTestSupport none = ApiTestSupport.start()) {
      Response started = none.post("/workflows/task/start", "{\"input\": {\"note\": \"n\"}}");
      assertThat(started.status()).as(started.body()).isEqualTo(201);
      Response unknown = none.post("/workflows/no_such_type/start", "{\"input\": {}}");
      assertThat(unknown.status()).isEqualTo(422);
      assertThat(unknown.json().path("type").asString())
          .isEqualTo("urn:pgjobs:problem:unknown-job-type");
      assertThat(none.get("/workflow-types").json().path("workflows").size()).isZero();
      assertThat(runIds(none.get("/workflows")))
          .as("an empty filter lists no job")
          .isEmpty();
    }
  }
}
