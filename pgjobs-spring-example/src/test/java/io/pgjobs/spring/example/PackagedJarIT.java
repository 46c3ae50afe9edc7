package io.pgjobs.spring.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import io.pgjobs.testkit.JvmProcess;
import io.pgjobs.testkit.Tags;
import io.pgjobs.testkit.TestDatabase;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The example as a user runs it: the packaged Spring Boot jar ({@code java -jar}, as
 * {@code ./run-spring-example} does), where pgjobs-server and the swagger-ui webjar are nested jars
 * ({@code jar:nested:…!/BOOT-INF/lib/…}). Run by Failsafe after {@code package} has built the jar; its
 * path comes in the system property {@value #JAR_PROPERTY}.
 */
@Tag(Tags.PROCESS)
class PackagedJarIT {
  static final String JAR_PROPERTY = "pgjobs.example.jar";
  static final String TOKEN = "example-admin-token-change-me";
  static final Pattern TOMCAT_PORT = Pattern.compile("Tomcat started on port (\\d+)");

  static TestDatabase db;
  static Process app;
  static Path log;
  static int port;

  static final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @BeforeAll
  static void startPackagedJar() throws Exception {
    String jarProperty = System.getProperty(JAR_PROPERTY);
    assertThat(jarProperty)
        .as("system property " + JAR_PROPERTY + " (set by the failsafe plugin)")
        .isNotBlank();
    Path jar = Path.of(jarProperty);
    assertThat(jar).as("the packaged example (mvn package)").isRegularFile();

    db = TestDatabase.create();
    Path dir = Path.of("target", "jvm-processes");
    Files.createDirectories(dir);
    log = dir.resolve("packaged-example.log");
    String java =
        System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    List<String> command = new ArrayList<>(List.of(java));
    command.addAll(JvmProcess.FLAGS);
    command.addAll(List.of("-jar", jar.toString()));
    ProcessBuilder builder =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    builder.environment().put("DATABASE_URL", db.jdbcUrl());
    builder.environment().put("PORT", "0"); // the port Tomcat binds is read from its log
    builder.environment().remove("PGJOBS_WEB_TOKENS"); // the example's own token
    app = builder.start();

    await("the packaged example to start")
        .atMost(Duration.ofMinutes(2))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> {
          if (!app.isAlive()) {
            fail("the packaged example exited with " + app.exitValue() + ":\n" + output());
          }
          Matcher m = TOMCAT_PORT.matcher(output());
          if (m.find()) {
            port = Integer.parseInt(m.group(1));
          }
          return port > 0 && output().contains("Started ExampleApplication");
        });
  }

  @AfterAll
  static void stopAppThenDropDatabase() throws Exception {
    try {
      if (app != null) {
        app.destroy(); // SIGTERM: the worker stops gracefully
        if (!app.waitFor(30, TimeUnit.SECONDS)) {
          app.destroyForcibly().waitFor();
        }
      }
    } finally {
      if (db != null) {
        db.close();
      }
    }
  }

  @Test
  void dashboardPageAndItsAssetsAnswerFromTheJar() throws Exception {
    HttpResponse<String> page = get("/jobs/");
    assertThat(page.statusCode()).as(describe(page)).isEqualTo(200);
    assertThat(page.headers().firstValue("content-type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("text/html"));
    assertThat(page.body()).contains("<title>pgjobs</title>").contains("src=\"js/app.js\"");

    HttpResponse<String> css = get("/jobs/app.css");
    assertThat(css.statusCode()).as(describe(css)).isEqualTo(200);
    assertThat(css.headers().firstValue("content-type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("text/css"));

    HttpResponse<String> script = get("/jobs/js/app.js");
    assertThat(script.statusCode()).as(describe(script)).isEqualTo(200);
    assertThat(script.headers().firstValue("content-type"))
        .hasValueSatisfying(t -> assertThat(t).contains("javascript"));
    assertThat(script.body()).contains("import");
  }

  @Test
  void swaggerUiPageAndItsWebjarAssetsAnswerFromTheJar() throws Exception {
    HttpResponse<String> docs = get("/jobs/docs");
    assertThat(docs.statusCode()).as(describe(docs)).isEqualTo(200);
    Matcher bundle = Pattern.compile(
            "src=\"\\./(webjars/swagger-ui/[^\"]+/swagger-ui-bundle\\.js)\"")
        .matcher(docs.body());
    assertThat(bundle.find())
        .as("the docs page loads swagger-ui-bundle.js from the webjar:\n" + docs.body())
        .isTrue();

    HttpResponse<String> js = get("/jobs/" + bundle.group(1));
    assertThat(js.statusCode()).as(describe(js)).isEqualTo(200);
    assertThat(js.headers().firstValue("content-type"))
        .hasValueSatisfying(t -> assertThat(t).contains("javascript"));
    assertThat(js.body()).contains("SwaggerUIBundle");

    HttpResponse<String> css =
        get("/jobs/" + bundle.group(1).replace("swagger-ui-bundle.js", "swagger-ui.css"));
    assertThat(css.statusCode()).as(describe(css)).isEqualTo(200);
    assertThat(css.headers().firstValue("content-type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("text/css"));
  }

  @Test
  void trackerPageAndItsScriptAnswerFromTheJar() throws Exception {
    HttpResponse<String> page = get("/jobs/client/tracker.html");
    assertThat(page.statusCode()).as(describe(page)).isEqualTo(200);
    assertThat(page.headers().firstValue("content-type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("text/html"));
    assertThat(page.body()).contains("<title>pgjobs · job tracker example</title>");

    HttpResponse<String> script = get("/jobs/client/pgjobs.js");
    assertThat(script.statusCode()).as(describe(script)).isEqualTo(200);
    assertThat(script.headers().firstValue("content-type"))
        .hasValueSatisfying(t -> assertThat(t).contains("javascript"));
  }

  @Test
  void apiListsTheJobOfAnOrderPlacedThroughTheApp() throws Exception {
    HttpResponse<String> placed = http.send(
        HttpRequest.newBuilder(url("/orders"))
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(
                "{\"email\":\"ada@example.com\",\"item\":\"book\"}"))
            .build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(placed.statusCode()).as(describe(placed)).isEqualTo(201);

    assertThat(get("/jobs/jobs").statusCode()).isEqualTo(401);
    HttpResponse<String> jobs = http.send(
        HttpRequest.newBuilder(url("/jobs/jobs?type=send_receipt"))
            .header("Authorization", "Bearer " + TOKEN)
            .build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(jobs.statusCode()).as(describe(jobs)).isEqualTo(200);
    assertThat(jobs.headers().firstValue("content-type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
    assertThat(jobs.body())
        .startsWith("{\"jobs\":[")
        .contains("\"type\":\"send_receipt\"")
        .contains("ada@example.com");
  }

  @Test
  void aJobGraphPostedToTheJarRunsItsChildAfterItsParent() throws Exception {
    // The graph storage and its statement trigger (migrations V3 and V5) found in the nested jar,
    // the jobs run by the app's own handler bean.
    HttpResponse<String> posted = http.send(
        HttpRequest.newBuilder(url("/jobs/graphs"))
            .header("Authorization", "Bearer " + TOKEN)
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString("{\"jobs\": ["
                + "{\"name\": \"first\", \"type\": \"send_receipt\","
                + " \"payload\": {\"orderId\": 0, \"email\": \"graph@example.com\"}},"
                + "{\"name\": \"second\", \"type\": \"send_receipt\","
                + " \"payload\": {\"orderId\": 0, \"email\": \"graph@example.com\"},"
                + " \"after\": [\"first\"]}]}"))
            .build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(posted.statusCode()).as(describe(posted)).isEqualTo(201);
    Matcher ids = Pattern.compile("\"(first|second)\":\"([0-9a-f-]{36})\"").matcher(posted.body());
    java.util.Map<String, String> byName = new java.util.HashMap<>();
    while (ids.find()) {
      byName.put(ids.group(1), ids.group(2));
    }
    assertThat(byName).as(posted.body()).containsKeys("first", "second");
    for (String name : List.of("first", "second")) {
      await("job " + name + " succeeded")
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(250))
          .until(() -> http.send(
                  HttpRequest.newBuilder(url("/jobs/jobs/" + byName.get(name)))
                      .header("Authorization", "Bearer " + TOKEN)
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .body()
              .contains("\"state\":\"succeeded\""));
    }
    HttpResponse<String> parents = http.send(
        HttpRequest.newBuilder(url("/jobs/jobs/" + byName.get("second") + "/parents"))
            .header("Authorization", "Bearer " + TOKEN)
            .build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(parents.body()).contains(byName.get("first")).contains("succeeded");
  }

  @Test
  void dashboardAndSwaggerUiRenderInABrowserFromTheJar() throws Exception {
    HttpResponse<String> placed = http.send(
        HttpRequest.newBuilder(url("/orders"))
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(
                "{\"email\":\"grace@example.com\",\"item\":\"lamp\"}"))
            .build(),
        HttpResponse.BodyHandlers.ofString());
    Matcher job = Pattern.compile("\"receiptJobId\":\"([0-9a-f-]{36})\"").matcher(placed.body());
    assertThat(job.find()).as(describe(placed)).isTrue();

    Path profile = Files.createTempDirectory("pgjobs-packaged-chromium-");
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(
            new File(System.getProperty("pgjobs.chromedriver", "/usr/bin/chromedriver")))
        .usingAnyFreePort()
        .build();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(System.getProperty("pgjobs.chromium", "/usr/bin/chromium"));
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
      // The dashboard's modules (js/*.js) load from the nested pgjobs-server jar, then it asks for
      // a token and shows the receipt job through /jobs/jobs/{id}.
      driver.get(url("/jobs/#/jobs/" + job.group(1)).toString());
      wait.until(ExpectedConditions.visibilityOfElementLocated(By.id("token-input")))
          .sendKeys(TOKEN);
      driver.findElement(By.id("token-save")).click();
      wait.until(d -> d.findElement(By.id("main")).getText().contains("grace@example.com"));

      // Swagger UI's scripts and styles load from the nested swagger-ui webjar and render the
      // document.
      driver.get(url("/jobs/docs").toString());
      wait.until(d -> d.findElements(By.cssSelector(".swagger-ui .info .title")).stream()
          .anyMatch(e -> e.getText().contains("pgjobs API")));
      wait.until(d -> !d.findElements(By.cssSelector(".swagger-ui .opblock")).isEmpty());
    } finally {
      driver.quit();
      service.stop();
      try (Stream<Path> files = Files.walk(profile)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static HttpResponse<String> get(String path) throws IOException, InterruptedException {
    return http.send(
        HttpRequest.newBuilder(url(path)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static URI url(String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private static String describe(HttpResponse<String> response) {
    String body = response.body();
    return response.request().method() + " " + response.uri() + " answered " + response.statusCode()
        + ": " + (body.length() > 300 ? body.substring(0, 300) + "…" : body)
        + "\n--- the app's log (end) ---\n" + tail(output());
  }

  private static String tail(String text) {
    return text.length() > 6000 ? "…" + text.substring(text.length() - 6000) : text;
  }

  private static String output() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }
}
