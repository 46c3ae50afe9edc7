package io.pgjobs.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.icegreen.greenmail.util.GreenMail;
import com.icegreen.greenmail.util.ServerSetupTest;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.cli.demo.DemoJobs;
import io.pgjobs.cli.demo.ResizeImageJob;
import io.pgjobs.cli.demo.ResizeImageJob.ResizeImage;
import io.pgjobs.cli.demo.SendEmailJob;
import io.pgjobs.cli.demo.SendEmailJob.SendEmail;
import io.pgjobs.cli.demo.SummarizeTextJob;
import io.pgjobs.cli.demo.SummarizeTextJob.SummarizeText;
import io.pgjobs.cli.demo.WebhookDeliveryJob;
import io.pgjobs.cli.demo.WebhookDeliveryJob.WebhookDelivery;
import io.pgjobs.testkit.Await;
import io.pgjobs.testkit.JvmProcess;
import io.pgjobs.testkit.Tags;
import io.pgjobs.testkit.TestDatabase;
import java.awt.image.BufferedImage;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** {@code pgjobs work} as a real child process: runs every kind to success, stops gracefully on SIGTERM. */
@Tag(Tags.PROCESS)
class WorkProcessTest {
  private static final Duration DEADLINE = Duration.ofSeconds(90);

  @TempDir
  Path dir;

  private final String database =
      "pgjobs_cli_work_" + UUID.randomUUID().toString().substring(0, 8);
  private final List<String> signatures = new CopyOnWriteArrayList<>();
  private final CountDownLatch releaseSlow = new CountDownLatch(1);
  private final CountDownLatch slowArrived = new CountDownLatch(1);
  private GreenMail smtp;
  private HttpServer receiver;
  private JvmProcess worker;
  private HikariDataSource pool;

  @BeforeEach
  void startServers() throws Exception {
    smtp = new GreenMail(ServerSetupTest.SMTP.dynamicPort());
    smtp.start();
    receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    receiver.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
    receiver.createContext("/hook", exchange -> {
      exchange.getRequestBody().readAllBytes();
      signatures.add(exchange.getRequestHeaders().getFirst("X-Signature-SHA256"));
      exchange.sendResponseHeaders(200, -1);
      exchange.close();
    });
    receiver.createContext("/slow", exchange -> {
      exchange.getRequestBody().readAllBytes();
      try {
        slowArrived.countDown();
        releaseSlow.await(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      exchange.sendResponseHeaders(200, -1);
      exchange.close();
    });
    receiver.start();
  }

  @AfterEach
  void stopEverything() throws Exception {
    releaseSlow.countDown();
    if (worker != null) {
      worker.close();
    }
    if (pool != null) {
      pool.close();
    }
    receiver.stop(0);
    smtp.stop();
    try (Connection c = DriverManager.getConnection(TestDatabase.DEFAULT_ADMIN_URL);
        Statement st = c.createStatement()) {
      st.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
    }
  }

  @Test
  void workCreatesTheDatabaseRunsEveryKindToSuccessAndStopsGracefullyOnSigterm() throws Exception {
    worker = JvmProcess.start(
        "work-" + database,
        Main.class,
        List.of("work", "--concurrency", "4"),
        Map.of(
            "DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/" + database,
            "PGJOBS_SMTP_HOST", "127.0.0.1",
            "PGJOBS_SMTP_PORT", String.valueOf(smtp.getSmtp().getPort()),
            "PGJOBS_SMTP_FROM", "worker@pgjobs.test",
            "PGJOBS_POLL_INTERVAL", "200ms",
            "PGJOBS_SHUTDOWN_GRACE", "30s",
            "WORKER_METRICS_BIND_ADDR", "127.0.0.1:0",
            "LOG_FORMAT", "json"));
    await()
        .atMost(DEADLINE)
        .until(() -> worker.output().contains("running on") || !worker.process().isAlive());
    assertThat(worker.process().isAlive()).as(worker.output()).isTrue();
    JobClient client = client();

    Path image = dir.resolve("in.png");
    ImageIO.write(new BufferedImage(64, 48, BufferedImage.TYPE_INT_RGB), "png", image.toFile());
    Path thumb = dir.resolve("thumb.jpg");
    String hook = "http://127.0.0.1:" + receiver.getAddress().getPort();
    List<UUID> ids = List.of(
        client
            .enqueue(SendEmailJob.TYPE, new SendEmail("grace@example.com", "From the worker", "Hi"))
            .job()
            .id(),
        client
            .enqueue(
                ResizeImageJob.TYPE, new ResizeImage(image.toString(), 16, 12, thumb.toString()))
            .job()
            .id(),
        client
            .enqueue(
                SummarizeTextJob.TYPE, new SummarizeText("Jobs run. Jobs succeed. Cats nap.", 1))
            .job()
            .id(),
        client
            .enqueue(
                WebhookDeliveryJob.TYPE, new WebhookDelivery(hook + "/hook", "{\"a\":1}", "key"))
            .job()
            .id(),
        client
            .enqueue(EchoJobs.ECHO, new EchoJobs.Echo("from a ServiceLoader provider"))
            .job()
            .id());

    await()
        .atMost(DEADLINE)
        .pollInterval(Duration.ofMillis(100))
        .untilAsserted(() -> assertThat(ids)
            .as(worker.output())
            .allSatisfy(id ->
                assertThat(client.get(id).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED)));
    assertThat(smtp.getReceivedMessages())
        .singleElement()
        .satisfies(m -> assertThat(m.getSubject()).isEqualTo("From the worker"));
    BufferedImage resized = ImageIO.read(thumb.toFile());
    assertThat(resized.getWidth()).isEqualTo(16);
    assertThat(resized.getHeight()).isEqualTo(12);
    assertThat(client.get(ids.get(2)).orElseThrow().output().get("summary").asString())
        .isEqualTo("Jobs run.");
    assertThat(signatures).containsExactly(WebhookDeliveryJob.signature("key", "{\"a\":1}"));
    assertThat(client.get(ids.get(4)).orElseThrow().output().get("echo").asString())
        .isEqualTo("from a ServiceLoader provider");

    // A job still running at SIGTERM is allowed to finish within the shutdown grace.
    UUID slow = client
        .enqueue(WebhookDeliveryJob.TYPE, new WebhookDelivery(hook + "/slow", "{}", "key"))
        .job()
        .id();
    Await.awaitState(client::get, slow, Job::state, JobState.RUNNING, DEADLINE);
    // Claimed is not yet started (a worker claims a little ahead): wait for the handler's request.
    assertThat(slowArrived.await(DEADLINE.toSeconds(), TimeUnit.SECONDS)).isTrue();
    worker.terminate();
    await().atMost(DEADLINE).until(() -> worker.output().contains("stopping: 1 jobs running"));
    releaseSlow.countDown();

    assertThat(worker.process().waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS))
        .as(worker.output())
        .isTrue();
    assertThat(worker.process().exitValue())
        .as("the exit code of a JVM ended by SIGTERM")
        .isEqualTo(143);
    Job finished = client.get(slow).orElseThrow();
    assertThat(finished.state()).as(worker.output()).isEqualTo(JobState.SUCCEEDED);
    assertThat(finished.attempts()).isEqualTo(1);

    JsonMapper json = JsonMapper.builder().build();
    List<String> logLines = worker.output().lines().filter(l -> !l.isBlank()).toList();
    assertThat(logLines)
        .as("with LOG_FORMAT=json every line is a JSON log event")
        .isNotEmpty()
        .allSatisfy(line -> assertThat(line).startsWith("{"));
    assertThat(logLines)
        .allSatisfy(line -> assertThat(json.readTree(line).has("@timestamp")).isTrue());
    assertThat(logLines).anySatisfy(line -> {
      JsonNode event = json.readTree(line);
      assertThat(event.get("level").asString()).isEqualTo("INFO");
      assertThat(event.get("message").asString().toLowerCase(Locale.ROOT))
          .matches("worker .* stopped");
    });
  }

  /** Starts {@code pgjobs work} with {@code metricsBind} and waits until it runs or exits. */
  private JvmProcess startWork(String metricsBind) {
    JvmProcess process = JvmProcess.start(
        "work-" + database,
        Main.class,
        List.of("work", "--concurrency", "2", "--metrics-bind", metricsBind),
        Map.of(
            "DATABASE_URL",
            "postgresql://postgres@127.0.0.1:5432/" + database,
            "PGJOBS_POLL_INTERVAL",
            "200ms"));
    await()
        .atMost(DEADLINE)
        .until(
            () -> process.output().contains("running on") || !process.process().isAlive());
    return process;
  }

  private static java.net.http.HttpResponse<String> get(String url) throws Exception {
    try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
      return http.send(
          java.net.http.HttpRequest.newBuilder(java.net.URI.create(url)).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
    }
  }

  @Test
  void theWorkerProcessServesItsOwnMetricsAndHealthOnItsMetricsPort() throws Exception {
    worker = startWork("127.0.0.1:0");
    assertThat(worker.process().isAlive()).as(worker.output()).isTrue();
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(
            "worker metrics on (http://127\\.0\\.0\\.1:\\d+)/metrics")
        .matcher(worker.output());
    assertThat(m.find()).as(worker.output()).isTrue();
    String base = m.group(1);
    JobClient client = client();
    UUID id =
        client.enqueue(EchoJobs.ECHO, new EchoJobs.Echo("scrape me")).job().id();
    Await.awaitState(client::get, id, Job::state, JobState.SUCCEEDED, DEADLINE);

    await("the success is counted")
        .atMost(DEADLINE)
        .untilAsserted(
            () -> assertThat(get(base + "/metrics").body())
                .containsPattern(
                    "worker_jobs_completed_total\\{[^}]*kind=\"echo\"[^}]*outcome=\"succeeded\"[^}]*} 1\\.0"));
    String metrics = get(base + "/metrics").body();
    assertThat(metrics)
        .contains(
            "worker_jobs_started_total",
            "worker_job_duration_seconds",
            "hikaricp_connections",
            "jvm_memory_used_bytes",
            "pgjobs_worker_stuck_lanes");
    assertThat(get(base + "/health/live").statusCode()).isEqualTo(200);
    java.net.http.HttpResponse<String> ready = get(base + "/health/ready");
    assertThat(ready.statusCode()).isEqualTo(200);
    assertThat(ready.body()).contains("\"database\":\"up\"");
  }

  @Test
  void metricsBindOffServesNothing() throws Exception {
    worker = startWork("off");
    assertThat(worker.process().isAlive()).as(worker.output()).isTrue();
    assertThat(worker.output()).doesNotContain("worker metrics on");
  }

  @Test
  void aTakenMetricsPortStopsTheWorkerAtStartWithAClearMessage() throws Exception {
    try (java.net.ServerSocket taken =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      worker = startWork("127.0.0.1:" + taken.getLocalPort());
      assertThat(worker.process().waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS))
          .as(worker.output())
          .isTrue();
      assertThat(worker.process().exitValue()).isEqualTo(1);
      assertThat(worker.output())
          .contains(
              "cannot listen on 127.0.0.1:" + taken.getLocalPort(),
              "worker_metrics_bind",
              "--metrics-bind");
    }
  }

  private JobClient client() {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://127.0.0.1:5432/" + database + "?user=postgres");
    config.setMaximumPoolSize(4);
    pool = new HikariDataSource(config);
    return JobClient.builder(pool).knownTypes(DemoJobs.types()).build();
  }
}
