package io.pgjobs.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.replication.DatabaseRole;
import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.Optional;
import java.util.concurrent.Executors;
import javax.sql.DataSource;

/**
 * The worker process's own endpoints ({@code pgjobs work}), so one Prometheus scrape configuration covers
 * every process: {@code /metrics} (the worker's job metrics, its connection pool, the JVM),
 * {@code /health/live} (the process answers) and {@code /health/ready} (the database answers and takes writes:
 * a read-only standby is 503 with {@code checks.database = read-only} and the {@code reason}). Read-only:
 * nothing here changes a job.
 */
final class WorkerMetricsServer implements AutoCloseable {
  private final HttpServer server;

  private WorkerMetricsServer(HttpServer server) {
    this.server = server;
  }

  /**
   * Listens on {@code bind}.
   *
   * @throws IllegalStateException with a message saying what to do if the address is taken or not
   *     local
   */
  static WorkerMetricsServer start(
      Settings.Bind bind, PrometheusMeterRegistry registry, DataSource dataSource) {
    HttpServer server;
    try {
      server = HttpServer.create(new InetSocketAddress(bind.host(), bind.port()), 0);
    } catch (BindException e) {
      throw new IllegalStateException(
          "cannot listen on " + bind + " for the worker's metrics (setting "
              + Settings.WORKER_METRICS_BIND + "): " + e.getMessage()
              + "; choose another host:port with --metrics-bind,"
              + " or turn it off with --metrics-bind off");
    } catch (IOException e) {
      throw new IllegalStateException(
          "cannot listen on " + bind + " for the worker's metrics (setting "
              + Settings.WORKER_METRICS_BIND + "): " + e.getMessage());
    }
    server.createContext("/metrics", exchange -> {
      if (refuseNonGet(exchange)) {
        return;
      }
      exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      reply(exchange, 200, registry.scrape());
    });
    server.createContext("/health/live", exchange -> {
      if (!refuseNonGet(exchange)) {
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        reply(exchange, 200, "{\"status\":\"up\"}");
      }
    });
    server.createContext("/health/ready", exchange -> {
      if (refuseNonGet(exchange)) {
        return;
      }
      boolean up;
      Optional<String> readOnly = Optional.empty();
      try (Connection c = dataSource.getConnection()) {
        up = c.isValid(2);
        if (up) {
          readOnly = DatabaseRole.readOnlyReason(c);
        }
      } catch (Exception e) {
        up = false;
      }
      exchange.getResponseHeaders().set("Content-Type", "application/json");
      if (readOnly.isPresent()) {
        // A standby answers queries but the worker can claim nothing there: not ready, and say why.
        reply(
            exchange,
            503,
            "{\"status\":\"down\",\"checks\":{\"database\":\"read-only\"},\"reason\":\""
                + readOnly.get().replace("\\", "\\\\").replace("\"", "\\\"") + "\"}");
        return;
      }
      reply(
          exchange,
          up ? 200 : 503,
          up
              ? "{\"status\":\"up\",\"checks\":{\"database\":\"up\"}}"
              : "{\"status\":\"down\",\"checks\":{\"database\":\"down\"}}");
    });
    server.createContext(
        "/",
        exchange -> reply(exchange, 404, "not found: /metrics, /health/live, /health/ready\n"));
    server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
    server.start();
    return new WorkerMetricsServer(server);
  }

  /** The port it listens on (useful with port 0). */
  int port() {
    return server.getAddress().getPort();
  }

  private static boolean refuseNonGet(HttpExchange exchange) throws IOException {
    if (exchange.getRequestMethod().equals("GET") || exchange.getRequestMethod().equals("HEAD")) {
      return false;
    }
    exchange.getResponseHeaders().set("Allow", "GET, HEAD");
    reply(exchange, 405, "method not allowed: GET only\n");
    return true;
  }

  private static void reply(HttpExchange exchange, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(status, head ? -1 : bytes.length);
    if (!head) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
    exchange.close();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
