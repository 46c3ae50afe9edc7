package io.pgjobs.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.cli.demo.WebhookDeliveryJob;
import io.pgjobs.testkit.JvmProcess;
import io.pgjobs.testkit.Tags;
import io.pgjobs.testkit.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The README's run command, {@code pgjobs demo}, as a real process: it creates the schema, serves the
 * API, and its sample stream runs jobs of all four demo kinds to success (real SMTP to its in-process
 * sink, real image files, a signed webhook to its own receiver).
 */
@Tag(Tags.PROCESS)
class DemoProcessTest {
  private static final Pattern DASHBOARD = Pattern.compile("dashboard\\s+(http://\\S+?)/\\s");
  private static final List<String> KINDS =
      List.of("send_email", "resize_image", "summarize_text", "webhook_delivery");

  private TestDatabase db;
  private JvmProcess demo;

  @BeforeEach
  void createDatabase() {
    db = TestDatabase.create();
  }

  @AfterEach
  void stop() {
    if (demo != null) {
      demo.close();
    }
    db.close();
  }

  /**
   * With no server of its own the demo starts an embedded PostgreSQL 15 whose data survives a restart:
   * a job finished in the first run is still there in the second.
   */
  @Test
  void embeddedPostgresKeepsTheDemosJobsAcrossRestarts(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path home) throws Exception {
    Map<String, String> env =
        Map.of("JAVA_TOOL_OPTIONS", "-Duser.home=" + home, "PGJOBS_SHUTDOWN_GRACE", "1s");
    List<String> args = List.of(
        "demo", "--embedded-postgres", "--port", "0", "--interval", "300ms", "--samples", "1");
    HttpClient http = HttpClient.newHttpClient();
    JsonMapper json = JsonMapper.builder().build();

    demo = JvmProcess.start("pgjobs-demo-embedded-1", Main.class, args, env);
    String base = awaitBase();
    String id = await()
        .atMost(Duration.ofSeconds(90))
        .until(
            () -> {
              JsonNode jobs = json.readTree(
                      get(http, base + "/jobs?state=succeeded&type=summarize_text&limit=1"))
                  .path("jobs");
              return jobs.size() > 0 ? jobs.get(0).path("id").asString() : null;
            },
            found -> found != null);
    assertThat(demo.output()).contains("starting an embedded PostgreSQL 15");
    demo.terminate();
    assertThat(demo.process().waitFor(60, java.util.concurrent.TimeUnit.SECONDS))
        .as(demo.output())
        .isTrue();

    demo = JvmProcess.start("pgjobs-demo-embedded-2", Main.class, args, env);
    String again = awaitBase();
    assertThat(json.readTree(get(http, again + "/jobs/" + id)).path("state").asString())
        .as("a job of the first run, read in the second; output:%n%s", demo.output())
        .isEqualTo("succeeded");
    demo.terminate();
    assertThat(demo.process().waitFor(60, java.util.concurrent.TimeUnit.SECONDS))
        .as(demo.output())
        .isTrue();
    assertThat(java.nio.file.Files.isDirectory(home.resolve(".pgjobs").resolve("demo-postgres")))
        .isTrue();
  }

  private String awaitBase() {
    String base = await()
        .atMost(Duration.ofSeconds(120))
        .until(
            () -> {
              Matcher m = DASHBOARD.matcher(demo.output());
              return m.find() ? m.group(1) : null;
            },
            url -> url != null || !demo.process().isAlive());
    assertThat(base).as("demo printed its URLs; output:%n%s", demo.output()).isNotNull();
    return base;
  }

  private static String get(HttpClient http, String url) throws Exception {
    return http.send(
            HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString())
        .body();
  }

  private static HttpResponse<String> post(HttpClient http, String url, String json)
      throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(url))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** {@code --log-level debug} adds one line per job start and finish. */
  @Test
  void debugLogLevelWritesALinePerJobStartAndFinish() throws Exception {
    demo = JvmProcess.start(
        "pgjobs-demo-debug",
        Main.class,
        List.of(
            "demo", "--port", "0", "--interval", "300ms", "--samples", "1", "--log-level", "debug"),
        Map.of("DATABASE_URL", db.jdbcUrl(), "PGJOBS_SHUTDOWN_GRACE", "1s"));
    awaitBase();
    await()
        .atMost(Duration.ofSeconds(90))
        .untilAsserted(() -> assertThat(demo.output())
            .containsPattern("job \\S+ \\(summarize_text\\) attempt 1/\\d+ started")
            .containsPattern("job \\S+ \\(summarize_text\\) attempt 1/\\d+ finished in \\d+ ms: "));
    assertThat(demo.output()).doesNotContain("Created user", "with password");
    demo.terminate();
    assertThat(demo.process().waitFor(30, java.util.concurrent.TimeUnit.SECONDS))
        .as(demo.output())
        .isTrue();
  }

  private static boolean portFree(int port) {
    try (java.net.ServerSocket socket = new java.net.ServerSocket()) {
      socket.setReuseAddress(true);
      socket.bind(new java.net.InetSocketAddress("127.0.0.1", port));
      return true;
    } catch (java.io.IOException e) {
      return false;
    }
  }

  @Test
  void demoServesTheApiAndRunsJobsOfAllFourKindsToSuccess() throws Exception {
    boolean defaultSmtpPortFree = portFree(1025);
    demo = JvmProcess.start(
        "pgjobs-demo",
        Main.class,
        List.of("demo", "--port", "0", "--interval", "300ms", "--samples", "3"),
        Map.of("DATABASE_URL", db.jdbcUrl(), "PGJOBS_SHUTDOWN_GRACE", "1s"));

    String base = await()
        .atMost(Duration.ofSeconds(90))
        .until(
            () -> {
              Matcher m = DASHBOARD.matcher(demo.output());
              return m.find() ? m.group(1) : null;
            },
            url -> url != null || !demo.process().isAlive());
    assertThat(base).as("demo printed its URLs; output:%n%s", demo.output()).isNotNull();

    HttpClient http = HttpClient.newHttpClient();
    JsonMapper json = JsonMapper.builder().build();
    for (String kind : KINDS) {
      await()
          .atMost(Duration.ofSeconds(90))
          .pollInterval(Duration.ofMillis(250))
          .untilAsserted(() -> {
            HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(
                        URI.create(base + "/jobs?state=succeeded&type=" + kind + "&limit=5"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode())
                .as("GET /jobs for %s; demo output:%n%s", kind, demo.output())
                .isEqualTo(200);
            JsonNode jobs = json.readTree(response.body()).path("jobs");
            assertThat(jobs.size())
                .as("succeeded %s jobs; demo output:%n%s", kind, demo.output())
                .isPositive();
          });
    }
    // The first round's job graph: its four jobs all end succeeded, the e-mail after both of its
    // parents.
    await()
        .atMost(Duration.ofSeconds(90))
        .pollInterval(Duration.ofMillis(250))
        .untilAsserted(() -> {
          JsonNode found = json.readTree(
                  get(http, base + "/jobs?type=send_email&text=demo%20graph%20round%201&limit=1"))
              .path("jobs");
          assertThat(found.size())
              .as("the demo graph's e-mail; output:%n%s", demo.output())
              .isOne();
          JsonNode graph = json.readTree(
              get(http, base + "/jobs/" + found.get(0).path("id").asString() + "/graph"));
          List<String> states = new java.util.ArrayList<>();
          graph
              .path("jobs")
              .forEach(j ->
                  states.add(j.path("name").asString() + " " + j.path("state").asString()));
          assertThat(states)
              .containsExactlyInAnyOrder(
                  "summarize succeeded",
                  "thumbnail succeeded",
                  "email succeeded",
                  "notify succeeded");
        });
    // The first round's workflow run: its start and its three steps recorded, the run succeeded.
    await()
        .atMost(Duration.ofSeconds(90))
        .pollInterval(Duration.ofMillis(250))
        .untilAsserted(() -> {
          JsonNode found =
              json.readTree(get(http, base + "/jobs?type=demo_digest&limit=1")).path("jobs");
          assertThat(found.size())
              .as("the demo's workflow run; output:%n%s", demo.output())
              .isOne();
          JsonNode run = json.readTree(
              get(http, base + "/workflows/" + found.get(0).path("id").asString()));
          assertThat(run.path("state").asString()).as(run.toString()).isEqualTo("succeeded");
          List<String> steps = new java.util.ArrayList<>();
          run.path("steps")
              .forEach(st ->
                  steps.add(st.path("name").asString() + " " + st.path("state").asString()));
          // (started): the run's recorded start, from which its 10-minute deadline counts.
          assertThat(steps)
              .containsExactly("(started) done", "summarize done", "email done", "notify done");
        });
    // The demo's server knows its workflow: it lists it with its example and its runs, starts it by
    // name and refuses to start a plain job type as one.
    JsonNode workflowTypes = json.readTree(get(http, base + "/workflow-types")).path("workflows");
    List<String> workflowNames = new java.util.ArrayList<>();
    workflowTypes.forEach(w -> workflowNames.add(w.path("name").asString()));
    assertThat(workflowNames).as(workflowTypes.toString()).contains("demo_digest");
    JsonNode digestType = null;
    for (JsonNode w : workflowTypes) {
      if (w.path("name").asString().equals("demo_digest")) {
        digestType = w;
      }
    }
    assertThat(digestType.path("input_template").path("to").asString())
        .as("the example input")
        .isEqualTo("ada@example.com");
    assertThat(json.readTree(get(http, base + "/workflows?workflow=demo_digest&state=succeeded"))
            .path("runs")
            .size())
        .isPositive();
    HttpResponse<String> started = post(
        http,
        base + "/workflows/demo_digest/start",
        "{\"input\": " + digestType.path("input_template") + "}");
    assertThat(started.statusCode()).as(started.body()).isEqualTo(201);
    HttpResponse<String> plain =
        post(http, base + "/workflows/summarize_text/start", "{\"input\": {}}");
    assertThat(plain.statusCode()).as(plain.body()).isEqualTo(422);
    assertThat(plain.body()).contains("unknown-workflow");
    HttpResponse<String> metrics = http.send(
        HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(metrics.body())
        .as("client, worker, pool and HTTP metrics in one scrape")
        .contains(
            "worker_jobs_completed_total{",
            "worker_job_duration_seconds",
            "hikaricp_connections",
            "pgjobs_jobs_enqueued_total{kind=\"webhook_delivery\"");

    // The sample webhooks go to a fixed path of the demo's own server (so they survive a restart on
    // the same port), and a webhook enqueued through the API to that path with the demo's secret
    // succeeds.
    JsonNode webhooks = json.readTree(http.send(
                HttpRequest.newBuilder(
                        URI.create(base + "/jobs?state=succeeded&type=webhook_delivery&limit=5"))
                    .build(),
                HttpResponse.BodyHandlers.ofString())
            .body())
        .path("jobs");
    assertThat(webhooks.get(0).path("payload").path("url").asString())
        .isEqualTo(base + "/demo/webhook");
    // Deliveries are limited per target host: the demo's workers declare it in code (so the
    // dashboard's Queues page shows it), and each sample webhook carries its host, its partition.
    assertThat(webhooks.get(0).path("payload").path("host").asString())
        .isEqualTo(URI.create(base).getHost());
    io.pgjobs.QueueLimitsStatus limits = io.pgjobs.JobClient.builder(db.dataSource())
        .build()
        .limitsStatus(WebhookDeliveryJob.QUEUE)
        .orElseThrow();
    assertThat(limits.limits()).isEqualTo(WebhookDeliveryJob.LIMITS);
    assertThat(limits.limits().partitionBy()).isEqualTo("input.host");
    assertThat(limits.limits().partitionConcurrency()).isEqualTo(2);
    assertThat(limits.limits().partitionRate())
        .isEqualTo(io.pgjobs.QueueLimits.Rate.of(5, Duration.ofSeconds(1)));
    assertThat(limits.source()).isEqualTo("code");

    HttpResponse<String> enqueued = http.send(
        HttpRequest.newBuilder(URI.create(base + "/jobs"))
            .header("Content-Type", "application/json")
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"type\":\"webhook_delivery\",\"payload\":{\"url\":\"" + base
                        + "/demo/webhook\",\"body\":\"from the test\",\"secret\":\"demo-webhook-secret\"}}"))
            .build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(enqueued.statusCode()).as(enqueued.body()).isIn(200, 201);
    String webhookId = json.readTree(enqueued.body()).path("id").asString();
    await()
        .atMost(Duration.ofSeconds(60))
        .untilAsserted(() -> assertThat(json.readTree(get(http, base + "/jobs/" + webhookId))
                .path("state")
                .asString())
            .isEqualTo("succeeded"));

    // A second worker beside the demo, as `pgjobs work` with nothing configured, sends its e-mails
    // to the demo's in-process SMTP server (on 1025 when that was free: the default smtp_port of
    // `work`). It alone serves queue "mailroom", and claims only the types it runs, so the demo's
    // jobs are not taken either.
    Matcher smtpLine = Pattern.compile(
            "demo SMTP server \\(in process\\) on 127\\.0\\.0\\.1:(\\d+)")
        .matcher(demo.output());
    assertThat(smtpLine.find()).as(demo.output()).isTrue();
    if (defaultSmtpPortFree) {
      assertThat(smtpLine.group(1)).as("the demo's SMTP port when 1025 is free").isEqualTo("1025");
    }
    try (JvmProcess second = JvmProcess.start(
        "pgjobs-work-beside-demo",
        Main.class,
        defaultSmtpPortFree
            ? List.of("work", "--queues", "mailroom=2")
            : List.of("work", "--queues", "mailroom=2", "--smtp-port", smtpLine.group(1)),
        Map.of(
            "DATABASE_URL",
            db.jdbcUrl(),
            "PGJOBS_POLL_INTERVAL",
            "200ms",
            "PGJOBS_SHUTDOWN_GRACE",
            "1s"))) {
      HttpResponse<String> mail = http.send(
          HttpRequest.newBuilder(URI.create(base + "/jobs"))
              .header("Content-Type", "application/json")
              .POST(
                  HttpRequest.BodyPublishers.ofString(
                      "{\"type\":\"send_email\",\"queue\":\"mailroom\",\"payload\":"
                          + "{\"to\":\"ada@example.com\",\"subject\":\"beside the demo\",\"body\":\"hello\"}}"))
              .build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(mail.statusCode()).as(mail.body()).isIn(200, 201);
      String mailId = json.readTree(mail.body()).path("id").asString();
      await()
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(() -> assertThat(json.readTree(get(http, base + "/jobs/" + mailId))
                  .path("state")
                  .asString())
              .as("second worker output:%n%s", second.output())
              .isEqualTo("succeeded"));
      assertThat(second.output()).doesNotContain("no handler for job type");
    }

    // Quiet by default: no mail sink passwords, no Jetty or Javalin INFO lines, no line per job.
    assertThat(demo.output())
        .doesNotContain(
            "Created user",
            "with password",
            "o.e.jetty",
            "org.eclipse.jetty",
            "io.javalin",
            "attempt 1/3 started");
    HttpResponse<String> docs = http.send(
        HttpRequest.newBuilder(URI.create(base + "/openapi.json")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(docs.statusCode()).isEqualTo(200);

    demo.terminate();
    assertThat(demo.process().waitFor(30, java.util.concurrent.TimeUnit.SECONDS))
        .as("demo stops on SIGTERM; output:%n%s", demo.output())
        .isTrue();
  }
}
