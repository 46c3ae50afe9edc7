package io.pgjobs.server;

import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A server that stops while event streams are open. Stopping ends the streams on threads of their own
 * while the servlet container stops and recycles their requests; Javalin then resumed a stream's
 * request after it was recycled, our exception handler threw on it, Javalin queued another exception
 * task, and that stream's thread looped, two WARN stack traces a millisecond, until the JVM ended.
 */
class EventStreamCloseTest {

  /** Counts what Javalin logs at WARN or above. */
  static final class Warnings extends AppenderBase<ILoggingEvent> {
    final AtomicInteger count = new AtomicInteger();

    @Override
    protected void append(ILoggingEvent event) {
      if (event.getLevel().isGreaterOrEqual(Level.WARN)) {
        count.incrementAndGet();
      }
    }
  }

  @Test
  void stoppingWithStreamsOpenEndsThem() throws Exception {
    Logger javalin = (Logger) LoggerFactory.getLogger("io.javalin");
    Warnings warnings = new Warnings();
    warnings.start();
    javalin.addAppender(warnings);
    HttpClient http =
        HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    List<SseSubscriber> streams = new ArrayList<>();
    try {
      for (int round = 0; round < Integer.getInteger("rounds", 5); round++) {
        try (ApiTestSupport api = ApiTestSupport.start()) {
          for (int i = 0; i < 20; i++) {
            streams.add(new SseSubscriber(http, api.uri("/events")));
          }
        }
      }
      await("Javalin's warnings to stay few once the servers stopped")
          .during(Duration.ofSeconds(2))
          .atMost(Duration.ofSeconds(10))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> warnings.count.get() < 20);
    } finally {
      streams.forEach(SseSubscriber::close);
      javalin.detachAppender(warnings);
    }
  }
}
