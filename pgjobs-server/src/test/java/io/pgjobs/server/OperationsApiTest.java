package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;

/** Queues, workers, stats, dead letters, health, request ids, timeouts and internal errors. */
class OperationsApiTest {
  static final Duration WAIT = Duration.ofSeconds(60);
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
    return "ops" + UUID.randomUUID().toString().substring(0, 8);
  }

  private static JsonNode queue(String name) {
    for (JsonNode q : api.get("/queues").json().path("queues")) {
      if (q.path("name").asString().equals(name)) {
        return q;
      }
    }
    return null;
  }

  @Test
  void queuesShowCountsPerStateScheduledJobsOldestReadyAgeAndPauseResume() {
    String queue = uniqueQueue();
    api.post(
        "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"now\"},\"queue\":\"" + queue + "\"}");
    api.post(
        "/jobs",
        "{\"type\":\"task\",\"payload\":{\"note\":\"later\"},\"queue\":\"" + queue
            + "\",\"delay_ms\":3600000}");
    // Not listed at first on a loaded machine: GET /queues serves a costly overview from a short
    // cache.
    await()
        .atMost(WAIT)
        .ignoreExceptions()
        .until(() -> queue(queue).path("oldest_ready_age_ms").asLong() > 0);

    JsonNode q = queue(queue);
    assertThat(q.path("counts").path("queued").asLong()).isEqualTo(2);
    assertThat(q.path("counts").path("failed").asLong()).isZero();
    assertThat(q.path("scheduled").asLong()).isEqualTo(1);
    assertThat(q.path("paused").asBoolean()).isFalse();

    Response paused = api.post("/queues/" + queue + "/pause", null);
    assertThat(paused.status()).isEqualTo(200);
    assertThat(paused.json().path("paused").asBoolean()).isTrue();
    assertThat(queue(queue).path("paused").asBoolean()).isTrue();

    Response resumed = api.post("/queues/" + queue + "/resume", null);
    assertThat(resumed.status()).isEqualTo(200);
    assertThat(resumed.json().path("paused").asBoolean()).isFalse();

    Response unknownQueue = api.post("/queues/" + uniqueQueue() + "/pause", null);
    assertThat(unknownQueue.status()).isEqualTo(200);
    assertThat(unknownQueue.json().path("paused").asBoolean()).isTrue();
  }

  @Test
  void aJobNeedingACapabilityNoLiveWorkerHasIsReportedUntilAWorkerWithItStartsAndRunsIt() {
    String queue = uniqueQueue();
    Response created = api.post(
        "/jobs",
        "{\"type\":\"task\",\"payload\":{\"note\":\"gpu\"},\"queue\":\"" + queue
            + "\",\"capability\":\"gpu\"}");
    assertThat(created.status()).isEqualTo(201);
    assertThat(created.json().path("capability").asString()).isEqualTo("gpu");
    String id = created.json().path("id").asString();

    // GET /queues serves its overview from a short cache: the new queue may not be listed at once.
    await()
        .atMost(WAIT)
        .ignoreExceptions()
        .until(() -> queue(queue).path("unrunnable").path("count").asLong() == 1);
    JsonNode unrunnable = queue(queue).path("unrunnable");
    assertThat(unrunnable.path("count").asLong()).isEqualTo(1);
    assertThat(unrunnable.path("capabilities").toString()).isEqualTo("[\"gpu\"]");

    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .workerId("api-gpu-worker-" + queue)
        .capabilities("general", "gpu")
        .register(TestTypes.TASK, (ctx, task) -> null)
        .queue(queue, 1)
        .build()
        .start()) {
      await()
          .atMost(WAIT)
          .until(() -> api.get("/jobs/" + id).json().path("state").asString().equals("succeeded"));
      assertThat(api.get("/jobs/" + id).json().path("capability").asString()).isEqualTo("gpu");
      JsonNode w = null;
      for (JsonNode candidate : api.get("/workers").json().path("workers")) {
        if (candidate.path("id").asString().equals(worker.workerId())) {
          w = candidate;
        }
      }
      assertThat(w).isNotNull();
      assertThat(w.path("capabilities").toString()).isEqualTo("[\"general\",\"gpu\"]");
      // GET /queues serves costly counts from a short cache (QueuesApi): on a loaded machine the
      // count read before the job ran can still be served for a moment.
      await()
          .atMost(WAIT)
          .untilAsserted(() ->
              assertThat(queue(queue).path("unrunnable").path("count").asLong()).isZero());
    }
  }

  @Test
  void aQueueNoLiveWorkerServesIsReportedUntilOneStarts() {
    String queue = uniqueQueue();
    Response created = api.post(
        "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"typo\"},\"queue\":\"" + queue + "\"}");
    assertThat(created.status()).isEqualTo(201);
    String id = created.json().path("id").asString();
    // The overview's short cache may not list the new queue at once.
    await().atMost(WAIT).ignoreExceptions().until(() -> queue(queue) != null);
    assertThat(queue(queue).path("unserved").asBoolean())
        .as("nobody serves %s", queue)
        .isTrue();

    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .register(TestTypes.TASK, (ctx, task) -> null)
        .queue(queue, 1)
        .build()
        .start()) {
      await()
          .atMost(WAIT)
          .until(() -> api.get("/jobs/" + id).json().path("state").asString().equals("succeeded"));
      // The queue list is read afresh but may be a moment behind the job's state on a loaded
      // machine.
      await("served, nothing waits")
          .atMost(WAIT)
          .until(() -> !queue(queue).path("unserved").asBoolean());
    }
  }

  @Test
  void workersShowLiveWorkersWithHeartbeatsAndRunningJobs() throws Exception {
    String queue = uniqueQueue();
    CountDownLatch release = new CountDownLatch(1);
    api.post(
        "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"hold\"},\"queue\":\"" + queue + "\"}");
    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .workerId("api-test-worker-" + queue)
        .register(TestTypes.TASK, (ctx, task) -> {
          release.await();
          return null;
        })
        .queue(queue, 3)
        .build()
        .start()) {
      await().atMost(WAIT).untilAsserted(() -> {
        JsonNode w = null;
        for (JsonNode candidate : api.get("/workers").json().path("workers")) {
          if (candidate.path("id").asString().equals(worker.workerId())) {
            w = candidate;
          }
        }
        assertThat(w).isNotNull();
        assertThat(w.path("running_jobs").asLong()).isEqualTo(1);
        assertThat(w.path("queues").path(queue).asInt()).isEqualTo(3);
        assertThat(w.path("job_types").toString()).contains("task");
        assertThat(w.path("last_heartbeat").asString()).isNotBlank();
        assertThat(w.path("pid").asLong()).isEqualTo(ProcessHandle.current().pid());
      });
      release.countDown();
    }
  }

  @Test
  void statsAndDeadLettersCountFinishedJobsByTypeQueueAndError() {
    String queue = uniqueQueue();
    for (String note : List.of("ok", "ok", "boom:41213", "boom:41977", "bang")) {
      api.post(
          "/jobs",
          "{\"type\":\"task\",\"payload\":{\"note\":\"" + note + "\"},\"queue\":\"" + queue
              + "\",\"max_attempts\":1}");
    }
    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .register(TestTypes.TASK, (ctx, task) -> {
          if (task.note().equals("bang")) {
            // No message of its own, as java.net.http throws a refused connection.
            throw new UnsupportedOperationException(
                (String) null, new java.net.ConnectException("Connection refused"));
          }
          if (!task.note().equals("ok")) {
            throw new IllegalStateException(
                "boom to 127.0.0.1:" + task.note().substring(5) + " happened\nat line 2");
          }
          return null;
        })
        .queue(queue, 5)
        .build()
        .start()) {
      await()
          .atMost(WAIT)
          .until(() -> api.client
                  .list(io.pgjobs.JobFilter.builder()
                      .queue(queue)
                      .state(JobState.SUCCEEDED, JobState.FAILED)
                      .build())
                  .jobs()
                  .size()
              == 5);
    }

    JsonNode stats = api.get("/stats").json();
    assertThat(stats.path("window").asString()).isEqualTo("1h");
    JsonNode total = null;
    for (JsonNode t : stats.path("totals")) {
      if (t.path("queue").asString().equals(queue)) {
        total = t;
      }
    }
    assertThat(total).isNotNull();
    assertThat(total.path("type").asString()).isEqualTo("task");
    assertThat(total.path("succeeded").asLong()).isEqualTo(2);
    assertThat(total.path("failed").asLong()).isEqualTo(3);
    long perMinute = 0;
    for (JsonNode m : stats.path("minutes")) {
      if (m.path("queue").asString().equals(queue)) {
        perMinute += m.path("succeeded").asLong() + m.path("failed").asLong();
      }
    }
    assertThat(perMinute).isEqualTo(5);
    assertThat(api.get("/stats?window=10m").json().path("window").asString()).isEqualTo("10m");

    JsonNode groups = api.get("/dead-letters?queue=" + queue).json().path("groups");
    assertThat(groups.size())
        .as("grouped by error class, not by messages differing in a port: %s", groups)
        .isEqualTo(2);
    assertThat(groups.get(0).path("error").asString()).isEqualTo("java.lang.IllegalStateException");
    assertThat(groups.get(0).path("kind").asString()).isEqualTo("error");
    assertThat(groups.get(0).path("message").asString())
        .matches("boom to 127\\.0\\.0\\.1:41(213|977) happened");
    assertThat(groups.get(0).path("count").asLong()).isEqualTo(2);
    assertThat(groups.get(0).path("job_ids").size()).isEqualTo(2);
    JsonNode bang = groups.get(1);
    assertThat(bang.path("error").asString()).isEqualTo("java.lang.UnsupportedOperationException");
    assertThat(bang.path("message").asString())
        .isEqualTo("java.lang.UnsupportedOperationException without a message;"
            + " caused by java.net.ConnectException: Connection refused");
    assertThat(bang.path("count").asLong()).isEqualTo(1);

    JsonNode lastError = api.get("/jobs/" + bang.path("job_ids").get(0).asString())
        .json()
        .path("errors")
        .get(0);
    assertThat(lastError.path("message").asString())
        .isNotEqualTo("null")
        .contains("Connection refused");
    assertThat(lastError.path("error_class").asString())
        .isEqualTo("java.lang.UnsupportedOperationException");
    assertThat(lastError.path("cause").asString())
        .isEqualTo("java.net.ConnectException: Connection refused");

    JsonNode retried = api.post(
            "/dead-letters/retry",
            "{\"type\":\"task\",\"error\":\"java.lang.IllegalStateException\"}")
        .json();
    assertThat(retried.path("retried").asLong()).isEqualTo(2);
  }

  @Test
  void readyChecksTheDatabaseAndIs503ProblemWhenItIsDown() {
    assertThat(api.get("/health/ready").status()).isEqualTo(200);
    assertThat(api.get("/health/ready").json().path("checks").path("database").asString())
        .isEqualTo("up");

    PGSimpleDataSource nowhere = new PGSimpleDataSource();
    nowhere.setURL("jdbc:postgresql://127.0.0.1:1/none?connectTimeout=2");
    JobClient down = JobClient.builder(nowhere).build();
    try (ApiServer server =
        ApiServer.builder(down).host("127.0.0.1").port(0).build().start()) {
      String base = "http://127.0.0.1:" + server.port();
      Response live =
          api.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/health/live"))
              .build());
      assertThat(live.status()).isEqualTo(200);
      Response ready =
          api.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/health/ready"))
              .build());
      assertThat(ready.status()).isEqualTo(503);
      assertThat(ready.isProblem()).isTrue();
      Response jobs =
          api.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/jobs"))
              .build());
      assertThat(jobs.status()).isEqualTo(503);
      assertThat(jobs.json().path("type").asString()).isEqualTo("urn:pgjobs:problem:unavailable");
    }
  }

  @Test
  void requestIdIsEchoedOrGeneratedAndIsInTheLogLinesOfTheRequest() {
    Logger access = (Logger) LoggerFactory.getLogger("io.pgjobs.server.access");
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    access.addAppender(appender);
    try {
      Response given = api.get("/queues", "X-Request-Id", "trace-abc.123");
      assertThat(given.header("X-Request-Id")).isEqualTo("trace-abc.123");

      Response generated = api.get("/queues");
      assertThat(generated.header("X-Request-Id")).matches("[0-9a-f-]{36}");

      Response unsafe = api.get("/queues", "X-Request-Id", "bad id with spaces");
      assertThat(unsafe.header("X-Request-Id"))
          .isNotEqualTo("bad id with spaces")
          .matches("[0-9a-f-]{36}");

      await()
          .atMost(WAIT)
          .untilAsserted(() -> assertThat(appender.list)
              .anySatisfy(e -> {
                assertThat(e.getMDCPropertyMap()).containsEntry("request_id", "trace-abc.123");
                assertThat(e.getFormattedMessage()).contains("GET /queues 200");
              })
              .anySatisfy(e -> assertThat(e.getMDCPropertyMap())
                  .containsEntry("request_id", generated.header("X-Request-Id"))));
    } finally {
      access.detachAppender(appender);
    }
  }

  @Test
  void aRequestPastTheTimeoutIs504Problem() throws Exception {
    try (ApiServer quick = ApiServer.builder(api.client)
            .host("127.0.0.1")
            .port(0)
            .requestTimeout(Duration.ofMillis(500))
            .build()
            .start();
        Connection lock = api.db.dataSource().getConnection()) {
      lock.setAutoCommit(false);
      try (Statement st = lock.createStatement()) {
        st.execute("LOCK TABLE pgjobs.workers IN ACCESS EXCLUSIVE MODE");
      }
      Response r = api.send(java.net.http.HttpRequest.newBuilder(
              java.net.URI.create("http://127.0.0.1:" + quick.port() + "/workers"))
          .build());
      lock.rollback();

      assertThat(r.status()).isEqualTo(504);
      assertThat(r.isProblem()).isTrue();
      assertThat(r.json().path("type").asString()).isEqualTo("urn:pgjobs:problem:request-timeout");
    }
  }

  @Test
  void internalErrorsAreAnswered500WithoutEchoingTheException() {
    Response r = api.post("/jobs", "{\"type\":\"explosive\",\"payload\":{\"note\":\"x\"}}");

    assertThat(r.status()).isEqualTo(500);
    assertThat(r.isProblem()).isTrue();
    assertThat(r.body()).doesNotContain("hunter2", "secret", "IllegalStateException");
    assertThat(r.json().path("detail").asString()).contains(r.header("X-Request-Id"));
  }
}
