package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobState;
import io.pgjobs.QueueInfo;
import io.pgjobs.server.ApiTestSupport.Response;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Cross-site requests and DNS rebinding against a server without tokens (finding 11): a page of another
 * site must not change anything through the visitor's browser, and a request under a foreign host name
 * (a rebound DNS name) is refused. Requests from programs (no {@code Origin}) and the server's own pages
 * go on working.
 */
class CrossSiteTest {
  static final String EVIL = "http://evil.example";
  static final String ADMIN = "admin-token-0123456789";
  static ApiTestSupport open;
  static ApiTestSupport listed;
  static ApiTestSupport secured;

  @BeforeAll
  static void start() {
    open = ApiTestSupport.start();
    listed = ApiTestSupport.start(b -> b.allowedOrigins(List.of("https://OPS.example.com"))
        .corsOrigins(List.of("https://cors.example.com"))
        .allowedHosts(List.of("jobs.internal", "*.corp.example")));
    secured = ApiTestSupport.start(b -> b.tokens(Map.of(ADMIN, ApiServer.Scope.ADMIN)));
  }

  @AfterAll
  static void stop() {
    for (ApiTestSupport api : new ApiTestSupport[] {open, listed, secured}) {
      if (api != null) {
        api.close();
      }
    }
  }

  // ---------------------------------------------------------------- helpers

  private static String uniqueQueue() {
    return "xs" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** A queued job in a queue of its own (so the queue exists and is not paused). */
  private static UUID queuedJobIn(ApiTestSupport api, String queue) {
    return api.client
        .enqueue(
            TestTypes.TASK,
            new TestTypes.Task("xsite"),
            EnqueueOptions.builder().queue(queue).build())
        .job()
        .id();
  }

  private static boolean paused(ApiTestSupport api, String queue) {
    return api.client.queues().stream()
        .filter(q -> q.name().equals(queue))
        .findFirst()
        .map(QueueInfo::paused)
        .orElseThrow();
  }

  private static JobState state(ApiTestSupport api, UUID id) {
    return api.client.get(id).orElseThrow().state();
  }

  /** A body-less-looking POST a page can send without a preflight: text/plain, as a form or no-cors fetch does. */
  private static Response simplePost(ApiTestSupport api, String path, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(api.uri(path))
        .timeout(Duration.ofSeconds(60))
        .header("Content-Type", "text/plain")
        .POST(HttpRequest.BodyPublishers.ofString("x"));
    if (headers.length > 0) {
      b.headers(headers);
    }
    return api.send(b.build());
  }

  /** A response read from a raw socket: Java's HttpClient cannot send another Host header. */
  record Raw(int status, String head, String body) {
    JsonNode json() {
      return ApiTestSupport.JSON.readTree(body);
    }

    boolean isProblem() {
      return head.toLowerCase(java.util.Locale.ROOT)
          .contains("content-type: application/problem+json");
    }
  }

  /** Sends one HTTP/1.1 request with the given {@code Host} and extra header lines over a socket of its own. */
  static Raw raw(
      ApiTestSupport api, String method, String path, String host, String... headerLines) {
    StringBuilder request =
        new StringBuilder(method + " " + path + " HTTP/1.1\r\nHost: " + host + "\r\n");
    for (String line : headerLines) {
      request.append(line).append("\r\n");
    }
    boolean body = method.equals("POST");
    request.append("Connection: close\r\n");
    if (body) {
      request.append("Content-Type: text/plain\r\nContent-Length: 1\r\n\r\nx");
    } else {
      request.append("\r\n");
    }
    try (Socket s = new Socket("127.0.0.1", api.server.port())) {
      s.setSoTimeout(30_000);
      OutputStream out = s.getOutputStream();
      out.write(request.toString().getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      java.io.ByteArrayOutputStream headBytes = new java.io.ByteArrayOutputStream();
      int c;
      while ((c = in.read()) != -1) {
        headBytes.write(c);
        if (headBytes.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
          break;
        }
      }
      String head = headBytes.toString(StandardCharsets.US_ASCII).strip();
      if (head.startsWith("HTTP/1.1 101")) {
        return new Raw(101, head, ""); // upgraded: the connection stays open, nothing more to read
      }
      String rest = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      if (head.toLowerCase(java.util.Locale.ROOT).contains("transfer-encoding: chunked")) {
        rest = unchunk(rest);
      }
      return new Raw(Integer.parseInt(head.substring(9, 12)), head, rest);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String unchunk(String chunked) {
    StringBuilder out = new StringBuilder();
    int at = 0;
    while (true) {
      int lineEnd = chunked.indexOf("\r\n", at);
      int size = Integer.parseInt(chunked.substring(at, lineEnd).trim(), 16);
      if (size == 0) {
        return out.toString();
      }
      out.append(chunked, lineEnd + 2, lineEnd + 2 + size);
      at = lineEnd + 2 + size + 2;
    }
  }

  private static String self(ApiTestSupport api) {
    return "http://127.0.0.1:" + api.server.port();
  }

  // ---------------------------------------------------------------- cross-site writes

  @Test
  void aForeignOriginCannotPauseAQueueWithATextPlainPost() {
    String queue = uniqueQueue();
    queuedJobIn(open, queue);
    Response r = simplePost(open, "/queues/" + queue + "/pause", "Origin", EVIL);
    assertThat(r.status()).isEqualTo(403);
    assertThat(r.isProblem()).isTrue();
    assertThat(r.json().path("type").asString()).isEqualTo("urn:pgjobs:problem:cross-site-request");
    assertThat(r.json().path("detail").asString()).contains(EVIL, "allowedOrigins");
    assertThat(paused(open, queue)).isFalse();
  }

  @Test
  void aForeignOriginCannotCancelOrResumeAnything() {
    String queue = uniqueQueue();
    UUID job = queuedJobIn(open, queue);
    assertThat(simplePost(open, "/jobs/" + job + "/cancel", "Origin", EVIL).status())
        .isEqualTo(403);
    assertThat(state(open, job)).isEqualTo(JobState.QUEUED);

    String pausedQueue = uniqueQueue();
    queuedJobIn(open, pausedQueue);
    open.client.pauseQueue(pausedQueue);
    assertThat(simplePost(open, "/queues/" + pausedQueue + "/resume", "Origin", "null")
            .status())
        .isEqualTo(403);
    assertThat(paused(open, pausedQueue)).isTrue();
  }

  @Test
  void aForeignOriginCannotEnqueueAGraphNorStartSignalOrCancelAWorkflow() {
    long before = open.client
        .list(io.pgjobs.JobFilter.builder().limit(1000).build())
        .jobs()
        .size();
    assertThat(simplePost(open, "/graphs", "Origin", EVIL).status()).isEqualTo(403);
    assertThat(simplePost(open, "/workflows/anything/start", "Origin", EVIL).status())
        .isEqualTo(403);
    assertThat(
            simplePost(open, "/_api/workflows/anything/start", "Origin", EVIL).status())
        .isEqualTo(403);
    String queue = uniqueQueue();
    UUID job = queuedJobIn(open, queue);
    assertThat(simplePost(open, "/workflows/" + job + "/signals/go", "Origin", EVIL)
            .status())
        .isEqualTo(403);
    assertThat(simplePost(open, "/workflows/" + job + "/cancel", "Origin", EVIL).status())
        .isEqualTo(403);
    assertThat(state(open, job)).isEqualTo(JobState.QUEUED);
    assertThat(
            open.client.list(io.pgjobs.JobFilter.builder().limit(1000).build()).jobs())
        .as("nothing stored but the test's own job")
        .hasSize((int) before + 1);
  }

  @Test
  void aCrossSiteFetchWithoutAnOriginIsRefused() {
    String queue = uniqueQueue();
    queuedJobIn(open, queue);
    Response r = simplePost(open, "/queues/" + queue + "/pause", "Sec-Fetch-Site", "cross-site");
    assertThat(r.status()).isEqualTo(403);
    assertThat(r.json().path("detail").asString()).contains("Sec-Fetch-Site");
    assertThat(paused(open, queue)).isFalse();
  }

  @Test
  void sameOriginAndOriginlessWritesStillWork() {
    String queue = uniqueQueue();
    queuedJobIn(open, queue);
    Response own = simplePost(
        open, "/queues/" + queue + "/pause", "Origin", self(open), "Sec-Fetch-Site", "same-origin");
    assertThat(own.status()).isEqualTo(200);
    assertThat(paused(open, queue)).isTrue();
    assertThat(simplePost(open, "/queues/" + queue + "/resume").status()).isEqualTo(200);
    assertThat(paused(open, queue)).isFalse();
    Raw byName = raw(
        open,
        "POST",
        "/queues/" + queue + "/pause",
        "localhost:" + open.server.port(),
        "Origin: http://localhost:" + open.server.port());
    assertThat(byName.status()).isEqualTo(200);
    assertThat(paused(open, queue)).isTrue();
  }

  @Test
  void aForeignOriginMayStillRead() {
    assertThat(
            open.get("/queues", "Origin", EVIL, "Sec-Fetch-Site", "cross-site").status())
        .isEqualTo(200);
  }

  // ---------------------------------------------------------------- DNS rebinding

  @Test
  void aRebindingHostIsRefusedOnATokenlessServer() {
    String host = "evil.example:" + open.server.port();
    Raw read = raw(open, "GET", "/jobs", host);
    assertThat(read.status()).isEqualTo(421);
    assertThat(read.isProblem()).isTrue();
    assertThat(read.json().path("type").asString())
        .isEqualTo("urn:pgjobs:problem:host-not-allowed");
    assertThat(read.json().path("detail").asString()).contains("evil.example", "allowedHosts");

    // The rebound page is same-origin with itself: Origin and Host agree, and still nothing
    // changes.
    String queue = uniqueQueue();
    queuedJobIn(open, queue);
    Raw write = raw(open, "POST", "/queues/" + queue + "/pause", host, "Origin: http://" + host);
    assertThat(write.status()).isEqualTo(421);
    assertThat(paused(open, queue)).isFalse();
  }

  @Test
  void aRebindingHostIsRefusedAtTheWebSocketUpgrade() {
    String host = "evil.example:" + open.server.port();
    Raw upgrade = raw(
        open,
        "GET",
        "/ws",
        host,
        "Origin: http://" + host,
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==");
    assertThat(upgrade.status()).isEqualTo(421);
  }

  @Test
  void loopbackNamesAndAddressesAreAcceptedAsHost() {
    int port = open.server.port();
    for (String host : new String[] {
      "localhost:" + port,
      "LOCALHOST",
      "app.localhost:" + port,
      "127.0.0.1:" + port,
      "[::1]:" + port,
      "192.168.10.20:" + port
    }) {
      assertThat(raw(open, "GET", "/queues", host).status()).as(host).isEqualTo(200);
    }
  }

  // ---------------------------------------------------------------- settings

  @Test
  void allowedAndCorsOriginsMayWriteAndOthersMayNot() {
    String queue = uniqueQueue();
    queuedJobIn(listed, queue);
    assertThat(simplePost(
                listed,
                "/queues/" + queue + "/pause",
                "Origin",
                "https://ops.example.com",
                "Sec-Fetch-Site",
                "cross-site")
            .status())
        .isEqualTo(200);
    assertThat(paused(listed, queue)).isTrue();
    assertThat(
            simplePost(listed, "/queues/" + queue + "/resume", "Origin", "https://cors.example.com")
                .status())
        .isEqualTo(200);
    assertThat(paused(listed, queue)).isFalse();
    assertThat(
            simplePost(listed, "/queues/" + queue + "/pause", "Origin", "https://other.example.com")
                .status())
        .isEqualTo(403);
    assertThat(paused(listed, queue)).isFalse();
  }

  @Test
  void allowedHostsAreAnsweredAndOtherNamesAreNot() {
    int port = listed.server.port();
    assertThat(raw(listed, "GET", "/queues", "jobs.internal:" + port).status()).isEqualTo(200);
    assertThat(raw(listed, "GET", "/queues", "a.corp.example").status()).isEqualTo(200);
    assertThat(raw(listed, "GET", "/queues", "corp.example.evil.example").status())
        .isEqualTo(421);
    assertThat(
            raw(listed, "GET", "/queues", "jobs.internal.evil.example:" + port).status())
        .isEqualTo(421);
  }

  @Test
  void withTokensTheHostIsNotRestrictedButForeignWritesStillAre() {
    String host = "jobs.example.com:" + secured.server.port();
    assertThat(raw(secured, "GET", "/queues", host, "Authorization: Bearer " + ADMIN)
            .status())
        .isEqualTo(200);
    assertThat(raw(secured, "GET", "/queues", host).status()).isEqualTo(401);
    String queue = uniqueQueue();
    queuedJobIn(secured, queue);
    assertThat(simplePost(
                secured,
                "/queues/" + queue + "/pause",
                "Origin",
                EVIL,
                "Authorization",
                "Bearer " + ADMIN)
            .status())
        .isEqualTo(403);
    assertThat(paused(secured, queue)).isFalse();
  }

  @Test
  void badAllowedOriginsAndHostsAreRefusedByTheBuilderNamingTheValue() {
    ApiServer.Builder b = ApiServer.builder(open.client).port(0);
    assertThatThrownBy(() -> b.allowedOrigins(List.of("ops.example.com")).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("allowed origin")
        .hasMessageContaining("'ops.example.com'");
    b.allowedOrigins(List.of());
    assertThatThrownBy(() -> b.allowedHosts(List.of("http://jobs.internal")).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("allowed host")
        .hasMessageContaining("'http://jobs.internal'");
    assertThatThrownBy(() -> b.allowedHosts(List.of("jobs.internal:8080")).build())
        .hasMessageContaining("no port");
    assertThatThrownBy(() -> b.allowedHosts(null).build())
        .hasMessageContaining("allowedHosts must not be null");
  }
}
