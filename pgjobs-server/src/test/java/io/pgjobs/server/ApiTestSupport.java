package io.pgjobs.server;

import io.pgjobs.JobClient;
import io.pgjobs.testkit.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** A throw-away database, a client knowing the test types, a running server on port 0 and an HTTP client. */
final class ApiTestSupport implements AutoCloseable {
  static final JsonMapper JSON = JsonMapper.builder().build();

  final TestDatabase db;
  final JobClient client;
  final ApiServer server;
  final HttpClient http = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10))
      .build();

  private ApiTestSupport(TestDatabase db, JobClient client, ApiServer server) {
    this.db = db;
    this.client = client;
    this.server = server;
  }

  /** Starts a server configured by {@code configure} (on top of port 0 and host 127.0.0.1). */
  static ApiTestSupport start(java.util.function.UnaryOperator<ApiServer.Builder> configure) {
    return start(c -> c, configure);
  }

  /**
   * Starts a server whose client, knowing the test types, is also configured by {@code client} (its known
   * workflows), and the server by {@code configure}.
   */
  static ApiTestSupport start(
      java.util.function.UnaryOperator<JobClient.Builder> client,
      java.util.function.UnaryOperator<ApiServer.Builder> configure) {
    TestDatabase db = MigratedDatabase.create();
    try {
      JobClient built = client
          .apply(JobClient.builder(db.dataSource())
              .knownTypes(
                  TestTypes.SEND_EMAIL, TestTypes.TASK, TestTypes.EXPLOSIVE, TestTypes.CHARGE))
          .build();
      ApiServer server = configure
          .apply(ApiServer.builder(built).host("127.0.0.1").port(0))
          .build()
          .start();
      return new ApiTestSupport(db, built, server);
    } catch (RuntimeException e) {
      db.close();
      throw e;
    }
  }

  static ApiTestSupport start() {
    return start(b -> b);
  }

  URI uri(String path) {
    return URI.create("http://127.0.0.1:" + server.port() + path);
  }

  Response get(String path, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).GET().timeout(Duration.ofSeconds(60));
    if (headers.length > 0) {
      b.headers(headers);
    }
    return send(b.build());
  }

  /** POST with a JSON body (null for none). */
  Response post(String path, String json, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(60));
    if (json == null) {
      b.POST(HttpRequest.BodyPublishers.noBody());
    } else {
      b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json));
    }
    if (headers.length > 0) {
      b.headers(headers);
    }
    return send(b.build());
  }

  Response send(HttpRequest request) {
    try {
      HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
      return new Response(r.statusCode(), r.headers().map(), r.body());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Rows in the three tables a rejected request must not touch. */
  List<Long> rowCounts() {
    return List.of(
        db.queryLong("SELECT count(*) FROM pgjobs.jobs"),
        db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs"),
        db.queryLong("SELECT count(*) FROM pgjobs.job_keys"));
  }

  @Override
  public void close() {
    try {
      server.close();
    } finally {
      db.close();
    }
  }

  /** A response. */
  record Response(int status, Map<String, List<String>> headers, String body) {
    String header(String name) {
      return headers.entrySet().stream()
          .filter(e -> e.getKey().equalsIgnoreCase(name))
          .map(e -> e.getValue().get(0))
          .findFirst()
          .orElse(null);
    }

    String contentType() {
      return header("Content-Type");
    }

    JsonNode json() {
      return JSON.readTree(body);
    }

    boolean isProblem() {
      return contentType() != null && contentType().startsWith("application/problem+json");
    }
  }
}
