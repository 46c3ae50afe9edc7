package io.pgjobs.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.testkit.JvmProcess;
import io.pgjobs.testkit.Tags;
import io.pgjobs.testkit.TestDatabase;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** {@code pgjobs serve} as a real process hands {@code --allowed-hosts} and {@code PGJOBS_ALLOWED_ORIGINS} to its API. */
@Tag(Tags.PROCESS)
class ServeCrossSiteProcessTest {
  private static final Pattern DASHBOARD =
      Pattern.compile("dashboard\\s+http://127\\.0\\.0\\.1:(\\d+)/\\s");

  private TestDatabase db;
  private JvmProcess serve;

  @AfterEach
  void stop() {
    if (serve != null) {
      serve.close();
    }
    if (db != null) {
      db.close();
    }
  }

  /** Status line and rest of one request sent with its own {@code Host} (Java's HttpClient cannot). */
  private static String raw(
      int port, String method, String path, String host, String... headerLines) {
    StringBuilder request =
        new StringBuilder(method + " " + path + " HTTP/1.1\r\nHost: " + host + "\r\n");
    for (String line : headerLines) {
      request.append(line).append("\r\n");
    }
    request.append("Connection: close\r\n");
    request.append(
        method.equals("POST") ? "Content-Type: text/plain\r\nContent-Length: 1\r\n\r\nx" : "\r\n");
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(30_000);
      OutputStream out = s.getOutputStream();
      out.write(request.toString().getBytes(StandardCharsets.US_ASCII));
      out.flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Test
  void serveTakesAllowedHostsAndOriginsFromItsFlagsAndEnvironment() {
    db = TestDatabase.create();
    serve = JvmProcess.start(
        "pgjobs-serve-xsite",
        Main.class,
        List.of("serve", "--port", "0", "--allowed-hosts", "jobs.internal"),
        Map.of("DATABASE_URL", db.jdbcUrl(), "PGJOBS_ALLOWED_ORIGINS", "https://ops.example.com"));
    String found = await()
        .atMost(Duration.ofSeconds(120))
        .until(
            () -> {
              Matcher m = DASHBOARD.matcher(serve.output());
              return m.find() ? m.group(1) : null;
            },
            p -> p != null || !serve.process().isAlive());
    assertThat(found).as("serve printed its URLs; output:%n%s", serve.output()).isNotNull();
    int port = Integer.parseInt(found);

    assertThat(raw(port, "GET", "/queues", "jobs.internal:" + port)).startsWith("HTTP/1.1 200");
    assertThat(raw(port, "GET", "/queues", "evil.example:" + port))
        .startsWith("HTTP/1.1 421")
        .contains("host-not-allowed", "--allowed-hosts");

    String own = "127.0.0.1:" + port;
    assertThat(raw(port, "POST", "/queues/xsite/pause", own, "Origin: https://ops.example.com"))
        .startsWith("HTTP/1.1 200");
    assertThat(raw(port, "POST", "/queues/xsite/resume", own, "Origin: http://evil.example"))
        .startsWith("HTTP/1.1 403")
        .contains("cross-site-request", "--allowed-origins");
  }
}
