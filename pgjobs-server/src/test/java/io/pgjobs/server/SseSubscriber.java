package io.pgjobs.server;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;

/** A Server-Sent Events client on java.net.http: parses the stream into events on a thread of its own. */
final class SseSubscriber implements AutoCloseable {
  record Event(String name, String id, String data) {
    JsonNode json() {
      return ApiTestSupport.JSON.readTree(data);
    }
  }

  private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
  private final HttpResponse<Stream<String>> response;
  private final Thread reader;

  SseSubscriber(HttpClient http, URI uri, String... headers) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(uri).header("Accept", "text/event-stream").GET();
    if (headers.length > 0) {
      b.headers(headers);
    }
    response = http.send(b.build(), HttpResponse.BodyHandlers.ofLines());
    reader = Thread.ofVirtual().start(this::read);
  }

  int status() {
    return response.statusCode();
  }

  private void read() {
    String name = null;
    String id = null;
    StringBuilder data = new StringBuilder();
    try {
      Iterator<String> lines = response.body().iterator();
      while (lines.hasNext()) {
        String line = lines.next();
        if (line.isEmpty()) {
          if (data.length() > 0 || name != null) {
            events.add(new Event(name == null ? "message" : name, id, data.toString()));
          }
          name = null;
          id = null;
          data.setLength(0);
        } else if (line.startsWith("event:")) {
          name = line.substring(6).trim();
        } else if (line.startsWith("id:")) {
          id = line.substring(3).trim();
        } else if (line.startsWith("data:")) {
          if (data.length() > 0) {
            data.append('\n');
          }
          data.append(line.substring(5).stripLeading());
        }
      }
    } catch (RuntimeException e) {
      // closed
    }
  }

  /** The next event, failing after {@code timeout}. */
  Event next(Duration timeout) throws InterruptedException {
    Event e = events.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (e == null) {
      throw new AssertionError("no event within " + timeout);
    }
    return e;
  }

  /** The next event named {@code name}, skipping others. */
  Event next(String name, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError("no '" + name + "' event within " + timeout);
      }
      Event e = next(Duration.ofNanos(left));
      if (e.name().equals(name)) {
        return e;
      }
    }
  }

  @Override
  public void close() {
    response.body().close();
    reader.interrupt();
  }
}
