package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.JobClient;
import io.pgjobs.spring.TestJobs.GreetHandler;
import io.pgjobs.testkit.TestDatabase;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.test.annotation.DirtiesContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The API and dashboard mounted at {@code /jobs} of a Spring Boot application (embedded Tomcat on a
 * random port, real PostgreSQL): the API's JSON under the path, its token check, a job posted through
 * the mount and run by the starter's worker, the event stream, and the dashboard in headless Chromium.
 */
@SpringBootTest(
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    classes = PgJobsWebTest.App.class,
    properties = {
      "pgjobs.web.enabled=true",
      "pgjobs.web.tokens=admin:" + PgJobsWebTest.ADMIN + ",read:" + PgJobsWebTest.READ,
      "pgjobs.worker.shutdown-grace=0s"
    })
@DirtiesContext // closed after the class: its database is dropped then
class PgJobsWebTest {
  static final String ADMIN = "admin-token-0123456789";
  static final String READ = "read-token-0123456789";
  static final JsonMapper JSON = JsonMapper.builder().build();
  static final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {
    /** The test's database, dropped when the context closes, after everything that uses the DataSource. */
    @Bean(destroyMethod = "close")
    TestDatabase testDatabase() {
      return TestDatabase.create();
    }

    @Bean(destroyMethod = "close")
    HikariDataSource dataSource(TestDatabase db) {
      HikariDataSource ds = new HikariDataSource();
      ds.setJdbcUrl(db.jdbcUrl());
      return ds;
    }

    @Bean
    GreetHandler greetHandler() {
      return new GreetHandler();
    }
  }

  @LocalServerPort
  int port;

  @Autowired
  GreetHandler greeter;

  @Autowired
  JobClient client;

  @Test
  void apiAnswersWithItsJsonUnderThePath() throws Exception {
    HttpResponse<String> r = send("GET", "/jobs/jobs?limit=5", null, ADMIN);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type"))
        .get()
        .asString()
        .startsWith("application/json");
    assertThat(JSON.readTree(r.body()).path("jobs").isArray()).isTrue();

    HttpResponse<String> queues = send("GET", "/jobs/queues", null, READ);
    assertThat(queues.statusCode()).isEqualTo(200);
    assertThat(JSON.readTree(queues.body()).path("queues").isArray()).isTrue();

    // The path without its slash goes to the dashboard's address, where its relative URLs resolve.
    HttpResponse<String> bare = send("GET", "/jobs", null, null);
    assertThat(bare.statusCode()).isEqualTo(302);
    assertThat(bare.headers().firstValue("Location")).get().asString().endsWith("/jobs/");
  }

  @Test
  void apiDocsAndTheirAssetsAreServedUnderThePath() throws Exception {
    HttpResponse<String> docs = send("GET", "/jobs/docs", null, null);
    assertThat(docs.statusCode()).isEqualTo(200);
    java.util.regex.Matcher bundle = java.util.regex.Pattern.compile(
            "\\./(webjars/swagger-ui/[^/\"]+/swagger-ui-bundle\\.js)")
        .matcher(docs.body());
    assertThat(bundle.find()).as(docs.body()).isTrue();
    assertThat(send("GET", "/jobs/" + bundle.group(1), null, null).statusCode()).isEqualTo(200);
    HttpResponse<String> spec = send("GET", "/jobs/openapi.json", null, null);
    assertThat(spec.statusCode()).isEqualTo(200);
    // relative to the document: Swagger UI's requests go to the mount, not to the application's
    // root
    assertThat(JSON.readTree(spec.body()).path("servers").path(0).path("url").asString())
        .isEqualTo(".");
  }

  @Test
  void tokenIsRequiredAndReadTokensOnlyRead() throws Exception {
    HttpResponse<String> none = send("GET", "/jobs/jobs", null, null);
    assertThat(none.statusCode()).isEqualTo(401);
    assertThat(none.headers().firstValue("Content-Type"))
        .get()
        .asString()
        .startsWith("application/problem+json");
    assertThat(JSON.readTree(none.body()).path("status").asInt()).isEqualTo(401);

    assertThat(send("GET", "/jobs/jobs", null, "not-a-valid-token-at-all").statusCode())
        .isEqualTo(401);

    HttpResponse<String> readPost =
        send("POST", "/jobs/jobs", "{\"type\":\"greet\",\"payload\":{\"name\":\"nope\"}}", READ);
    assertThat(readPost.statusCode()).isEqualTo(403);
  }

  @Test
  void jobPostedThroughTheMountIsRunByTheStartersWorker() throws Exception {
    String name = "web-" + UUID.randomUUID();
    HttpResponse<String> created = send(
        "POST",
        "/jobs/jobs",
        "{\"type\":\"greet\",\"payload\":{\"name\":\"" + name + "\"}}",
        ADMIN);
    assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
    String id = JSON.readTree(created.body()).path("id").asString();
    assertThat(created.headers().firstValue("Location")).contains("/jobs/jobs/" + id);

    await().atMost(Duration.ofSeconds(20)).until(() -> greeter.greeted.contains(name));
    await().atMost(Duration.ofSeconds(20)).until(() -> {
      JsonNode job = JSON.readTree(send("GET", "/jobs/jobs/" + id, null, READ).body());
      return job.path("state").asString().equals("succeeded");
    });
  }

  @Test
  void eventStreamUnderThePathDeliversAJobsEvents() throws Exception {
    HttpRequest request = HttpRequest.newBuilder(uri("/jobs/events"))
        .header("Accept", "text/event-stream")
        .header("Authorization", "Bearer " + READ)
        .build();
    HttpResponse<Stream<String>> response = http.send(request, HttpResponse.BodyHandlers.ofLines());
    assertThat(response.statusCode()).isEqualTo(200);
    BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    Thread reader = Thread.ofVirtual().start(() -> {
      Iterator<String> it = response.body().iterator();
      while (it.hasNext()) {
        lines.add(it.next());
      }
    });
    try {
      // The stream starts with a snapshot: from then on the subscription is in place.
      assertThat(nextLineContaining(lines, "event: snapshot", 20)).isNotNull();
      String id = client
          .enqueue(TestJobs.GREET, new TestJobs.Greet("events"))
          .job()
          .id()
          .toString();
      assertThat(nextLineContaining(lines, id, 20))
          .as("an event about job " + id)
          .isNotNull();
    } finally {
      response.body().close();
      reader.interrupt();
    }
  }

  @Test
  void dashboardLoadsUnderThePathAndShowsAJob() throws Exception {
    String chromium = System.getProperty("pgjobs.chromium", "/usr/bin/chromium");
    String chromedriver = System.getProperty("pgjobs.chromedriver", "/usr/bin/chromedriver");
    String name = "dashboard-" + UUID.randomUUID();
    String id =
        client.enqueue(TestJobs.GREET, new TestJobs.Greet(name)).job().id().toString();

    Path profile = Files.createTempDirectory("pgjobs-spring-chromium-");
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(new File(chromedriver))
        .usingAnyFreePort()
        .build();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium);
    options.addArguments(
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--user-data-dir=" + profile);
    ChromeDriver driver = new ChromeDriver(service, options);
    try {
      WebDriverWait wait = new WebDriverWait(driver, Duration.ofSeconds(30));
      driver.get(uri("/jobs/#/jobs/" + id).toString());
      // The mount has tokens: the dashboard asks for one, then loads the job through
      // /jobs/jobs/{id}.
      wait.until(ExpectedConditions.visibilityOfElementLocated(By.id("token-input")))
          .sendKeys(ADMIN);
      driver.findElement(By.id("token-save")).click();
      wait.until(d -> d.findElement(By.id("main")).getText().contains(name));
      // The live indicator turns "live" once the event stream at /jobs/events answers. Mounted as a
      // servlet there is no WebSocket: the client tries it twice (0.5 s apart, each attempt as long
      // as the upgrade takes to be refused) before it falls back, so this wait is longer. In the CI
      // lanes (four JVMs on two cores) the 30 s of the other waits ran out once, at 1a7dd36.
      new WebDriverWait(driver, Duration.ofSeconds(90))
          .until(d -> "live".equals(d.findElement(By.id("live")).getAttribute("data-status")));
      assertThat(driver.findElement(By.id("main")).getText()).contains(name);
    } finally {
      driver.quit();
      service.stop();
      try (Stream<Path> files = Files.walk(profile)) {
        files
            .sorted(java.util.Comparator.reverseOrder())
            .forEach(p -> p.toFile().delete());
      }
    }
  }

  private static String nextLineContaining(BlockingQueue<String> lines, String text, int seconds)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    for (long left; (left = deadline - System.nanoTime()) > 0; ) {
      String line = lines.poll(left, TimeUnit.NANOSECONDS);
      if (line != null && line.contains(text)) {
        return line;
      }
    }
    return null;
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private HttpResponse<String> send(String method, String path, String json, String token)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri(path));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    if (json == null) {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      b.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(json));
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }
}
