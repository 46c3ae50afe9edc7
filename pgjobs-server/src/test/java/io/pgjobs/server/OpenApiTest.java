package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.DiscardJobException;
import io.pgjobs.JobState;
import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.worker.JobWorker;
import io.swagger.parser.OpenAPIParser;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.PathItem;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

class OpenApiTest {
  static ApiTestSupport api;
  static JsonNode spec;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start();
    spec = api.get("/openapi.json").json();
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  @Test
  void documentValidatesWithSwaggerParserWithoutErrors() {
    ParseOptions options = new ParseOptions();
    options.setResolve(true);
    SwaggerParseResult result =
        new OpenAPIParser().readContents(api.get("/openapi.json").body(), null, options);

    assertThat(result.getMessages()).isEmpty();
    assertThat(result.getOpenAPI()).isNotNull();
    assertThat(result.getOpenAPI().getOpenapi()).startsWith("3.1");
  }

  @Test
  void everyRouteTheServerAnswersIsInTheDocumentAndEveryDocumentedOperationIsARoute() {
    SwaggerParseResult result =
        new OpenAPIParser().readContents(api.get("/openapi.json").body(), null, new ParseOptions());
    OpenAPI openApi = result.getOpenAPI();
    Set<String> documented = new TreeSet<>();
    openApi.getPaths().forEach((path, item) -> {
      for (PathItem.HttpMethod method : item.readOperationsMap().keySet()) {
        documented.add(method.name() + " " + path);
      }
    });
    Set<String> served = new TreeSet<>(api.server.routes());

    assertThat(served).hasSizeGreaterThanOrEqualTo(20);
    assertThat(documented).isEqualTo(served);
  }

  @Test
  void requestsTheServerAcceptsAreTheOnesTheDocumentAllows() {
    SpecValidator validator = new SpecValidator(spec);
    String queue = "nulls-" + UUID.randomUUID().toString().substring(0, 8);
    // null means "left out" for every optional member, in the document as in the server.
    String withNulls =
        "{\"type\":\"task\",\"payload\":{\"note\":\"n\"},\"queue\":null,\"priority\":null,"
            + "\"context\":null,\"run_at\":null,\"delay_ms\":null,\"max_attempts\":null,\"timeout_ms\":null}";
    assertThat(validator.requestProblems("POST", "/jobs", ApiTestSupport.JSON.readTree(withNulls)))
        .isEmpty();
    assertThat(api.post("/jobs", withNulls).status()).isEqualTo(201);
    String numeric = "{\"type\":\"task\",\"payload\":{\"note\":\"n\"},\"queue\":\"" + queue
        + "\",\"priority\":75}";
    assertThat(validator.requestProblems("POST", "/jobs", ApiTestSupport.JSON.readTree(numeric)))
        .isEmpty();
    assertThat(api.post("/jobs", numeric).status()).isEqualTo(201);
    String bulk = "{\"types\":null,\"queues\":[\"" + queue
        + "\"],\"states\":null,\"all\":null,\"dry_run\":true}";
    assertThat(
            validator.requestProblems("POST", "/jobs/cancel", ApiTestSupport.JSON.readTree(bulk)))
        .isEmpty();
    assertThat(api.post("/jobs/cancel", bulk).status()).isEqualTo(200);
    // What the document forbids, the server refuses too.
    String fractional = "{\"type\":\"task\",\"payload\":{},\"priority\":1.5}";
    assertThat(validator.requestProblems("POST", "/jobs", ApiTestSupport.JSON.readTree(fractional)))
        .isNotEmpty();
    assertThat(api.post("/jobs", fractional).status()).isEqualTo(400);
    assertThat(
            validator.requestProblems("POST", "/jobs/cancel", ApiTestSupport.JSON.readTree("{}")))
        .isEmpty(); // 422: a rule, not a shape

    // A comma-separated list is the documented form of every list parameter, and the server answers
    // it.
    for (String path : List.of("/jobs", "/dead-letters", "/events")) {
      spec.path("paths").path(path).path("get").path("parameters").forEach(p -> {
        if (p.path("schema").path("type").asString().equals("array")) {
          assertThat(p.path("explode").asBoolean(true))
              .as(path + " " + p.path("name"))
              .isFalse();
        }
      });
    }
    assertThat(api.get("/jobs?state=failed,succeeded&queue=" + queue).status()).isEqualTo(200);
  }

  @Test
  void everySchemaIsUsedAndPriorityIsAPlainInteger() {
    String text = api.get("/openapi.json").body();
    spec.path("components")
        .path("schemas")
        .propertyNames()
        .forEach(name -> assertThat(text)
            .as("schema " + name + " is referenced")
            .contains("\"#/components/schemas/" + name + "\""));
    for (String request : List.of("EnqueueRequest", "DispatchRequest")) {
      JsonNode priority = spec.path("components")
          .path("schemas")
          .path(request)
          .path("properties")
          .path("priority");
      assertThat(priority.has("oneOf")).isFalse();
      assertThat(priority.path("type").toString()).isEqualTo("[\"integer\",\"null\"]");
    }
  }

  @Test
  void yamlAndJsonDocumentsAreTheSame() {
    Response yaml = api.get("/openapi.yaml");
    assertThat(yaml.status()).isEqualTo(200);
    assertThat(YAMLMapper.builder().build().readTree(yaml.body()).equals(spec))
        .as("YAML and JSON documents differ")
        .isTrue();
  }

  @Test
  void swaggerUiIsServedFromTheWebjarWithoutACdn() {
    Response docs = api.get("/docs");
    assertThat(docs.status()).isEqualTo(200);
    assertThat(docs.contentType()).startsWith("text/html");
    assertThat(docs.body())
        .contains("/webjars/swagger-ui/5.34.1/swagger-ui-bundle.js", "/openapi.json")
        .doesNotContain("https://");

    Response bundle = api.get("/webjars/swagger-ui/5.34.1/swagger-ui-bundle.js");
    assertThat(bundle.status()).isEqualTo(200);
    assertThat(bundle.body()).contains("SwaggerUIBundle");
  }

  @Test
  void dashboardIsServedAtRootAndDashboardRedirectsThere() {
    Response root = api.get("/");
    assertThat(root.status()).isEqualTo(200);
    assertThat(root.contentType()).startsWith("text/html");
    assertThat(root.body()).contains("pgjobs");
    // The page's API calls are relative to where its scripts are: it must be opened at the API's
    // root.
    for (String path : List.of("/dashboard", "/dashboard/", "/dashboard/index.html")) {
      Response r = api.get(path);
      assertThat(r.status()).as(path).isEqualTo(302);
      assertThat(r.header("Location")).as(path).isEqualTo("/");
    }
    assertThat(api.get("/dashboard/js/api.js").status()).isEqualTo(200);
  }

  @Test
  void realResponsesOfEveryRouteValidateAgainstTheirDocumentedSchemas() throws Exception {
    SpecValidator validator = new SpecValidator(spec);
    List<String> problems = new ArrayList<>();
    String queue = "spec-" + UUID.randomUUID().toString().substring(0, 8);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch running = new CountDownLatch(1);

    Response created = api.post(
        "/jobs",
        "{\"type\":\"task\",\"payload\":{\"note\":\"fail\"},\"queue\":\"" + queue
            + "\",\"max_attempts\":1}",
        "Idempotency-Key",
        "spec-" + queue);
    problems.addAll(validator.problems("POST", "/jobs", created));
    problems.addAll(validator.problems(
        "POST",
        "/jobs",
        api.post(
            "/jobs",
            "{\"type\":\"task\",\"payload\":{\"note\":\"fail\"},\"queue\":\"" + queue
                + "\",\"max_attempts\":1}",
            "Idempotency-Key",
            "spec-" + queue)));
    String failedId = created.json().path("id").asString();
    String blockingId = api.post(
            "/jobs",
            "{\"type\":\"task\",\"payload\":{\"note\":\"block\"},\"queue\":\"" + queue + "\"}")
        .json()
        .path("id")
        .asString();
    String okId = api.post(
            "/jobs/task/dispatch", "{\"args\":{\"note\":\"ok\"},\"queue\":\"" + queue + "\"}")
        .json()
        .path("id")
        .asString();

    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .register(TestTypes.TASK, (ctx, task) -> {
          switch (task.note()) {
            case "fail" -> throw new DiscardJobException("no luck\nwith details");
            case "block" -> {
              running.countDown();
              release.await();
              return null;
            }
            default -> {
              ctx.progress(50, "half");
              return java.util.Map.of("done", true);
            }
          }
        })
        .queue(queue, 3)
        .pollInterval(Duration.ofMillis(100))
        .build()
        .start()) {
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> running.getCount() == 0
              && api.client.get(UUID.fromString(failedId)).orElseThrow().state() == JobState.FAILED
              && api.client.get(UUID.fromString(okId)).orElseThrow().state() == JobState.SUCCEEDED);

      problems.addAll(validator.problems("GET", "/jobs/{id}", api.get("/jobs/" + failedId)));
      problems.addAll(validator.problems("GET", "/jobs/{id}", api.get("/jobs/" + okId)));
      problems.addAll(validator.problems("GET", "/jobs/{id}", api.get("/jobs/" + blockingId)));
      problems.addAll(validator.problems("GET", "/jobs", api.get("/jobs?queue=" + queue)));
      problems.addAll(validator.problems("GET", "/queues", api.get("/queues")));
      problems.addAll(validator.problems("GET", "/workers", api.get("/workers")));
      problems.addAll(validator.problems("GET", "/stats", api.get("/stats?window=30m")));
      problems.addAll(validator.problems("GET", "/dead-letters", api.get("/dead-letters")));
      problems.addAll(
          validator.problems("GET", "/jobs", api.get("/jobs?text=fail&queue=" + queue)));
      problems.addAll(validator.problems("GET", "/job-types", api.get("/job-types")));
      problems.addAll(validator.problems(
          "POST", "/jobs/{id}/cancel", api.post("/jobs/" + blockingId + "/cancel", null)));
      release.countDown();
    }
    problems.addAll(validator.problems(
        "POST", "/jobs/{id}/retry", api.post("/jobs/" + failedId + "/retry", null)));
    problems.addAll(validator.problems(
        "POST", "/jobs/{id}/cancel", api.post("/jobs/" + failedId + "/cancel", null)));
    problems.addAll(validator.problems(
        "POST", "/jobs/{id}/cancel", api.post("/jobs/" + failedId + "/cancel", null)));
    problems.addAll(validator.problems(
        "POST", "/jobs/{id}/retry", api.post("/jobs/" + failedId + "/retry", null)));
    problems.addAll(validator.problems(
        "POST", "/jobs/{id}/retry", api.post("/jobs/" + UUID.randomUUID() + "/retry", null)));
    problems.addAll(validator.problems(
        "POST", "/jobs/cancel", api.post("/jobs/cancel", "{\"queues\":[\"" + queue + "\"]}")));
    problems.addAll(validator.problems(
        "POST", "/jobs/retry", api.post("/jobs/retry", "{\"queues\":[\"" + queue + "\"]}")));
    problems.addAll(validator.problems(
        "POST", "/jobs/cancel", api.post("/jobs/cancel", "{\"all\":true,\"dry_run\":true}")));
    problems.addAll(validator.problems(
        "POST", "/jobs/retry", api.post("/jobs/retry", "{\"all\":true,\"dry_run\":true}")));
    problems.addAll(validator.problems("POST", "/jobs/cancel", api.post("/jobs/cancel", "{}")));
    problems.addAll(validator.problems(
        "POST",
        "/dead-letters/retry",
        api.post("/dead-letters/retry", "{\"type\":\"task\",\"error\":\"no luck\"}")));
    problems.addAll(validator.problems(
        "POST", "/dead-letters/retry", api.post("/dead-letters/retry", "{\"type\":\"task\"}")));
    problems.addAll(validator.problems(
        "POST", "/jobs", api.post("/jobs", "{\"type\":\"send_email\",\"payload\":{}}")));
    problems.addAll(validator.problems(
        "POST", "/jobs", api.post("/jobs", "{\"type\":\"nope\",\"payload\":{}}")));
    problems.addAll(validator.problems("POST", "/jobs", api.post("/jobs", "{oops")));
    problems.addAll(validator.problems(
        "POST",
        "/jobs",
        api.post(
            "/jobs",
            "{\"type\":\"task\",\"payload\":{\"note\":\"other\"}," + "\"queue\":\"" + queue
                + "\",\"max_attempts\":1}",
            "Idempotency-Key",
            "spec-" + queue)));
    problems.addAll(validator.problems("GET", "/jobs", api.get("/jobs?limit=0")));
    problems.addAll(validator.problems(
        "POST", "/queues/{name}/pause", api.post("/queues/" + queue + "/pause", null)));
    problems.addAll(validator.problems(
        "POST", "/queues/{name}/resume", api.post("/queues/" + queue + "/resume", null)));
    problems.addAll(validator.problems("GET", "/health/live", api.get("/health/live")));
    problems.addAll(validator.problems("GET", "/health/ready", api.get("/health/ready")));
    problems.addAll(validator.problems("GET", "/metrics", api.get("/metrics")));
    problems.addAll(validator.problems("GET", "/events", api.get("/events")));

    assertThat(problems).isEmpty();
  }

  @Test
  void schemaCheckRejectsAResponseThatBreaksItsSchemaOrIsUndocumented() {
    SpecValidator validator = new SpecValidator(spec);
    java.util.Map<String, List<String>> json =
        java.util.Map.of("Content-Type", List.of("application/json"));

    assertThat(validator.problems(
            "GET", "/jobs/{id}", new Response(200, json, "{\"id\":\"x\",\"extra\":1}")))
        .isNotEmpty();
    assertThat(validator.problems("GET", "/jobs/{id}", new Response(418, json, "{}")))
        .isNotEmpty();
    assertThat(validator.problems("GET", "/nowhere", new Response(200, json, "{}")))
        .isNotEmpty();
  }

  @Test
  void problemTypesNamedInTheDocumentAreTheOnesTheServerUses() {
    String description = spec.path("components")
        .path("schemas")
        .path("Problem")
        .path("properties")
        .path("type")
        .path("description")
        .asString()
        .toLowerCase(Locale.ROOT);
    for (String slug : List.of(
        "invalid-request",
        "malformed-json",
        "validation-failed",
        "unknown-job-type",
        "unauthorized",
        "forbidden",
        "not-found",
        "method-not-allowed",
        "not-acceptable",
        "already-finished",
        "not-retryable",
        "body-too-large",
        "unsupported-media-type",
        "unavailable",
        "request-timeout",
        "internal-error",
        "idempotency-key-reused")) {
      assertThat(description).contains("`" + slug + "`");
    }
  }
}
