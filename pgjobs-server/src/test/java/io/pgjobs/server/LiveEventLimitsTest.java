package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.server.WsApiTest.Socket;
import io.pgjobs.server.events.EventFilter;
import io.pgjobs.server.events.EventHub;
import io.pgjobs.server.events.EventLimits;
import io.pgjobs.server.events.EventSink;
import io.pgjobs.testkit.TestDatabase;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The limits of live events ({@link EventLimits}): a connection or subscription over a limit is refused
 * with the reason (WebSocket close 1013 or an error message, 429 problem for {@code /events}), and a
 * client that stops reading is disconnected while its queue stays within its capacity.
 */
class LiveEventLimitsTest {
  static final String TOKEN = "events-token-0123456789";
  static final String OTHER = "other-token-0123456789";

  private static UUID enqueue(ApiTestSupport api) {
    return api.client
        .enqueue(TestTypes.TASK, new TestTypes.Task("limits"))
        .job()
        .id();
  }

  private static String subscribe(UUID... ids) {
    return "{\"op\":\"subscribe\",\"jobs\":" + ApiTestSupport.JSON.writeValueAsString(List.of(ids))
        + "}";
  }

  /**
   * A socket the server has counted. The handshake's answer reaches the client before the server's
   * open handler has counted the connection, and on a loaded machine a later connection's handler can
   * run first (then that one is counted and this one refused): an answer to a subscription proves the
   * handler ran.
   */
  private static Socket counted(ApiTestSupport api, String... headers) throws InterruptedException {
    Socket s = Socket.connect(api, headers);
    UUID id = enqueue(api);
    s.send(subscribe(id));
    assertThat(s.nextJob(id, "queued")).as("the server counted the connection").isNotNull();
    return s;
  }

  @Test
  void aConnectionOverTheServerLimitIsClosedWithTheReason() throws Exception {
    try (ApiTestSupport api =
        ApiTestSupport.start(b -> b.eventLimits(EventLimits.DEFAULTS.withConnections(2, 2)))) {
      Socket a = counted(api);
      Socket b = counted(api);
      try {
        Socket c = Socket.connect(api);
        assertThat(c.awaitClose())
            .isEqualTo("1013 live event connections: this server's limit of 2 is reached;"
                + " try again later");

        Response sse = api.get("/events", "Accept", "text/event-stream");
        assertThat(sse.status()).isEqualTo(429);
        assertThat(sse.contentType()).startsWith("application/problem+json");
        assertThat(ApiTestSupport.JSON.readTree(sse.body()).path("detail").asString())
            .isEqualTo(
                "live event connections: this server's limit of 2 is reached; try again later");

        // A closed connection gives its place back.
        a.close();
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
          Socket d = Socket.connect(api);
          UUID id = enqueue(api);
          d.send(subscribe(id));
          assertThat(d.nextJob(id, "queued")).isNotNull();
          d.close();
        });
      } finally {
        a.close();
        b.close();
      }
    }
  }

  @Test
  void theBrowserPageOfEventsTakesNoStreamPlace() throws Exception {
    try (ApiTestSupport api =
        ApiTestSupport.start(b -> b.eventLimits(EventLimits.DEFAULTS.withConnections(1, 1)))) {
      for (int i = 0; i < 3; i++) {
        assertThat(api.get("/events", "Accept", "text/html").status()).isEqualTo(200);
      }
      try (SseSubscriber events = new SseSubscriber(api.http, api.uri("/events"))) {
        assertThat(events.status()).isEqualTo(200);
        assertThat(events.next(Duration.ofSeconds(30)).name()).isEqualTo("snapshot");
      }
    }
  }

  @Test
  void aTokenOverItsConnectionLimitIsClosedWithTheReason() throws Exception {
    try (ApiTestSupport api = ApiTestSupport.start(
        b -> b.tokens(Map.of(TOKEN, ApiServer.Scope.READ, OTHER, ApiServer.Scope.READ))
            .eventLimits(EventLimits.DEFAULTS.withConnections(10, 1)))) {
      Socket first = counted(api, "Authorization", "Bearer " + TOKEN);
      Socket second = Socket.connect(api);
      Socket other = Socket.connect(api);
      try {
        second.send("{\"op\":\"auth\",\"token\":\"" + TOKEN + "\"}");
        assertThat(second.awaitClose())
            .isEqualTo("1013 live event connections: this token's limit of 1 is reached;"
                + " close one first");

        Response sse =
            api.get("/events", "Accept", "text/event-stream", "Authorization", "Bearer " + TOKEN);
        assertThat(sse.status()).isEqualTo(429);
        assertThat(sse.body()).contains("this token's limit of 1 is reached");

        // Another token has its own count.
        other.send("{\"op\":\"auth\",\"token\":\"" + OTHER + "\"}");
        UUID id = enqueue(api);
        other.send(subscribe(id));
        assertThat(other.nextJob(id, "queued")).isNotNull();
      } finally {
        first.close();
        second.close();
        other.close();
      }
    }
  }

  /** The next {@code n} messages as "job <id>" or "error <detail>", in the order they came. */
  private static List<String> summaries(Socket s, int n) throws InterruptedException {
    List<String> out = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      JsonNode m = s.next(x -> true);
      out.add(
          m.path("type").asString().equals("job")
              ? "job " + m.path("id").asString()
              : m.path("type").asString() + " " + m.path("detail").asString());
    }
    return out;
  }

  @Test
  void subscriptionsOverALimitGetAnErrorWithTheReason() throws Exception {
    try (ApiTestSupport api =
        ApiTestSupport.start(b -> b.tokens(Map.of(TOKEN, ApiServer.Scope.READ))
            .eventLimits(EventLimits.DEFAULTS.withSubscriptions(100, 2, 3)))) {
      UUID a = enqueue(api);
      UUID b = enqueue(api);
      UUID c = enqueue(api);
      Socket one = Socket.connect(api, "Authorization", "Bearer " + TOKEN);
      Socket two = Socket.connect(api, "Authorization", "Bearer " + TOKEN);
      try {
        one.send(subscribe(a, b, c));
        assertThat(summaries(one, 3))
            .containsExactlyInAnyOrder(
                "job " + a,
                "job " + b,
                "error subscriptions: this connection's limit of 2 is reached; unsubscribe some first (not subscribed: "
                    + c + ")");

        two.send(subscribe(c, a));
        assertThat(summaries(two, 2))
            .containsExactlyInAnyOrder(
                "job " + c,
                "error subscriptions: this token's limit of 3 is reached; unsubscribe some first (not subscribed: "
                    + a + ")");

        // Unsubscribing gives the place back at once.
        two.send("{\"op\":\"unsubscribe\",\"jobs\":[\"" + c + "\"]}");
        two.send(subscribe(a));
        two.nextJob(a, "queued");
      } finally {
        one.close();
        two.close();
      }
    }
  }

  @Test
  void aStreamOverTheServerSubscriptionLimitGets429() throws Exception {
    try (ApiTestSupport api =
        ApiTestSupport.start(b -> b.eventLimits(EventLimits.DEFAULTS.withSubscriptions(1, 1, 1)))) {
      UUID id = enqueue(api);
      Socket s = Socket.connect(api);
      try {
        s.send(subscribe(id));
        s.nextJob(id, "queued");
        Response sse = api.get("/events", "Accept", "text/event-stream");
        assertThat(sse.status()).isEqualTo(429);
        assertThat(sse.header("Retry-After")).isEqualTo("5");
        assertThat(ApiTestSupport.JSON.readTree(sse.body()).path("detail").asString())
            .isEqualTo("subscriptions: this server's limit of 1 is reached; try again later");
      } finally {
        s.close();
      }
    }
  }

  @Test
  void limitsOutOfRangeAreRefusedNamingTheLimit() {
    assertThatThrownBy(() -> EventLimits.DEFAULTS.withConnections(0, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("live events maxConnections must be between 1 and 10000000, was 0");
    assertThatThrownBy(() -> EventLimits.DEFAULTS.withQueueCapacity(-5))
        .hasMessage("live events queueCapacity must be between 1 and 10000000, was -5");
  }

  /** A masked client text frame (RFC 6455 5.2). */
  private static byte[] frame(String text) {
    byte[] payload = text.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    out.write(0x81);
    if (payload.length < 126) {
      out.write(0x80 | payload.length);
    } else {
      out.write(0x80 | 126);
      out.write(payload.length >> 8);
      out.write(payload.length & 0xff);
    }
    byte[] mask = {7, 13, 42, 99};
    out.writeBytes(mask);
    for (int i = 0; i < payload.length; i++) {
      out.write(payload[i] ^ mask[i % 4]);
    }
    return out.toByteArray();
  }

  @Test
  void aSocketThatStopsReadingIsClosedAndGivesItsPlaceBack() throws Exception {
    try (ApiTestSupport api = ApiTestSupport.start(
        b -> b.eventLimits(EventLimits.DEFAULTS.withConnections(1, 1).withQueueCapacity(100)))) {
      UUID id = enqueue(api);
      try (java.net.Socket raw = new java.net.Socket()) {
        raw.setReceiveBufferSize(4096);
        raw.connect(new java.net.InetSocketAddress("127.0.0.1", api.server.port()));
        raw.getOutputStream()
            .write(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:" + api.server.port() + "\r\n"
                    + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    + "Sec-WebSocket-Version: 13\r\n\r\n")
                .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
          head.append((char) raw.getInputStream().read());
        }
        assertThat(head.toString()).startsWith("HTTP/1.1 101");
        raw.getOutputStream().write(frame("{\"op\":\"events\",\"queues\":[\"stuck\"]}"));
        // From here on the client reads nothing: the server's writes fill the socket buffers and
        // block.

        await()
            .atMost(Duration.ofSeconds(90))
            .pollInterval(Duration.ofMillis(500))
            .until(() -> {
              api.db.execute(
                  "SELECT pg_notify('" + api.client.eventsChannel()
                      + "', json_build_object('op', 'state',"
                      + " 'count', 1, 'jobs', json_build_array(json_build_object('id', gen_random_uuid(), 'state', 'queued',"
                      + " 'type', 'task', 'queue', 'stuck', 'attempts', 0)))::text) FROM generate_series(1, 5000)");
              // The only connection place is the stuck client's until the server closes it.
              Socket probe = Socket.connect(api);
              try {
                try {
                  probe.send(subscribe(id));
                } catch (java.util.concurrent.CompletionException refused) {
                  return false; // the server closed the probe at once: the stuck client still holds
                  // the place
                }
                JsonNode m = probe.messages.poll(5, java.util.concurrent.TimeUnit.SECONDS);
                return m != null && m.path("type").asString().equals("job");
              } finally {
                probe.close();
              }
            });
      }
    }
  }

  @Test
  void aSubscriberThatStopsReadingIsClosedWithItsQueueBounded() throws Exception {
    try (TestDatabase db = TestDatabase.create()) {
      var client = io.pgjobs.JobClient.builder(db.dataSource())
          .knownTypes(TestTypes.TASK)
          .build();
      client.migrate();
      int capacity = 20;
      try (EventHub hub = new EventHub(
          db.dataSource(),
          client.eventsChannel(),
          ApiTestSupport.JSON,
          Duration.ofSeconds(15),
          EventLimits.DEFAULTS.withQueueCapacity(capacity),
          db.dataSource(),
          client.schema())) {
        hub.start();
        await().atMost(Duration.ofSeconds(30)).until(hub::isListening);
        CountDownLatch closed = new CountDownLatch(1);
        AtomicInteger sent = new AtomicInteger();
        EventSink stuck = new EventSink() {
          @Override
          public void send(String event, Object data, String id) {
            // The snapshot goes out; then the client stops reading, so the next write never
            // returns.
            if (sent.incrementAndGet() > 1) {
              try {
                closed.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          }

          @Override
          public void ping() {}

          @Override
          public boolean isClosed() {
            return closed.getCount() == 0;
          }

          @Override
          public void close() {
            closed.countDown();
          }
        };
        EventHub.Peer peer = hub.connect(null);
        peer.subscribe(stuck, new EventFilter(null, Set.of(), Set.of("slow")), () -> "snapshot");
        await().atMost(Duration.ofSeconds(30)).until(() -> sent.get() == 1);

        int maxQueued = 0;
        for (int i = 0; i < 20 && closed.getCount() > 0; i++) {
          client.enqueueAll(
              TestTypes.TASK,
              Collections.nCopies(10, new TestTypes.Task("slow")),
              EnqueueOptions.builder().queue("slow").build());
          maxQueued = Math.max(maxQueued, hub.queued());
        }
        assertThat(closed.await(30, java.util.concurrent.TimeUnit.SECONDS))
            .as("the stuck subscriber is closed")
            .isTrue();
        assertThat(maxQueued).isLessThanOrEqualTo(capacity);
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> hub.subscribers() == 0 && hub.queued() == 0);
        assertThat(peer.subscriptions()).isZero();
      }
    }
  }
}
