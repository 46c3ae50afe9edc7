package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.recurring.Recurring;
import io.pgjobs.recurring.RecurringStore;
import io.pgjobs.server.ApiTestSupport.Response;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** {@code /recurring}: every route against a real server and database, each response checked against the OpenAPI document. */
class RecurringApiTest {
  static final String ADMIN = "admin-token-0123456789";
  static final String READ = "read-token-0123456789";
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

  @BeforeEach
  void empty() {
    api.db.execute("DELETE FROM pgjobs.recurring");
  }

  private final List<String> specProblems = new ArrayList<>();

  /** Sends, and records where the response breaks the document. */
  private Response call(String method, String specPath, String path, String json) {
    HttpRequest.Builder b = HttpRequest.newBuilder(api.uri(path)).timeout(Duration.ofSeconds(60));
    if (json == null) {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      b.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(json));
    }
    Response r = api.send(b.build());
    specProblems.addAll(spec.problems(method, specPath, r));
    return r;
  }

  private long stored() {
    return api.db.queryLong("SELECT count(*) FROM pgjobs.recurring");
  }

  private static List<String> fields(Response r) {
    List<String> fields = new ArrayList<>();
    r.json().path("errors").forEach(e -> fields.add(e.path("field").asString()));
    return fields;
  }

  private static String reason(Response r, String field) {
    for (JsonNode e : r.json().path("errors")) {
      if (e.path("field").asString().equals(field)) {
        return e.path("reason").asString();
      }
    }
    throw new AssertionError("no error for " + field + " in " + r.body());
  }

  @Test
  void aScheduleIsAddedListedReplacedPausedResumedRunNowAndRemoved() {
    Response created = call(
        "POST",
        "/recurring",
        "/recurring",
        "{\"name\":\"digest\",\"cron\":\"0 8 * * MON-FRI\","
            + "\"zone\":\"Europe/Berlin\",\"type\":\"task\",\"payload\":{\"note\":\"digest\"},\"missed\":\"catch_up\",\"catch_up\":3}");
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    assertThat(created.header("Location")).isEqualTo("/recurring/digest");
    JsonNode s = created.json();
    assertThat(s.path("source").asString()).isEqualTo("api");
    assertThat(s.path("description").asString()).isNotBlank().contains("8");
    assertThat(s.path("zone").asString()).isEqualTo("Europe/Berlin");
    assertThat(s.path("next_runs").size()).isEqualTo(5);
    assertThat(s.path("next_runs").get(0).asString())
        .matches("\\d{4}-\\d\\d-\\d\\dT0[67]:00:00Z"); // 08:00 Berlin
    assertThat(s.path("catch_up").asInt()).isEqualTo(3);
    assertThat(s.path("last_run").isNull()).isTrue();

    Response list = call("GET", "/recurring", "/recurring", null);
    assertThat(list.json().path("schedules")).hasSize(1);
    assertThat(call("GET", "/recurring/{name}", "/recurring/digest", null)
            .json()
            .path("cron")
            .asString())
        .isEqualTo("0 8 * * MON-FRI");

    Response replaced = call(
        "PUT",
        "/recurring/{name}",
        "/recurring/digest",
        "{\"cron\":\"*/5 * * * *\",\"type\":\"task\",\"payload\":{\"note\":\"often\"}}");
    assertThat(replaced.status()).as(replaced.body()).isEqualTo(200);
    assertThat(replaced.json().path("zone").asString()).isEqualTo("UTC");
    assertThat(replaced.json().path("missed").asString()).isEqualTo("latest");

    Response paused = call("POST", "/recurring/{name}/pause", "/recurring/digest/pause", null);
    assertThat(paused.json().path("paused").asBoolean()).isTrue();
    Response run = call("POST", "/recurring/{name}/run", "/recurring/digest/run", null);
    assertThat(run.status()).as(run.body()).isEqualTo(201);
    String jobId = run.json().path("id").asString();
    assertThat(run.header("Location")).isEqualTo("/jobs/" + jobId);
    assertThat(run.json().path("idempotency_key").asString()).startsWith("recurring:digest:now:");
    assertThat(run.json().path("context").asString()).contains("run now by hand");
    assertThat(run.json().path("payload").path("note").asString()).isEqualTo("often");
    JsonNode lastRun =
        call("GET", "/recurring/{name}", "/recurring/digest", null).json().path("last_run");
    assertThat(lastRun.path("job_id").asString()).isEqualTo(jobId);
    assertThat(lastRun.path("state").asString()).isEqualTo("queued");
    assertThat(call("POST", "/recurring/{name}/resume", "/recurring/digest/resume", null)
            .json()
            .path("paused")
            .asBoolean())
        .isFalse();

    Response removed = call("DELETE", "/recurring/{name}", "/recurring/digest", null);
    assertThat(removed.status()).isEqualTo(200);
    assertThat(removed.json().path("name").asString()).isEqualTo("digest");
    assertThat(stored()).isZero();
    assertThat(api.client.get(UUID.fromString(jobId))).isPresent(); // its jobs stay
    assertThat(specProblems).isEmpty();
  }

  @Test
  void badCronAndZoneAreRejectedWithAProblemNamingPositionAndReasonAndNothingIsStored() {
    Response r = call(
        "POST",
        "/recurring",
        "/recurring",
        "{\"name\":\"bad\",\"cron\":\"0 3 32 * *\",\"zone\":\"Mars/Olympus\",\"type\":\"task\",\"payload\":{\"note\":\"x\"}}");

    assertThat(r.status()).isEqualTo(422);
    assertThat(r.isProblem()).isTrue();
    assertThat(r.json().path("type").asString()).isEqualTo("urn:pgjobs:problem:validation-failed");
    assertThat(fields(r)).containsExactlyInAnyOrder("cron", "zone");
    assertThat(reason(r, "cron")).contains("field 3 (day of month) '32'");
    assertThat(reason(r, "zone"))
        .contains("unknown time zone 'Mars/Olympus'")
        .contains("Europe/Berlin");

    Response fields = call(
        "POST",
        "/recurring",
        "/recurring",
        "{\"name\":\"x\",\"cron\":\"61 * * * *\",\"type\":\"task\"}");
    assertThat(fields.status()).isEqualTo(422);
    assertThat(reason(fields, "cron")).contains("field 1 (minute) '61'");
    Response count = call(
        "POST", "/recurring", "/recurring", "{\"name\":\"x\",\"cron\":\"* *\",\"type\":\"task\"}");
    assertThat(reason(count, "cron")).contains("has 2 fields; allowed: 5");
    Response missing = call("POST", "/recurring", "/recurring", "{\"payload\":{}}");
    assertThat(missing.status()).isEqualTo(422);
    assertThat(fields(missing)).containsExactlyInAnyOrder("name", "cron", "type");
    Response policy = call(
        "POST",
        "/recurring",
        "/recurring",
        "{\"name\":\"x\",\"cron\":\"@hourly\",\"type\":\"task\",\"missed\":\"sometimes\",\"catch_up\":5000,\"max_attempts\":0}");
    assertThat(fields(policy)).containsExactlyInAnyOrder("missed", "catch_up", "max_attempts");
    Response payload = call(
        "POST",
        "/recurring",
        "/recurring",
        "{\"name\":\"x\",\"cron\":\"@hourly\",\"type\":\"send_email\",\"payload\":{\"to\":\"nobody\",\"subject\":\"\"}}");
    assertThat(payload.status()).isEqualTo(422);
    assertThat(fields(payload)).allMatch(f -> f.startsWith("payload."));
    Response wrongType =
        call("POST", "/recurring", "/recurring", "{\"name\":\"x\",\"cron\":5,\"type\":\"task\"}");
    assertThat(wrongType.status()).isEqualTo(400);
    Response notObject = call(
        "POST",
        "/recurring",
        "/recurring",
        "{\"name\":\"x\",\"cron\":\"@hourly\",\"type\":\"task\",\"payload\":[1]}");
    assertThat(notObject.status()).isEqualTo(400);
    Response unknownMember = call(
        "POST",
        "/recurring",
        "/recurring",
        "{\"name\":\"x\",\"cron\":\"@hourly\",\"type\":\"task\",\"every\":1}");
    assertThat(unknownMember.status()).isEqualTo(400);
    Response unknownType = call(
        "POST",
        "/recurring",
        "/recurring",
        "{\"name\":\"x\",\"cron\":\"@hourly\",\"type\":\"nope\"}");
    assertThat(unknownType.status()).isEqualTo(422);
    assertThat(unknownType.json().path("type").asString())
        .isEqualTo("urn:pgjobs:problem:unknown-job-type");
    Response slash = call(
        "POST",
        "/recurring",
        "/recurring",
        "{\"name\":\"a/b\",\"cron\":\"@hourly\",\"type\":\"task\"}");
    assertThat(reason(slash, "name")).contains("no /");

    assertThat(stored()).isZero();
    assertThat(api.rowCounts()).containsOnly(0L);
    assertThat(specProblems).isEmpty();
  }

  @Test
  void duplicateNamesConflictUnknownNamesAreNotFoundAndABadReplaceChangesNothing() {
    String body =
        "{\"name\":\"once\",\"cron\":\"@daily\",\"type\":\"task\",\"payload\":{\"note\":\"n\"}}";
    assertThat(call("POST", "/recurring", "/recurring", body).status()).isEqualTo(201);

    Response duplicate =
        call("POST", "/recurring", "/recurring", body.replace("@daily", "@hourly"));
    assertThat(duplicate.status()).isEqualTo(409);
    assertThat(duplicate.json().path("type").asString())
        .isEqualTo("urn:pgjobs:problem:recurring-exists");
    Response badReplace = call(
        "PUT",
        "/recurring/{name}",
        "/recurring/once",
        "{\"cron\":\"0 0 31 2 * *\",\"zone\":\"Nowhere\",\"type\":\"task\"}");
    assertThat(badReplace.status()).isEqualTo(422);
    assertThat(fields(badReplace)).contains("zone");
    assertThat(api.client.recurring().get("once").orElseThrow().cron()).isEqualTo("@daily");

    for (String[] route : List.of(
        new String[] {"GET", "/recurring/{name}", "/recurring/ghost"},
        new String[] {"DELETE", "/recurring/{name}", "/recurring/ghost"},
        new String[] {"POST", "/recurring/{name}/pause", "/recurring/ghost/pause"},
        new String[] {"POST", "/recurring/{name}/resume", "/recurring/ghost/resume"},
        new String[] {"POST", "/recurring/{name}/run", "/recurring/ghost/run"})) {
      Response r = call(route[0], route[1], route[2], null);
      assertThat(r.status()).as(route[2]).isEqualTo(404);
      assertThat(r.json().path("detail").asString())
          .isEqualTo("no recurring schedule named 'ghost'");
    }
    Response putGhost = call(
        "PUT", "/recurring/{name}", "/recurring/ghost", "{\"cron\":\"@daily\",\"type\":\"task\"}");
    assertThat(putGhost.status()).isEqualTo(404);
    Response putOdd = call(
        "PUT",
        "/recurring/{name}",
        "/recurring/no%20such%20name",
        "{\"cron\":\"@daily\",\"type\":\"task\"}");
    assertThat(putOdd.status()).as(putOdd.body()).isEqualTo(404);
    assertThat(stored()).isEqualTo(1);
    assertThat(specProblems).isEmpty();
  }

  @Test
  void aScheduleDeclaredInCodeCanBePausedAndRunButNotReplacedOrRemoved() throws Exception {
    new RecurringStore(api.db.dataSource(), "pgjobs")
        .declare(
            List.of(Recurring.of(
                "code-tick", "@hourly", "UTC", TestTypes.TASK, new TestTypes.Task("code"))),
            Set.of("task"));

    Response replace = call(
        "PUT",
        "/recurring/{name}",
        "/recurring/code-tick",
        "{\"cron\":\"@daily\",\"type\":\"task\"}");
    assertThat(replace.status()).isEqualTo(409);
    assertThat(replace.json().path("type").asString())
        .isEqualTo("urn:pgjobs:problem:declared-in-code");
    assertThat(replace.json().path("detail").asString()).contains("is declared in code");
    Response remove = call("DELETE", "/recurring/{name}", "/recurring/code-tick", null);
    assertThat(remove.status()).isEqualTo(409);
    assertThat(call("POST", "/recurring/{name}/pause", "/recurring/code-tick/pause", null)
            .json()
            .path("paused")
            .asBoolean())
        .isTrue();
    assertThat(call("POST", "/recurring/{name}/run", "/recurring/code-tick/run", null)
            .status())
        .isEqualTo(201);
    JsonNode s = call("GET", "/recurring/{name}", "/recurring/code-tick", null).json();
    assertThat(s.path("source").asString()).isEqualTo("code");
    assertThat(s.path("cron").asString()).isEqualTo("@hourly");
    assertThat(s.path("last_run").path("state").asString()).isEqualTo("queued");
    assertThat(specProblems).isEmpty();
  }

  @Test
  void tokensGuardTheRoutesAsTheyGuardTheOthers() {
    try (ApiTestSupport secured = ApiTestSupport.start(
        b -> b.tokens(Map.of(ADMIN, ApiServer.Scope.ADMIN, READ, ApiServer.Scope.READ)))) {
      String body =
          "{\"name\":\"guarded\",\"cron\":\"@daily\",\"type\":\"task\",\"payload\":{\"note\":\"n\"}}";
      assertThat(secured.get("/recurring").status()).isEqualTo(401);
      assertThat(secured.get("/recurring", "Authorization", "Bearer " + READ).status())
          .isEqualTo(200);
      assertThat(secured
              .post("/recurring", body, "Authorization", "Bearer " + READ)
              .status())
          .isEqualTo(403);
      assertThat(secured
              .post("/recurring", body, "Authorization", "Bearer " + ADMIN)
              .status())
          .isEqualTo(201);
      Response delete = secured.send(HttpRequest.newBuilder(secured.uri("/recurring/guarded"))
          .header("Authorization", "Bearer " + READ)
          .DELETE()
          .build());
      assertThat(delete.status()).isEqualTo(403);
      assertThat(secured
              .post("/recurring/guarded/run", null, "Authorization", "Bearer " + READ)
              .status())
          .isEqualTo(403);
      assertThat(secured
              .post("/recurring/guarded/run", null, "Authorization", "Bearer " + ADMIN)
              .status())
          .isEqualTo(201);
    }
  }
}
