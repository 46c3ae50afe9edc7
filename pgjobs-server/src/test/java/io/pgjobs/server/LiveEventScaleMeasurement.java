package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.EnqueueOptions;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Not a test of speed: measures what 10,000 idle WebSocket subscriptions cost (heap growth, time until
 * every snapshot arrived, GET /queues latency meanwhile) and prints it for docs/operations.md. Runs only
 * with {@code -Dpgjobs.measure=true}; it asserts only that every subscription got its snapshot.
 */
@EnabledIfSystemProperty(named = "pgjobs.measure", matches = "true")
class LiveEventScaleMeasurement {
  static final int CONNECTIONS = 10;
  static final int PER_CONNECTION = 1_000;

  static long heapAfterGc() throws InterruptedException {
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(200);
      used = Math.min(
          used, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
    }
    return used;
  }

  @Test
  void tenThousandIdleSubscriptions() throws Exception {
    try (ApiTestSupport api = ApiTestSupport.start()) {
      List<UUID> ids = new ArrayList<>();
      for (int i = 0; i < CONNECTIONS; i++) {
        ids.addAll(api.client.enqueueAll(
            TestTypes.TASK,
            Collections.nCopies(PER_CONNECTION, new TestTypes.Task("m")),
            EnqueueOptions.builder().queue("measure").build()));
      }
      AtomicInteger snapshots = new AtomicInteger();
      HttpClient http = HttpClient.newHttpClient();
      List<WebSocket> sockets = new ArrayList<>();
      for (int i = 0; i < CONNECTIONS; i++) {
        sockets.add(http.newWebSocketBuilder()
            .buildAsync(
                URI.create("ws://127.0.0.1:" + api.server.port() + "/ws"),
                new WebSocket.Listener() {
                  @Override
                  public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
                    if (last) {
                      snapshots.incrementAndGet();
                    }
                    ws.request(1);
                    return null;
                  }
                })
            .join());
      }
      // Warm up the paths (JIT, pools) with one round of 100 subscriptions, then unsubscribe them.
      List<UUID> warm = api.client.enqueueAll(
          TestTypes.TASK,
          Collections.nCopies(100, new TestTypes.Task("w")),
          EnqueueOptions.builder().queue("warm").build());
      sockets
          .get(0)
          .sendText(
              "{\"op\":\"subscribe\",\"jobs\":" + ApiTestSupport.JSON.writeValueAsString(warm)
                  + "}",
              true)
          .join();
      while (snapshots.get() < 100) {
        Thread.sleep(50);
      }
      sockets
          .get(0)
          .sendText(
              "{\"op\":\"unsubscribe\",\"jobs\":" + ApiTestSupport.JSON.writeValueAsString(warm)
                  + "}",
              true)
          .join();
      snapshots.set(0);
      long before = heapAfterGc();

      HttpClient probe =
          HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      // The machine's noise floor: GET /queues back to back for 10 s with no subscriptions being
      // made.
      List<Long> idle = new ArrayList<>();
      long idleEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (System.nanoTime() < idleEnd) {
        long q0 = System.nanoTime();
        probe.send(
            HttpRequest.newBuilder(api.uri("/queues")).build(),
            HttpResponse.BodyHandlers.ofString());
        idle.add((System.nanoTime() - q0) / 1_000);
      }
      Collections.sort(idle);
      System.out.printf(
          "MEASURE idle queues_requests=%d queues_p50_us=%d queues_p99_us=%d queues_max_us=%d%n",
          idle.size(),
          idle.get(idle.size() / 2),
          idle.get((int) Math.ceil(idle.size() * 0.99) - 1),
          idle.getLast());

      List<Long> queueMillis = Collections.synchronizedList(new ArrayList<>());
      AtomicBoolean burst = new AtomicBoolean(true);
      Thread prober = Thread.ofPlatform().start(() -> {
        while (burst.get()) {
          long t0 = System.nanoTime();
          try {
            HttpResponse<String> r = probe.send(
                HttpRequest.newBuilder(api.uri("/queues")).build(),
                HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() == 200) {
              queueMillis.add((System.nanoTime() - t0) / 1_000);
            }
          } catch (Exception e) {
            return;
          }
        }
      });
      long t0 = System.nanoTime();
      for (int i = 0; i < CONNECTIONS; i++) {
        List<UUID> mine = ids.subList(i * PER_CONNECTION, (i + 1) * PER_CONNECTION);
        sockets
            .get(i)
            .sendText(
                "{\"op\":\"subscribe\",\"jobs\":" + ApiTestSupport.JSON.writeValueAsString(mine)
                    + "}",
                true);
      }
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
      while (snapshots.get() < CONNECTIONS * PER_CONNECTION && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      long subscribeMillis = (System.nanoTime() - t0) / 1_000_000;
      burst.set(false);
      prober.join();
      assertThat(snapshots.get()).isEqualTo(CONNECTIONS * PER_CONNECTION);
      long after = heapAfterGc();

      List<Long> sorted = new ArrayList<>(queueMillis);
      Collections.sort(sorted);
      long p50 = sorted.get(sorted.size() / 2);
      long p99 = sorted.get((int) Math.min(sorted.size() - 1, Math.ceil(sorted.size() * 0.99) - 1));
      long max = sorted.getLast();
      System.out.printf(
          "MEASURE subscriptions=%d heap_before=%.1fMiB heap_after=%.1fMiB per_subscription=%dB"
              + " subscribe_ms=%d queues_requests=%d queues_p50_us=%d queues_p99_us=%d queues_max_us=%d%n",
          CONNECTIONS * PER_CONNECTION,
          before / 1048576.0,
          after / 1048576.0,
          (after - before) / (CONNECTIONS * PER_CONNECTION),
          subscribeMillis,
          sorted.size(),
          p50,
          p99,
          max);
      sockets.forEach(WebSocket::abort);
    }
  }
}
