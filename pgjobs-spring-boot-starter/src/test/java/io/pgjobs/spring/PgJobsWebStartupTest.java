package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.JobClient;
import io.pgjobs.spring.TestJobs.GreetHandler;
import io.pgjobs.testkit.TestDatabase;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Starting (or refusing to start) the mount of {@code pgjobs.web.*}: the path is validated, tokens or an
 * explicit {@code allow-unauthenticated} are required, and an open event stream does not hold up the
 * application's shutdown.
 */
@ExtendWith(OutputCaptureExtension.class)
class PgJobsWebStartupTest {
  static final TestDatabase db = TestDatabase.create();

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {
    @Bean
    GreetHandler greetHandler() {
      return new GreetHandler();
    }
  }

  /** An application filter in front of /jobs/*, as Spring Security's filter chain would be. */
  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class AppWithFilter {
    @Bean
    GreetHandler greetHandler() {
      return new GreetHandler();
    }

    @Bean
    FilterRegistrationBean<Filter> opsOnly() {
      Filter filter = (request, response, chain) -> {
        if ("yes".equals(((HttpServletRequest) request).getHeader("X-Ops"))) {
          chain.doFilter(request, response);
        } else {
          ((HttpServletResponse) response).sendError(403);
        }
      };
      FilterRegistrationBean<Filter> registration = new FilterRegistrationBean<>(filter);
      registration.addUrlPatterns("/jobs/*");
      return registration;
    }
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "jobs      | must start with / (like /jobs)",
        "/jobs/    | must not end with / (write /jobs; the dashboard is then at /jobs/)",
        "/jobs/*   | must be a plain path without wildcards",
        "/jobs/**  | must be a plain path without wildcards",
        "/         | must not be / (the mount would take every path of the application)",
        "/my jobs  | must be one or more segments of letters, digits and . _ ~ -",
        "/a//b     | must be one or more segments of letters, digits and . _ ~ -"
      })
  void invalidPathStopsTheStartupSayingWhatIsAllowed(
      String path, String reason, CapturedOutput output) {
    assertStartupFails(output, "pgjobs.web.path=" + path, "pgjobs.web.allow-unauthenticated=true")
        .contains("APPLICATION FAILED TO START")
        .contains("Invalid value '" + path + "' for configuration property 'pgjobs.web.path'")
        .contains(reason);
  }

  @Test
  void invalidRequestTimeoutNamesTheProperty(CapturedOutput output) {
    assertStartupFails(
            output, "pgjobs.web.allow-unauthenticated=true", "pgjobs.web.request-timeout=2h")
        .contains("Invalid value '2h' for configuration property 'pgjobs.web.request-timeout'")
        .contains("requestTimeout must be between 10ms and 1h");
  }

  @Test
  void invalidAllowedHostNamesTheProperty(CapturedOutput output) {
    assertStartupFails(
            output,
            "pgjobs.web.allow-unauthenticated=true",
            "pgjobs.web.allowed-hosts=http://jobs.internal")
        .contains("configuration property 'pgjobs.web.allowed-hosts'")
        .contains("every allowed host must be a host name");
  }

  @Test
  void tokenlessMountRefusesForeignOriginWritesAndRebindingHosts() throws Exception {
    try (ConfigurableApplicationContext context = start(
        "pgjobs.web.allow-unauthenticated=true",
        "pgjobs.web.allowed-origins=https://ops.example.com")) {
      int port = ((WebServerApplicationContext) context).getWebServer().getPort();
      HttpClient http =
          HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpResponse<String> foreign = http.send(
          HttpRequest.newBuilder(
                  URI.create("http://127.0.0.1:" + port + "/jobs/queues/xsite/pause"))
              .header("Origin", "http://evil.example")
              .header("Content-Type", "text/plain")
              .POST(HttpRequest.BodyPublishers.ofString("x"))
              .build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(foreign.statusCode()).isEqualTo(403);
      assertThat(foreign.body()).contains("cross-site-request", "http://evil.example");
      HttpResponse<String> listed = http.send(
          HttpRequest.newBuilder(
                  URI.create("http://127.0.0.1:" + port + "/jobs/queues/xsite/pause"))
              .header("Origin", "https://ops.example.com")
              .POST(HttpRequest.BodyPublishers.noBody())
              .build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(listed.statusCode()).isEqualTo(200);
      JobClient client = context.getBean(JobClient.class);
      client.resumeQueue("xsite");

      try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
        socket
            .getOutputStream()
            .write(("GET /jobs/queues HTTP/1.1\r\nHost: evil.example:" + port
                    + "\r\nConnection: close\r\n\r\n")
                .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        String response = new String(
            socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(response)
            .startsWith("HTTP/1.1 421")
            .contains("host-not-allowed", "pgjobs.web.allowed-hosts");
      }
    }
  }

  @Test
  void mountWithoutTokensRefusesToStartUnlessAllowed(CapturedOutput output) {
    assertStartupFails(output)
        .contains("APPLICATION FAILED TO START")
        .contains("configuration property 'pgjobs.web.tokens'")
        .contains("refusing to mount the pgjobs API at /jobs without authentication")
        .contains("pgjobs.web.allow-unauthenticated=true");
  }

  @Test
  void shortTokenFailsWithoutShowingIt(CapturedOutput output) {
    assertStartupFails(output, "pgjobs.web.tokens=read:short-secret")
        .contains("APPLICATION FAILED TO START")
        .contains(
            "Invalid value for configuration property 'pgjobs.web.tokens' (not shown: it holds secrets)")
        .contains("every token must be at least 16 characters")
        .doesNotContain("short-secret");
  }

  @Test
  void allowedUnauthenticatedMountAnswersBelowTheContextPathAndStopsPromptlyWithAnOpenEventStream()
      throws Exception {
    ConfigurableApplicationContext context = start(
        "pgjobs.web.allow-unauthenticated=true",
        "pgjobs.web.path=/admin/jobs",
        "server.servlet.context-path=/app");
    HttpClient http =
        HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<Stream<String>> stream;
    try {
      int port = ((WebServerApplicationContext) context).getWebServer().getPort();
      HttpResponse<String> list = http.send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/app/admin/jobs/jobs"))
              .build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(list.statusCode()).isEqualTo(200);
      assertThat(list.body()).startsWith("{\"jobs\":");
      HttpResponse<String> health = http.send(
          HttpRequest.newBuilder(
                  URI.create("http://127.0.0.1:" + port + "/app/admin/jobs/health/ready"))
              .build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(health.statusCode()).isEqualTo(200);

      stream = http.send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/app/admin/jobs/events"))
              .header("Accept", "text/event-stream")
              .build(),
          HttpResponse.BodyHandlers.ofLines());
      assertThat(stream.statusCode()).isEqualTo(200);
    } catch (Exception | AssertionError e) {
      context.close();
      throw e;
    }
    // Graceful shutdown waits up to 30 s for open requests; the mount ends its streams before that.
    long started = System.nanoTime();
    context.close();
    Duration took = Duration.ofNanos(System.nanoTime() - started);
    stream.body().close();
    assertThat(took).isLessThan(Duration.ofSeconds(15));
  }

  @Test
  void mountSitsBehindTheApplicationsFilters() throws Exception {
    try (ConfigurableApplicationContext context =
        start(AppWithFilter.class, "pgjobs.web.allow-unauthenticated=true")) {
      int port = ((WebServerApplicationContext) context).getWebServer().getPort();
      HttpClient http =
          HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      URI jobs = URI.create("http://127.0.0.1:" + port + "/jobs/jobs");
      assertThat(
              http.send(HttpRequest.newBuilder(jobs).build(), HttpResponse.BodyHandlers.ofString())
                  .statusCode())
          .isEqualTo(403);
      assertThat(http.send(
                  HttpRequest.newBuilder(jobs).header("X-Ops", "yes").build(),
                  HttpResponse.BodyHandlers.ofString())
              .statusCode())
          .isEqualTo(200);
    }
  }

  private static ConfigurableApplicationContext start(String... properties) {
    return start(App.class, properties);
  }

  private static ConfigurableApplicationContext start(Class<?> app, String... properties) {
    List<String> all = new ArrayList<>(List.of(properties));
    all.add("spring.datasource.url=" + db.jdbcUrl());
    all.add("server.port=0");
    all.add("pgjobs.web.enabled=true");
    all.add("pgjobs.worker.shutdown-grace=0s");
    return new SpringApplicationBuilder(app)
        .web(WebApplicationType.SERVLET)
        .properties(all.toArray(String[]::new))
        .run();
  }

  private static org.assertj.core.api.AbstractStringAssert<?> assertStartupFails(
      CapturedOutput output, String... properties) {
    assertThatThrownBy(() -> start(properties).close()).isInstanceOf(RuntimeException.class);
    return assertThat(output.getOut());
  }
}
