package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code ctx.http()}: a shared client with the worker's timeouts and the job's identity in its headers. */
class JobHttpTest extends PgJobsTestBase {
  /** Where to post, and whether the receiver answers slowly on the first attempt. */
  public record Call(String url, boolean slowFirst) {}

  static final JobType<Call> CALL =
      JobType.of("http_call", Call.class).withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(20)));

  private HttpServer server;
  private final List<Map<String, String>> received = new CopyOnWriteArrayList<>();
  private final CountDownLatch slowRelease = new CountDownLatch(1);

  @BeforeEach
  void receiver() throws Exception {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/hook", exchange -> {
      String attempt = exchange.getRequestHeaders().getFirst(JobHttp.ATTEMPT_HEADER);
      received.add(Map.of(
          "job", String.valueOf(exchange.getRequestHeaders().getFirst(JobHttp.JOB_ID_HEADER)),
          "attempt", String.valueOf(attempt),
          "agent", String.valueOf(exchange.getRequestHeaders().getFirst("User-Agent")),
          "upgrade", String.valueOf(exchange.getRequestHeaders().getFirst("Upgrade")),
          "body", new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8),
          "path", exchange.getRequestURI().getPath()));
      if ("1".equals(attempt) && exchange.getRequestURI().getQuery() != null) {
        try {
          slowRelease.await(10, TimeUnit.SECONDS); // longer than the request timeout
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      byte[] answer = "ok".getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, answer.length);
      exchange.getResponseBody().write(answer);
      exchange.close();
    });
    server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    server.start();
  }

  @AfterEach
  void stopReceiver() {
    slowRelease.countDown();
    server.stop(0);
  }

  private String url(String query) {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/hook"
        + (query == null ? "" : "?" + query);
  }

  private void startWorker() {
    // The slow receiver answers the first attempt after 10 s; the timeout is well under that and
    // well over what the fast answer takes on a loaded machine (500 ms was not, in CI on a slow
    // one).
    start(worker().httpRequestTimeout(Duration.ofSeconds(3)).register(CALL, (ctx, call) -> {
      HttpResponse<String> response = ctx.http()
          .send(
              ctx.http()
                  .request(URI.create(call.url()))
                  .POST(BodyPublishers.ofString("{\"hello\":1}")),
              BodyHandlers.ofString());
      return Map.of("status", response.statusCode(), "body", response.body());
    }));
  }

  @Test
  void aHandlersRequestCarriesTheJobsIdAttemptAndAUserAgent() {
    UUID id = client.enqueue(CALL, new Call(url(null), false)).job().id();
    startWorker();

    Job done = awaitState(id, JobState.SUCCEEDED);
    assertThat(done.output().path("status").asInt()).isEqualTo(200);
    assertThat(received).singleElement().satisfies(r -> {
      assertThat(r.get("job")).isEqualTo(id.toString());
      assertThat(r.get("attempt")).isEqualTo("1");
      // The library's own version, not "dev"; plain HTTP/1.1 (no "Upgrade: h2c" that some receivers
      // refuse).
      assertThat(r.get("agent")).matches("pgjobs/\\d+\\.\\d+\\.\\d+(-SNAPSHOT)? \\(http_call\\)");
      assertThat(r.get("upgrade")).isEqualTo("null");
      assertThat(r.get("body")).isEqualTo("{\"hello\":1}");
    });
  }

  @Test
  void aRequestPastTheRequestTimeoutFailsTheAttemptAndTheRetrySaysItIsTheSecond() {
    UUID id = client.enqueue(CALL, new Call(url("slow"), true)).job().id();
    startWorker();

    Job done = awaitState(id, JobState.SUCCEEDED);
    assertThat(done.attempts()).isEqualTo(2);
    assertThat(done.errors())
        .singleElement()
        .satisfies(e -> assertThat(e.errorClass()).contains("HttpTimeoutException"));
    assertThat(received).extracting(r -> r.get("attempt")).containsExactly("1", "2");
    assertThat(received).extracting(r -> r.get("job")).containsOnly(id.toString());
  }

  @Test
  void timeoutsAreValidated() {
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> worker().httpRequestTimeout(Duration.ofMillis(10)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("HTTP request timeout");
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> worker().httpConnectTimeout(Duration.ofHours(2)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("HTTP connect timeout");
  }
}
