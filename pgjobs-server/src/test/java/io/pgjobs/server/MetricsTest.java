package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgjobs.metrics.MicrometerJobMetrics;
import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class MetricsTest {
  static final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  static ApiTestSupport api;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start(b -> b.meterRegistry(registry));
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  /** The value of the first sample line named {@code name} whose labels contain every one of {@code labels}. */
  static double sample(String scrape, String name, String... labels) {
    return Arrays.stream(scrape.split("\n"))
        .filter(l -> l.startsWith(name + "{") || l.startsWith(name + " "))
        .filter(l -> Arrays.stream(labels).allMatch(l::contains))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1)))
        .findFirst()
        .orElse(Double.NaN);
  }

  @Test
  void workerMetricsOnTheSharedRegistryAppearWithRealValues() {
    String queue = "m" + UUID.randomUUID().toString().substring(0, 8);
    for (String note : List.of("ok", "ok", "ok", "fail")) {
      assertThat(api.post(
                  "/jobs",
                  "{\"type\":\"task\",\"payload\":{\"note\":\"" + note + "\"},\"queue\":\"" + queue
                      + "\",\"max_attempts\":1}")
              .status())
          .isEqualTo(201);
    }
    try (JobWorker worker = JobWorker.builder(api.db.dataSource())
        .metrics(new MicrometerJobMetrics(registry))
        .register(TestTypes.TASK, (ctx, task) -> {
          if (task.note().equals("fail")) {
            throw new IllegalStateException("failing on purpose");
          }
          return null;
        })
        .queue(queue, 2)
        .build()
        .start()) {
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> sample(
                      api.get("/metrics").body(),
                      "worker_jobs_completed_total",
                      "kind=\"task\"",
                      "outcome=\"succeeded\"")
                  == 3.0
              && sample(
                      api.get("/metrics").body(),
                      "worker_jobs_completed_total",
                      "kind=\"task\"",
                      "outcome=\"failed\"")
                  == 1.0);
    }

    Response metrics = api.get("/metrics");
    assertThat(metrics.status()).isEqualTo(200);
    assertThat(metrics.contentType()).startsWith("text/plain");
    String text = metrics.body();
    assertThat(sample(text, "worker_jobs_started_total", "kind=\"task\"")).isEqualTo(4.0);
    assertThat(sample(
            text, "worker_job_duration_seconds_count", "kind=\"task\"", "outcome=\"succeeded\""))
        .isEqualTo(3.0);
    assertThat(sample(
            text, "worker_job_duration_seconds_sum", "kind=\"task\"", "outcome=\"succeeded\""))
        .isGreaterThan(0.0);
    assertThat(text).contains("worker_job_duration_seconds_bucket{");
    assertThat(text)
        .contains(
            "# TYPE worker_jobs_started_total counter",
            "# TYPE worker_jobs_completed_total counter");
  }

  @Test
  void httpRequestJvmAndQueueDepthMetricsAreExposed() {
    String queue = "depth" + UUID.randomUUID().toString().substring(0, 8);
    api.post(
        "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"wait\"},\"queue\":\"" + queue + "\"}");
    api.post(
        "/jobs", "{\"type\":\"task\",\"payload\":{\"note\":\"wait\"},\"queue\":\"" + queue + "\"}");
    api.get("/jobs/" + UUID.randomUUID());

    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
      String text = api.get("/metrics").body();
      assertThat(sample(text, "pgjobs_queue_depth", "queue=\"" + queue + "\"")).isEqualTo(2.0);
      assertThat(sample(
              text,
              "http_server_requests_seconds_count",
              "method=\"POST\"",
              "uri=\"/jobs\"",
              "status=\"201\""))
          .isGreaterThanOrEqualTo(2.0);
      assertThat(sample(
              text, "http_server_requests_seconds_count", "uri=\"/jobs/{id}\"", "status=\"404\""))
          .isGreaterThanOrEqualTo(1.0);
      assertThat(text)
          .contains("jvm_memory_used_bytes{", "jvm_threads_live_threads", "process_uptime_seconds");
    });
  }

  @Test
  void unmatchedRoutesAreLabelledNotFoundAndOtherUnroutedAnswersUnknownNeverStatic() {
    api.get("/no/such/route");
    api.get("/dashboard/no-such-asset.js");
    api.send(java.net.http.HttpRequest.newBuilder(api.uri("/jobs"))
        .method("DELETE", java.net.http.HttpRequest.BodyPublishers.noBody())
        .build());

    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
      String text = api.get("/metrics").body();
      assertThat(sample(
              text,
              "http_server_requests_seconds_count",
              "method=\"GET\"",
              "uri=\"NOT_FOUND\"",
              "status=\"404\""))
          .isGreaterThanOrEqualTo(2.0);
      assertThat(sample(
              text,
              "http_server_requests_seconds_count",
              "method=\"DELETE\"",
              "uri=\"/jobs\"",
              "status=\"405\""))
          .isEqualTo(1.0);
      assertThat(text)
          .doesNotContainPattern(
              "http_server_requests_seconds_count\\{[^}]*uri=\"static\"[^}]*status=\"4");
    });
  }
}
