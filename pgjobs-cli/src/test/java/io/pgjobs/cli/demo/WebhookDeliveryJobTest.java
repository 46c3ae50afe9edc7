package io.pgjobs.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.InvalidPayloadException;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.QueueLimits;
import io.pgjobs.QueueLimitsStatus;
import io.pgjobs.cli.demo.WebhookDeliveryJob.WebhookDelivery;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class WebhookDeliveryJobTest extends DemoJobsTestBase {
  static final tools.jackson.databind.json.JsonMapper JSON =
      tools.jackson.databind.json.JsonMapper.builder().build();

  /** One request the receiver got. */
  record Received(
      String body, String signature, String contentType, String jobId, String attempt) {}

  private HttpServer server;
  private final List<Received> received = new CopyOnWriteArrayList<>();
  private final CountDownLatch release = new CountDownLatch(1);

  @BeforeEach
  void startReceiver() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
    server.createContext("/ok", exchange -> answer(exchange, 204));
    AtomicInteger flakyCalls = new AtomicInteger();
    server.createContext(
        "/flaky", exchange -> answer(exchange, flakyCalls.incrementAndGet() == 1 ? 500 : 200));
    server.createContext("/missing", exchange -> answer(exchange, 404));
    server.createContext("/slow", exchange -> {
      record(exchange);
      try {
        release.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      exchange.sendResponseHeaders(200, -1);
      exchange.close();
    });
    server.start();
  }

  @AfterEach
  void stopReceiver() {
    release.countDown();
    server.stop(0);
  }

  private void record(HttpExchange exchange) throws IOException {
    var headers = exchange.getRequestHeaders();
    received.add(new Received(
        new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8),
        headers.getFirst("X-Signature-SHA256"),
        headers.getFirst("Content-Type"),
        headers.getFirst("X-Pgjobs-Job-Id"),
        headers.getFirst("X-Pgjobs-Attempt")));
  }

  private void answer(HttpExchange exchange, int status) throws IOException {
    record(exchange);
    byte[] body = ("status " + status).getBytes(StandardCharsets.UTF_8);
    exchange.sendResponseHeaders(status, status == 204 ? -1 : body.length);
    if (status != 204) {
      exchange.getResponseBody().write(body);
    }
    exchange.close();
  }

  private String url(String path) {
    return "http://127.0.0.1:" + server.getAddress().getPort() + path;
  }

  private static String hmacSha256Hex(String secret, String body) throws Exception {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
    return HexFormat.of().formatHex(mac.doFinal(body.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void postsTheBodyWithAnHmacSignatureTheReceiverCanVerify() throws Exception {
    startWorker(Map.of());
    String body = "{\"event\":\"order.paid\",\"order\":42}";

    var id = client
        .enqueue(WebhookDeliveryJob.TYPE, new WebhookDelivery(url("/ok"), body, "s3cret-key"))
        .job()
        .id();

    Job job = awaitState(id, JobState.SUCCEEDED);
    assertThat(received).singleElement().satisfies(r -> {
      assertThat(r.body()).isEqualTo(body);
      assertThat(r.signature()).isEqualTo(hmacSha256Hex("s3cret-key", body));
      assertThat(r.contentType()).isEqualTo("application/json");
      assertThat(r.jobId()).isEqualTo(id.toString());
      assertThat(r.attempt()).isEqualTo("1");
    });
    assertThat(job.output().get("status").asInt()).isEqualTo(204);
  }

  @Test
  void acceptsAnObjectOrArrayBodyAndSendsItAsJson() throws Exception {
    startWorker(Map.of());
    var payload = JSON.readTree("{\"url\":\"" + url("/ok") + "\",\"secret\":\"k\","
        + "\"body\":{\"event\":\"order.paid\",\"order\":42}}");
    var arrayPayload =
        JSON.readTree("{\"url\":\"" + url("/ok") + "\",\"secret\":\"k\",\"body\":[1,2]}");

    var id = client
        .enqueue("webhook_delivery", payload, EnqueueOptions.DEFAULTS)
        .job()
        .id();
    awaitState(id, JobState.SUCCEEDED);
    var id2 = client
        .enqueue("webhook_delivery", arrayPayload, EnqueueOptions.DEFAULTS)
        .job()
        .id();
    awaitState(id2, JobState.SUCCEEDED);

    assertThat(received)
        .extracting(Received::body)
        .containsExactly("{\"event\":\"order.paid\",\"order\":42}", "[1,2]");
    assertThat(received).extracting(Received::contentType).containsOnly("application/json");
    assertThat(received.get(0).signature())
        .isEqualTo(hmacSha256Hex("k", "{\"event\":\"order.paid\",\"order\":42}"));
  }

  @Test
  void retriesAfterAServerErrorAndSucceedsOnTheNextAttempt() {
    startWorker(Map.of());

    var id = client
        .enqueue(WebhookDeliveryJob.TYPE, new WebhookDelivery(url("/flaky"), "ping", "k"))
        .job()
        .id();

    Job job = awaitState(id, JobState.SUCCEEDED);
    assertThat(job.attempts()).isEqualTo(2);
    assertThat(job.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("error");
      assertThat(e.message()).contains("answered 500").doesNotContain("will retry");
    });
    assertThat(received).extracting(Received::attempt).containsExactly("1", "2");
    assertThat(received)
        .extracting(Received::contentType)
        .containsOnly("text/plain; charset=utf-8");
  }

  @Test
  void failsAtOnceWithoutRetryWhenTheReceiverAnswers404() {
    startWorker(Map.of());

    var id = client
        .enqueue(WebhookDeliveryJob.TYPE, new WebhookDelivery(url("/missing"), "{}", "k"))
        .job()
        .id();

    Job job = awaitState(id, JobState.FAILED);
    assertThat(job.attempts()).isEqualTo(1);
    assertThat(job.maxAttempts()).isEqualTo(3);
    assertThat(job.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("discarded");
      assertThat(e.message()).contains("answered 404").contains("status 404");
    });
    assertThat(received).hasSize(1);
  }

  @Test
  void aReceiverThatDoesNotAnswerInTimeFailsTheAttemptForRetry() {
    startWorker(Map.of("webhook_timeout", "300ms"));

    var id = client
        .enqueue(WebhookDeliveryJob.TYPE, new WebhookDelivery(url("/slow"), "{}", "k"))
        .job()
        .id();

    Job job = awaitState(id, JobState.RETRYING);
    assertThat(job.errors())
        .singleElement()
        .satisfies(e -> assertThat(e.message()).contains("did not answer within 300 ms"));
  }
  /** The partition of a waiting job ({@code jobs.limit_key}), or null if it has none. */
  private static String partitionKey(java.util.UUID id) {
    try (var c = db.dataSource().getConnection();
        var ps = c.prepareStatement("SELECT limit_key FROM pgjobs.jobs WHERE id = ?")) {
      ps.setObject(1, id);
      try (var rs = ps.executeQuery()) {
        assertThat(rs.next()).as("job %s is waiting", id).isTrue();
        return rs.getString(1);
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void theWorkersDeclareAtMostTwoDeliveriesAtOnceToOneHost() throws Exception {
    startWorker(Map.of("webhook_timeout", "20s"));
    QueueLimitsStatus declared = client.limitsStatus(WebhookDeliveryJob.QUEUE).orElseThrow();
    assertThat(declared.limits())
        .isEqualTo(QueueLimits.builder()
            .partitionBy("input.host")
            .partitionConcurrency(2)
            .partitionRate(5, Duration.ofSeconds(1))
            .build());
    assertThat(declared.source()).isEqualTo("code");

    List<java.util.UUID> ids = new java.util.ArrayList<>();
    for (int i = 0; i < 4; i++) {
      ids.add(client
          .enqueue(WebhookDeliveryJob.TYPE, new WebhookDelivery(url("/slow"), "{}", "k"))
          .job()
          .id());
    }
    // Two start; the others wait for their host's turn, however many lanes the worker has free.
    await().atMost(Duration.ofSeconds(30)).until(() -> received.size() == 2);
    await()
        .during(Duration.ofMillis(1500))
        .atMost(Duration.ofSeconds(5))
        .until(() -> received.size() == 2);
    QueueLimitsStatus.Partition host =
        client.limitsStatus(WebhookDeliveryJob.QUEUE).orElseThrow().partitions().getFirst();
    assertThat(host.partition()).isEqualTo("127.0.0.1");
    assertThat(host.running()).isEqualTo(2);
    assertThat(host.waiting()).isEqualTo(2);
    assertThat(host.waitingFor()).isEqualTo(QueueLimitsStatus.PARTITION_BUSY);

    release.countDown();
    ids.forEach(id -> awaitState(id, JobState.SUCCEEDED));
    assertThat(received).hasSize(4);
  }

  @Test
  void aDeliveryIsPartitionedByItsHostHoweverItIsEnqueued() {
    // No worker: the queue's rule as the demo's workers declare it, set here so the jobs stay
    // waiting.
    client.setLimits(WebhookDeliveryJob.QUEUE, DemoJobs.limits().get(WebhookDeliveryJob.QUEUE));
    try {
      // In Java: the host comes from the url, lowercase, and is stored in the payload.
      Job typed = client
          .enqueue(
              WebhookDeliveryJob.TYPE,
              new WebhookDelivery("https://A.Example:8443/hooks", "{}", "k"))
          .job();
      assertThat(typed.queue()).isEqualTo(WebhookDeliveryJob.QUEUE);
      assertThat(typed.payload().path("host").asString()).isEqualTo("a.example");
      assertThat(partitionKey(typed.id())).isEqualTo("a.example");

      // As the HTTP API and `pgjobs enqueue` do: a JSON payload with its host.
      Job byName = client
          .enqueue(
              "webhook_delivery",
              Map.of("url", "http://b.example/x", "body", "{}", "secret", "k", "host", "b.example"),
              EnqueueOptions.DEFAULTS)
          .job();
      assertThat(byName.queue()).isEqualTo(WebhookDeliveryJob.QUEUE);
      assertThat(partitionKey(byName.id())).isEqualTo("b.example");

      // Without it, by a client that knows the type (the demo's API server): the type computes the
      // partition from the payload as read, the url's host.
      Job hostless = client
          .enqueue(
              "webhook_delivery",
              Map.of("url", "http://b.example/x", "body", "{}", "secret", "k"),
              EnqueueOptions.DEFAULTS)
          .job();
      assertThat(partitionKey(hostless.id())).isEqualTo("b.example");

      // Without it, by a client that does not know the type (another service, naming the queue):
      // the queue's rule
      // finds
      // no host field, and the job joins the partition of the jobs of no host, limited like one
      // host.
      Job unknownType = io.pgjobs.JobClient.builder(db.dataSource())
          .build()
          .enqueue(
              "webhook_delivery",
              Map.of("url", "http://b.example/x", "body", "{}", "secret", "k"),
              EnqueueOptions.builder().queue(WebhookDeliveryJob.QUEUE).build())
          .job();
      assertThat(partitionKey(unknownType.id())).isEqualTo("");

      // A host that is not the url's would escape its host's limits: refused.
      assertThatThrownBy(() -> client.enqueue(
              "webhook_delivery",
              Map.of("url", "http://b.example/x", "body", "{}", "secret", "k", "host", "c.example"),
              EnqueueOptions.DEFAULTS))
          .isInstanceOf(InvalidPayloadException.class)
          .hasMessageContaining("host")
          .hasMessageContaining("must be the url's host, lowercase ('b.example')");
    } finally {
      client.clearLimits(WebhookDeliveryJob.QUEUE);
    }
  }
}
