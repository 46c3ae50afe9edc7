package io.pgjobs.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.cli.demo.WebhookDeliveryJob.WebhookDelivery;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
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
}
