package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.JobState;
import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

class JobsApiTest {
  static ApiTestSupport api;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start();
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  private static String uniqueQueue() {
    return "q" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void enqueueCreatesAJobAndAnswers201WithTheJobAndItsLocation() {
    Response r = api.post("/jobs", """
        {"type":"send_email","payload":{"to":"ada@example.com","subject":"Hi"},"queue":"mail",
         "priority":"high","max_attempts":5,"context":"signup","timeout_ms":60000,"delay_ms":60000}""");

    assertThat(r.status()).isEqualTo(201);
    assertThat(r.contentType()).startsWith("application/json");
    JsonNode job = r.json();
    assertThat(job.path("type").asString()).isEqualTo("send_email");
    assertThat(job.path("queue").asString()).isEqualTo("mail");
    assertThat(job.path("priority").asInt()).isEqualTo(75);
    assertThat(job.path("max_attempts").asInt()).isEqualTo(5);
    assertThat(job.path("context").asString()).isEqualTo("signup");
    assertThat(job.path("timeout_ms").asLong()).isEqualTo(60000);
    assertThat(job.path("state").asString()).isEqualTo("queued");
    assertThat(job.path("scheduled").asBoolean()).isTrue();
    assertThat(job.path("payload").path("to").asString()).isEqualTo("ada@example.com");
    assertThat(Instant.parse(job.path("created_at").asString())).isNotNull();
    assertThat(r.header("Location")).isEqualTo("/jobs/" + job.path("id").asString());
    assertThat(api.client.get(UUID.fromString(job.path("id").asString()))).isPresent();
  }

  @Test
  void aJobsDetailNamesItsParentAndItsChildrenAndListsNameTheParentOnly() {
    UUID parent = api.client
        .enqueue(
            "task",
            java.util.Map.of("note", "parent"),
            io.pgjobs.EnqueueOptions.builder().queue(uniqueQueue()).build())
        .job()
        .id();
    UUID child = api.client
        .enqueue(
            "task",
            java.util.Map.of("note", "child"),
            io.pgjobs.EnqueueOptions.builder()
                .queue(uniqueQueue())
                .parent(parent)
                .build())
        .job()
        .id();

    JsonNode parentView = api.get("/jobs/" + parent).json();
    assertThat(parentView.path("parent_id").isNull()).isTrue();
    assertThat(parentView.path("children")).hasSize(1);
    assertThat(parentView.path("children").get(0).asString()).isEqualTo(child.toString());
    JsonNode childView = api.get("/jobs/" + child).json();
    assertThat(childView.path("parent_id").asString()).isEqualTo(parent.toString());
    assertThat(childView.path("children")).isEmpty();
  }

  @Test
  void
      aTypeThatTakesItsKeyFromAPayloadFieldGivesOneJobPerValueOverHttpAndRefusesAPayloadWithoutIt() {
    String body = """
        {"type":"charge","payload":{"payment_id":"pay-http-1","cents":500}}""";
    Response first = api.post("/jobs", body);
    Response again = api.post("/jobs", body);
    assertThat(first.status()).isEqualTo(201);
    assertThat(again.status()).isEqualTo(200);
    assertThat(again.json().path("id").asString())
        .isEqualTo(first.json().path("id").asString());
    assertThat(first.json().path("idempotency_key").asString()).isEqualTo("charge:pay-http-1");

    long before = api.client
        .list(io.pgjobs.JobFilter.builder().type("charge").build())
        .jobs()
        .size();
    Response missing = api.post("/jobs", """
        {"type":"charge","payload":{"cents":500}}""");
    assertThat(missing.status()).isEqualTo(422);
    assertThat(missing.contentType()).startsWith("application/problem+json");
    assertThat(missing.body()).contains("payment_id");
    assertThat(api.client
            .list(io.pgjobs.JobFilter.builder().type("charge").build())
            .jobs())
        .hasSize((int) before);
  }

  @Test
  void kindIsASynonymOfTypeAndPriorityAcceptsIntegersAndRunAtIsKept() {
    Response r = api.post("/jobs", """
        {"kind":"task","payload":{"note":"x"},"priority":-7,"run_at":"2031-02-03T04:05:06Z"}""");

    assertThat(r.status()).isEqualTo(201);
    assertThat(r.json().path("type").asString()).isEqualTo("task");
    assertThat(r.json().path("priority").asInt()).isEqualTo(-7);
    assertThat(r.json().path("run_at").asString()).isEqualTo("2031-02-03T04:05:06Z");
  }

  @Test
  void sameIdempotencyKeyReturnsTheOriginalJobWith200() {
    String body = """
        {"type":"task","payload":{"note":"once"}}""";
    Response first = api.post("/jobs", body, "Idempotency-Key", "order-1");
    Response second = api.post("/jobs", body, "Idempotency-Key", "order-1");

    assertThat(first.status()).isEqualTo(201);
    assertThat(second.status()).isEqualTo(200);
    assertThat(second.header("Idempotent-Replayed")).isEqualTo("true");
    assertThat(second.header("Location"))
        .isEqualTo(first.header("Location"))
        .endsWith(first.json().path("id").asString());
    assertThat(second.json().path("id")).isEqualTo(first.json().path("id"));
    assertThat(second.json().path("idempotency_key").asString()).isEqualTo("order-1");
  }

  @Test
  void aDifferentRequestUnderAUsedIdempotencyKeyIs422AndStoresNothing() {
    Response first = api.post(
        "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"a\"}}", "Idempotency-Key", "order-2");
    String id = first.json().path("id").asString();
    List<Long> before = api.rowCounts();

    for (String other : List.of(
        "{\"type\":\"task\",\"payload\":{\"note\":\"b\"}}",
        "{\"type\":\"send_email\",\"payload\":{\"to\":\"a@example.com\",\"subject\":\"s\"}}",
        "{\"type\":\"task\",\"payload\":{\"note\":\"a\"},\"queue\":\"elsewhere\"}",
        "{\"type\":\"task\",\"payload\":{\"note\":\"a\"},\"priority\":\"critical\"}")) {
      Response r = api.post("/jobs", other, "Idempotency-Key", "order-2");
      assertThat(r.status()).as(other).isEqualTo(422);
      assertThat(r.isProblem()).isTrue();
      assertThat(r.json().path("type").asString())
          .isEqualTo("urn:pgjobs:problem:idempotency-key-reused");
      assertThat(r.json().path("detail").asString()).contains("'order-2'", id);
      assertThat(r.json().path("job_id").asString()).isEqualTo(id);
      assertThat(r.json().path("errors").findValuesAsString("field"))
          .containsExactly("Idempotency-Key");
    }
    assertThat(api.rowCounts()).isEqualTo(before);

    Response same = api.post(
        "/jobs", "{\"payload\":{\"note\":\"a\"},\"type\":\"task\"}", "Idempotency-Key", "order-2");
    assertThat(same.status()).isEqualTo(200);
    assertThat(same.json().path("id").asString()).isEqualTo(id);
  }

  @Test
  void tenConcurrentIdenticalRequestsWithOneIdempotencyKeyCreateExactlyOneJob() throws Exception {
    String key = "concurrent-" + UUID.randomUUID();
    String queue = uniqueQueue();
    String body = "{\"type\":\"task\",\"payload\":{\"note\":\"race\"},\"queue\":\"" + queue + "\"}";
    CountDownLatch go = new CountDownLatch(1);
    List<Future<Response>> futures = new ArrayList<>();
    try (ExecutorService pool = Executors.newFixedThreadPool(10)) {
      for (int i = 0; i < 10; i++) {
        futures.add(pool.submit(() -> {
          go.await();
          return api.post("/jobs", body, "Idempotency-Key", key);
        }));
      }
      go.countDown();
      List<Integer> statuses = new ArrayList<>();
      Set<String> ids = new HashSet<>();
      for (Future<Response> f : futures) {
        Response r = f.get();
        statuses.add(r.status());
        ids.add(r.json().path("id").asString());
      }
      assertThat(statuses).filteredOn(s -> s == 201).hasSize(1);
      assertThat(statuses).filteredOn(s -> s == 200).hasSize(9);
      assertThat(ids).hasSize(1);
    }
    assertThat(api.db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE queue = '" + queue + "'"))
        .isEqualTo(1);
  }

  @Test
  void dispatchByTypeEnqueuesArgsAsThePayload() {
    Response r = api.post("/jobs/task/dispatch", """
        {"args":{"note":"dispatched"},"priority":"critical"}""");

    assertThat(r.status()).isEqualTo(201);
    assertThat(r.json().path("type").asString()).isEqualTo("task");
    assertThat(r.json().path("payload").path("note").asString()).isEqualTo("dispatched");
    assertThat(r.json().path("priority").asInt()).isEqualTo(100);
  }

  @Test
  void dispatchOfAnUnknownTypeIs422ListingTheKnownTypes() {
    Response r = api.post("/jobs/nope/dispatch", "{\"args\":{}}");

    assertThat(r.status()).isEqualTo(422);
    assertThat(r.isProblem()).isTrue();
    assertThat(r.json().path("type").asString()).isEqualTo("urn:pgjobs:problem:unknown-job-type");
    assertThat(r.json().path("known_types").toString()).contains("send_email", "task");
  }

  @Test
  void payloadFailingItsValidatorIs422WithOneErrorPerField() {
    List<Long> before = api.rowCounts();
    Response r = api.post("/jobs", """
        {"type":"send_email","payload":{"to":"nobody","subject":""}}""");

    assertThat(r.status()).isEqualTo(422);
    assertThat(r.isProblem()).isTrue();
    assertThat(r.json().path("errors").findValuesAsString("field"))
        .containsExactly("payload.to", "payload.subject");
    assertThat(api.rowCounts()).isEqualTo(before);
  }

  @Test
  void listFiltersByStateTypeQueueAndCreationTimeNewestFirstWithKeysetPages() {
    String queue = uniqueQueue();
    Instant start = Instant.now().minusSeconds(1);
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      ids.add(api.post(
              "/jobs",
              "{\"type\":\"task\",\"payload\":{\"note\":\"" + i + "\"},\"queue\":\"" + queue
                  + "\"}")
          .json()
          .path("id")
          .asString());
    }
    Response page1 = api.get(
        "/jobs?queue=" + queue + "&state=queued,running&type=task&limit=2&created_after=" + start);
    assertThat(page1.status()).isEqualTo(200);
    assertThat(page1.json().path("jobs").findValuesAsString("id"))
        .containsExactly(ids.get(4), ids.get(3));
    String cursor = page1.json().path("next_cursor").asString();

    Response page2 = api.get("/jobs?queue=" + queue + "&limit=2&cursor=" + cursor);
    assertThat(page2.json().path("jobs").findValuesAsString("id"))
        .containsExactly(ids.get(2), ids.get(1));
    Response page3 = api.get("/jobs?queue=" + queue + "&limit=2&cursor="
        + page2.json().path("next_cursor").asString());
    assertThat(page3.json().path("jobs").findValuesAsString("id")).containsExactly(ids.get(0));
    assertThat(page3.json().path("next_cursor").isNull()).isTrue();

    assertThat(api.get("/jobs?queue=" + queue + "&state=failed")
            .json()
            .path("jobs")
            .size())
        .isZero();
    assertThat(api.get("/jobs?queue=" + queue + "&state=queued&state=failed")
            .json()
            .path("jobs")
            .size())
        .isEqualTo(5);
    assertThat(api.get("/jobs?queue=" + queue + "&created_before=2000-01-01T00:00:00Z")
            .json()
            .path("jobs")
            .size())
        .isZero();
    assertThat(api.get("/jobs?queue=" + queue + "&type=send_email")
            .json()
            .path("jobs")
            .size())
        .isZero();
  }

  @Test
  void getShowsAttemptsEveryErrorProgressAndOutput() throws Exception {
    String queue = uniqueQueue();
    String failing = api.post(
            "/jobs",
            "{\"type\":\"task\",\"payload\":{\"note\":\"fail\"},\"queue\":\"" + queue
                + "\",\"max_attempts\":2}")
        .json()
        .path("id")
        .asString();
    String succeeding = api.post(
            "/jobs",
            "{\"type\":\"task\",\"payload\":{\"note\":\"ok\"},\"queue\":\"" + queue + "\"}")
        .json()
        .path("id")
        .asString();
    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .register(TestTypes.TASK, (ctx, task) -> {
          if (task.note().equals("fail")) {
            throw new IllegalStateException("boom " + ctx.attempt() + "\nsecond line");
          }
          ctx.progress(60, "most of it");
          return Map.of("sent", true);
        })
        .queue(queue, 2)
        .pollInterval(Duration.ofMillis(100))
        .build()
        .start()) {
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() ->
              api.client.get(UUID.fromString(failing)).orElseThrow().state() == JobState.FAILED
                  && api.client.get(UUID.fromString(succeeding)).orElseThrow().state()
                      == JobState.SUCCEEDED);
    }
    JsonNode failed = api.get("/jobs/" + failing).json();
    assertThat(failed.path("state").asString()).isEqualTo("failed");
    assertThat(failed.path("attempts").asInt()).isEqualTo(2);
    assertThat(failed.path("errors").size()).isEqualTo(2);
    assertThat(failed.path("errors").get(0).path("message").asString()).startsWith("boom 1");
    assertThat(failed.path("errors").get(1).path("error_class").asString())
        .isEqualTo(IllegalStateException.class.getName());
    assertThat(failed.path("finished_at").isNull()).isFalse();

    JsonNode ok = api.get("/jobs/" + succeeding).json();
    assertThat(ok.path("state").asString()).isEqualTo("succeeded");
    assertThat(ok.path("output").path("sent").asBoolean()).isTrue();
    assertThat(ok.path("progress").path("percent").asInt()).isEqualTo(60);
    assertThat(ok.path("progress").path("message").asString()).isEqualTo("most of it");
  }

  @Test
  void getOfAnUnknownIdIs404ProblemAndOfAMalformedIdIs400() {
    Response missing = api.get("/jobs/" + UUID.randomUUID());
    assertThat(missing.status()).isEqualTo(404);
    assertThat(missing.isProblem()).isTrue();
    assertThat(missing.json().path("type").asString()).isEqualTo("urn:pgjobs:problem:not-found");

    Response bad = api.get("/jobs/not-a-uuid");
    assertThat(bad.status()).isEqualTo(400);
    assertThat(bad.json().path("errors").get(0).path("field").asString()).isEqualTo("id");
  }

  @Test
  void cancelAnswers200ForAWaitingJob409WhenFinishedAnd404WhenUnknown() {
    String id = api.post(
            "/jobs",
            "{\"type\":\"task\",\"payload\":{\"note\":\"c\"},\"queue\":\"" + uniqueQueue() + "\"}")
        .json()
        .path("id")
        .asString();

    Response cancelled = api.post("/jobs/" + id + "/cancel", null);
    assertThat(cancelled.status()).isEqualTo(200);
    assertThat(cancelled.json().path("state").asString()).isEqualTo("cancelled");

    Response again = api.post("/jobs/" + id + "/cancel", null);
    assertThat(again.status()).isEqualTo(409);
    assertThat(again.isProblem()).isTrue();
    assertThat(again.json().path("state").asString()).isEqualTo("cancelled");

    assertThat(api.post("/jobs/" + UUID.randomUUID() + "/cancel", null).status())
        .isEqualTo(404);
  }

  @Test
  void cancelOfARunningJobAnswers202AndItsWorkerEndsItCancelled() {
    String queue = uniqueQueue();
    CountDownLatch started = new CountDownLatch(1);
    String id = api.post(
            "/jobs",
            "{\"type\":\"task\",\"payload\":{\"note\":\"long\"},\"queue\":\"" + queue + "\"}")
        .json()
        .path("id")
        .asString();
    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .register(TestTypes.TASK, (ctx, task) -> {
          started.countDown();
          new CountDownLatch(1).await();
          return null;
        })
        .queue(queue, 1)
        .build()
        .start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> started.getCount() == 0);
      Response r = api.post("/jobs/" + id + "/cancel", null);
      assertThat(r.status()).isEqualTo(202);
      // The job as read right after the flag was set: still running with the flag, or, if its
      // worker heard of it first (it listens), already cancelled.
      assertThat(r.json().path("cancel_requested").asBoolean()
              || r.json().path("state").asString().equals("cancelled"))
          .as(r.body())
          .isTrue();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() ->
              api.client.get(UUID.fromString(id)).orElseThrow().state() == JobState.CANCELLED);
    }
  }

  @Test
  void retryQueuesAFinishedJobAgainAnd409sAWaitingOne() {
    String id = api.post(
            "/jobs",
            "{\"type\":\"task\",\"payload\":{\"note\":\"r\"},\"queue\":\"" + uniqueQueue() + "\"}")
        .json()
        .path("id")
        .asString();

    Response notRetryable = api.post("/jobs/" + id + "/retry", null);
    assertThat(notRetryable.status()).isEqualTo(409);
    assertThat(notRetryable.json().path("state").asString()).isEqualTo("queued");
    assertThat(notRetryable.json().path("type").asString())
        .isEqualTo("urn:pgjobs:problem:not-retryable");

    api.post("/jobs/" + id + "/cancel", null);
    Response retried = api.post("/jobs/" + id + "/retry", null);
    assertThat(retried.status()).isEqualTo(200);
    assertThat(retried.json().path("state").asString()).isEqualTo("queued");
    assertThat(retried.json().path("attempts").asInt()).isZero();

    assertThat(api.post("/jobs/" + UUID.randomUUID() + "/retry", null).status()).isEqualTo(404);
  }

  @Test
  void bulkCancelAndRetryByFilterAnswerCounts() {
    String queue = uniqueQueue();
    for (int i = 0; i < 3; i++) {
      api.post(
          "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"b\"},\"queue\":\"" + queue + "\"}");
    }
    Response cancel = api.post(
        "/jobs/cancel",
        "{\"queues\":[\"" + queue + "\"],\"types\":[\"task\"],\"states\":[\"queued\"]}");
    assertThat(cancel.status()).isEqualTo(200);
    assertThat(cancel.json().path("cancelled").asLong()).isEqualTo(3);
    assertThat(cancel.json().path("pending_on_worker").asLong()).isZero();

    Response retry =
        api.post("/jobs/retry", "{\"queues\":[\"" + queue + "\"],\"states\":[\"cancelled\"]}");
    assertThat(retry.status()).isEqualTo(200);
    assertThat(retry.json().path("retried").asLong()).isEqualTo(3);

    Response wrongState =
        api.post("/jobs/cancel", "{\"queues\":[\"" + queue + "\"],\"states\":[\"succeeded\"]}");
    assertThat(wrongState.status()).isEqualTo(422);
    assertThat(wrongState.json().path("errors").get(0).path("field").asString())
        .isEqualTo("states");
  }

  @Test
  void bulkCancelAndRetryWithoutAFilterNeedAllTrueAndADryRunChangesNothing() {
    String queue = uniqueQueue();
    for (int i = 0; i < 2; i++) {
      api.post(
          "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"d\"},\"queue\":\"" + queue + "\"}");
    }
    List<Long> before = api.rowCounts();

    Response refused = api.post("/jobs/cancel", "{}");
    assertThat(refused.status()).isEqualTo(422);
    assertThat(refused.json().path("errors").findValuesAsString("field")).containsExactly("all");
    assertThat(refused.json().path("detail").asString()).contains("\"all\": true", "dry_run");
    assertThat(api.post("/jobs/retry", "{}").status()).isEqualTo(422);
    assertThat(api.rowCounts()).isEqualTo(before);

    Response dryFiltered =
        api.post("/jobs/cancel", "{\"queues\":[\"" + queue + "\"],\"dry_run\":true}");
    assertThat(dryFiltered.status()).isEqualTo(200);
    assertThat(dryFiltered.json().path("cancelled").asLong()).isEqualTo(2);
    assertThat(dryFiltered.json().path("dry_run").asBoolean()).isTrue();
    Response dryAll = api.post("/jobs/cancel", "{\"all\":true,\"dry_run\":true}");
    assertThat(dryAll.json().path("cancelled").asLong()).isGreaterThanOrEqualTo(2);
    assertThat(api.rowCounts()).isEqualTo(before);
    assertThat(api.get("/jobs?queue=" + queue + "&state=queued")
            .json()
            .path("jobs")
            .size())
        .isEqualTo(2);

    Response cancelled = api.post("/jobs/cancel", "{\"queues\":[\"" + queue + "\"]}");
    assertThat(cancelled.json().path("cancelled").asLong()).isEqualTo(2);
    assertThat(cancelled.json().path("dry_run").asBoolean()).isFalse();

    Response dryRetry =
        api.post("/jobs/retry", "{\"queues\":[\"" + queue + "\"],\"dry_run\":true}");
    assertThat(dryRetry.json().path("retried").asLong()).isEqualTo(2);
    assertThat(dryRetry.json().path("dry_run").asBoolean()).isTrue();
    assertThat(api.get("/jobs?queue=" + queue + "&state=cancelled")
            .json()
            .path("jobs")
            .size())
        .isEqualTo(2);
  }

  @Test
  void aUniqueJobEnqueuedTwiceAnswers201ThenTheSameJobWith200AndUniqueConflict() {
    String queue = uniqueQueue();
    String body = """
        {"type":"task","payload":{"note":"nightly-%s"},"queue":"%s","delay_ms":3600000,
         "unique":{"by_args":["note"],"by_queue":true,"period":"P366D"}}""".formatted(queue, queue);
    Response first = api.post("/jobs", body);
    Response second = api.post("/jobs", body);

    assertThat(first.status()).isEqualTo(201);
    assertThat(first.header("Unique-Conflict")).isNull();
    assertThat(second.status()).isEqualTo(200);
    assertThat(second.header("Unique-Conflict")).isEqualTo("true");
    assertThat(second.header("Location"))
        .isEqualTo("/jobs/" + first.json().path("id").asString());
    assertThat(second.json().path("id")).isEqualTo(first.json().path("id"));

    Response otherQueue = api.post(
        "/jobs", body.replace("\"queue\":\"" + queue + "\"", "\"queue\":\"" + queue + "x\""));
    assertThat(otherQueue.status()).as("by_queue: another queue is another job").isEqualTo(201);
  }

  @Test
  void aUniqueDuplicateWithReplaceUpdatesRunAtAndPayloadOfTheWaitingJob() {
    String queue = uniqueQueue();
    Response first = api.post("/jobs", """
        {"type":"task","payload":{"note":"v1"},"queue":"%s","run_at":"2031-01-01T00:00:00Z",
         "unique":{"by_queue":true,"period":31536000}}""".formatted(queue));
    Response replaced = api.post("/jobs", """
        {"type":"task","payload":{"note":"v2"},"queue":"%s","run_at":"2030-06-01T00:00:00Z",
         "unique":{"by_queue":true,"period":31536000,"replace":["run_at","payload"]}}""".formatted(queue));

    assertThat(first.status()).isEqualTo(201);
    assertThat(replaced.status()).isEqualTo(200);
    assertThat(replaced.header("Unique-Conflict")).isEqualTo("true");
    assertThat(replaced.json().path("id")).isEqualTo(first.json().path("id"));
    assertThat(replaced.json().path("run_at").asString()).isEqualTo("2030-06-01T00:00:00Z");
    assertThat(replaced.json().path("payload").path("note").asString()).isEqualTo("v2");
    Response stored = api.get("/jobs/" + first.json().path("id").asString());
    assertThat(stored.json().path("payload").path("note").asString()).isEqualTo("v2");
  }

  @Test
  void aUniqueJobWithCancelledInItsStatesStaysADuplicateAfterCancelAndOneWithoutItDoesNot() {
    String queue = uniqueQueue();
    String counting = """
        {"type":"task","payload":{"note":"c-%s"},"queue":"%s","delay_ms":3600000,
         "unique":{"by_args":true,"states":["queued","running","retrying","cancelled"]}}""".formatted(queue, queue);
    Response first = api.post("/jobs", counting);
    assertThat(first.status()).isEqualTo(201);
    String id = first.json().path("id").asString();
    assertThat(api.post("/jobs/" + id + "/cancel", null).status()).isEqualTo(200);

    Response afterCancel = api.post("/jobs", counting);
    assertThat(afterCancel.status()).as("cancelled is in the set").isEqualTo(200);
    assertThat(afterCancel.header("Unique-Conflict")).isEqualTo("true");
    assertThat(afterCancel.json().path("id").asString()).isEqualTo(id);
    assertThat(afterCancel.json().path("state").asString()).isEqualTo("cancelled");

    String notCounting = counting.replace("\"cancelled\"", "\"succeeded\"");
    Response other = api.post("/jobs", notCounting);
    assertThat(other.status()).isEqualTo(201);
    assertThat(api.post("/jobs/" + other.json().path("id").asString() + "/cancel", null)
            .status())
        .isEqualTo(200);
    assertThat(api.post("/jobs", notCounting).status())
        .as("cancelled is not in this set")
        .isEqualTo(201);
  }
}
