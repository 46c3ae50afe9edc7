package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.server.api.WsApi;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * {@code /ws} with a real WebSocket client ({@code java.net.http}) against a real server and database:
 * the protocol of docs/API.md, tokens at the upgrade and by message, and the seed's dispatch alias.
 */
class WsApiTest {
  static final String ADMIN = "admin-token-0123456789";
  static final String READ = "read-token-0123456789";
  static final Duration WAIT = Duration.ofSeconds(30);

  static ApiTestSupport open;
  static ApiTestSupport secured;

  @BeforeAll
  static void start() {
    open = ApiTestSupport.start();
    secured = ApiTestSupport.start(
        b -> b.tokens(Map.of(ADMIN, ApiServer.Scope.ADMIN, READ, ApiServer.Scope.READ)));
  }

  @AfterAll
  static void stop() {
    try {
      open.close();
    } finally {
      secured.close();
    }
  }

  /** A WebSocket client that keeps every text message and the close code and reason. */
  static final class Socket implements WebSocket.Listener {
    final BlockingQueue<JsonNode> messages = new LinkedBlockingQueue<>();
    final CompletableFuture<String> closed = new CompletableFuture<>();
    private final StringBuilder partial = new StringBuilder();
    WebSocket ws;

    static Socket connect(ApiTestSupport api, String... headers) {
      Socket s = new Socket();
      WebSocket.Builder b = HttpClient.newHttpClient().newWebSocketBuilder().connectTimeout(WAIT);
      for (int i = 0; i < headers.length; i += 2) {
        b.header(headers[i], headers[i + 1]);
      }
      s.ws = b.buildAsync(URI.create("ws://127.0.0.1:" + api.server.port() + "/ws"), s)
          .join();
      return s;
    }

    void send(String json) {
      ws.sendText(json, true).join();
    }

    @Override
    public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
      partial.append(data);
      if (last) {
        messages.add(ApiTestSupport.JSON.readTree(partial.toString()));
        partial.setLength(0);
      }
      webSocket.request(1);
      return null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
      closed.complete(statusCode + " " + reason);
      return null;
    }

    @Override
    public void onError(WebSocket webSocket, Throwable error) {
      closed.complete("error " + error);
    }

    /** The next message that passes {@code test}, skipping others; fails after {@link #WAIT}. */
    JsonNode next(Predicate<JsonNode> test) throws InterruptedException {
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (true) {
        JsonNode m = messages.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
        assertThat(m).as("a matching message within " + WAIT).isNotNull();
        if (test.test(m)) {
          return m;
        }
      }
    }

    JsonNode nextJob(UUID id, String state) throws InterruptedException {
      return next(m -> m.path("type").asString().equals("job")
          && m.path("id").asString().equals(id.toString())
          && (state == null || m.path("job").path("state").asString().equals(state)));
    }

    String awaitClose() {
      return closed.orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS).join();
    }

    void close() {
      ws.abort();
    }
  }

  private static UUID enqueue(ApiTestSupport api, String note) {
    return api.client.enqueue(TestTypes.TASK, new TestTypes.Task(note)).job().id();
  }

  @Test
  void subscribeSendsTheWholeJobAtOnceAndAgainAfterEachChange() throws Exception {
    UUID id = enqueue(open, "ws");
    Socket s = Socket.connect(open);
    try {
      s.send("{\"op\":\"subscribe\",\"jobs\":[\"" + id + "\"]}");
      JsonNode first = s.nextJob(id, null);
      assertThat(first.path("job").path("state").asString()).isEqualTo("queued");
      assertThat(first.path("job").path("payload").path("note").asString()).isEqualTo("ws");

      open.client.cancel(id);

      JsonNode cancelled = s.nextJob(id, "cancelled");
      assertThat(cancelled.path("job").path("finished_at").isNull()).isFalse();
    } finally {
      s.close();
    }
  }

  @Test
  void subscribingAgainAfterTheFinalStateWasMissedGetsTheFinalState() throws Exception {
    UUID id = enqueue(open, "missed");
    open.client.cancel(id); // the change happens while nobody listens
    Socket s = Socket.connect(open);
    try {
      s.send("{\"op\":\"subscribe\",\"jobs\":[\"" + id + "\"]}");
      assertThat(s.nextJob(id, null).path("job").path("state").asString()).isEqualTo("cancelled");
    } finally {
      s.close();
    }
  }

  @Test
  void anUnknownJobIsAnsweredWithNull() throws Exception {
    UUID id = UUID.randomUUID();
    Socket s = Socket.connect(open);
    try {
      s.send("{\"op\":\"subscribe\",\"jobs\":[\"" + id + "\"]}");
      assertThat(s.nextJob(id, null).path("job").isNull()).isTrue();
    } finally {
      s.close();
    }
  }

  @Test
  void badMessagesGetAnErrorSayingWhatIsAllowedAndTheConnectionStaysOpen() throws Exception {
    UUID id = enqueue(open, "after-errors");
    Socket s = Socket.connect(open);
    try {
      s.send("not json");
      assertThat(s.next(m -> m.path("type").asString().equals("error"))
              .path("detail")
              .asString())
          .contains("not valid JSON");
      s.send("{\"op\":\"shout\"}");
      assertThat(s.next(m -> m.path("type").asString().equals("error"))
              .path("detail")
              .asString())
          .contains("unknown op 'shout'", "subscribe", "events");
      s.send("{\"op\":\"subscribe\",\"jobs\":[\"12\"]}");
      assertThat(s.next(m -> m.path("type").asString().equals("error"))
              .path("detail")
              .asString())
          .contains("'12' is not one");
      s.send("{\"op\":\"subscribe\",\"jobs\":\"" + id + "\"}");
      assertThat(s.next(m -> m.path("type").asString().equals("error"))
              .path("detail")
              .asString())
          .contains("must be an array");

      s.send("{\"op\":\"subscribe\",\"jobs\":[\"" + id + "\"]}");
      assertThat(s.nextJob(id, "queued")).isNotNull();
    } finally {
      s.close();
    }
  }

  @Test
  void theEventsOpStreamsTheEventsStreamsEventsStartingWithASnapshot() throws Exception {
    Socket s = Socket.connect(open);
    try {
      s.send("{\"op\":\"events\",\"types\":[\"task\"]}");
      JsonNode snapshot = s.next(m -> m.path("type").asString().equals("event"));
      assertThat(snapshot.path("event").asString()).isEqualTo("snapshot");
      assertThat(snapshot.path("data").has("queues")).isTrue();

      UUID id = enqueue(open, "streamed");
      JsonNode state = s.next(m -> m.path("event").asString().equals("state")
          && m.path("data").path("job_id").asString().equals(id.toString()));
      assertThat(state.path("data").path("state").asString()).isEqualTo("queued");
      assertThat(state.path("id").asString()).isNotEmpty();
    } finally {
      s.close();
    }
  }

  @Test
  void withoutATokenTheFirstSubscriptionClosesTheSocketWith4401() {
    Socket s = Socket.connect(secured);
    s.send("{\"op\":\"subscribe\",\"jobs\":[\"" + UUID.randomUUID() + "\"]}");
    assertThat(s.awaitClose())
        .startsWith(WsApi.CLOSE_UNAUTHORIZED + " ")
        .contains("needs a token", "\"op\":\"auth\"");
  }

  @Test
  void aRejectedTokenInTheAuthMessageClosesTheSocketWith4401() {
    Socket s = Socket.connect(secured);
    s.send("{\"op\":\"auth\",\"token\":\"not-a-valid-token-at-all\"}");
    assertThat(s.awaitClose()).isEqualTo(WsApi.CLOSE_UNAUTHORIZED + " the token is not valid");
  }

  @Test
  void aReadTokenByMessageOrHeaderMayFollowJobs() throws Exception {
    UUID id = enqueue(secured, "secured");
    Socket byMessage = Socket.connect(secured);
    Socket byHeader = Socket.connect(secured, "Authorization", "Bearer " + READ);
    try {
      byMessage.send("{\"op\":\"auth\",\"token\":\"" + READ + "\"}");
      byMessage.send("{\"op\":\"subscribe\",\"jobs\":[\"" + id + "\"]}");
      assertThat(byMessage.nextJob(id, "queued")).isNotNull();
      byHeader.send("{\"op\":\"subscribe\",\"jobs\":[\"" + id + "\"]}");
      assertThat(byHeader.nextJob(id, "queued")).isNotNull();
    } finally {
      byMessage.close();
      byHeader.close();
    }
  }

  @Test
  void aBadAuthorizationHeaderIsRefusedAtTheUpgradeWith401() {
    assertThatThrownBy(
            () -> Socket.connect(secured, "Authorization", "Bearer not-a-valid-token-at-all"))
        .isInstanceOf(CompletionException.class)
        .cause()
        .isInstanceOf(WebSocketHandshakeException.class)
        .satisfies(e -> {
          java.net.http.HttpResponse<?> response = ((WebSocketHandshakeException) e).getResponse();
          assertThat(response.statusCode()).isEqualTo(401);
          assertThat(response.headers().firstValue("Content-Type"))
              .hasValueSatisfying(type -> assertThat(type).startsWith("application/problem+json"));
        });
  }

  @Test
  void aPageOfAnotherOriginIsRefusedAtTheUpgradeWith403AndTheServersOwnOriginIsNot()
      throws Exception {
    assertThatThrownBy(() -> Socket.connect(open, "Origin", "http://evil.example"))
        .isInstanceOf(CompletionException.class)
        .cause()
        .isInstanceOf(WebSocketHandshakeException.class)
        .satisfies(
            e -> assertThat(((WebSocketHandshakeException) e).getResponse().statusCode())
                .isEqualTo(403));

    UUID id = enqueue(open, "same-origin");
    Socket s = Socket.connect(open, "Origin", "http://127.0.0.1:" + open.server.port());
    try {
      s.send("{\"op\":\"subscribe\",\"jobs\":[\"" + id + "\"]}");
      assertThat(s.nextJob(id, "queued")).isNotNull();
    } finally {
      s.close();
    }
  }

  @Test
  void theSeedsDispatchPathIsAnAliasOfDispatch() {
    Response r = open.post("/_api/jobs/task/dispatch", "{\"args\":{\"note\":\"seed\"}}");
    assertThat(r.status()).isEqualTo(201);
    assertThat(r.json().path("type").asString()).isEqualTo("task");
    assertThat(r.json().path("payload").path("note").asString()).isEqualTo("seed");
    assertThat(open.client.get(UUID.fromString(r.json().path("id").asString()))).isPresent();
  }

  @Test
  void theAliasRejectsBadInputAsDispatchDoesAndStoresNothing() {
    List<Long> before = open.rowCounts();
    Response r = open.post("/_api/jobs/task/dispatch", "{\"args\":{},\"bogus\":1}");
    assertThat(r.status()).isEqualTo(400);
    assertThat(r.isProblem()).isTrue();
    assertThat(r.body()).contains("bogus");
    Response unknown = open.post("/_api/jobs/nope/dispatch", "{\"args\":{}}");
    assertThat(unknown.status()).isEqualTo(422);
    assertThat(open.rowCounts()).isEqualTo(before);
  }
}
