package io.pgjobs.server.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobState;
import io.pgjobs.testkit.Tags;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Screenshots for docs/dashboard.md: the overview, a job's page and the dead letters, over a lifelike state
 * (an hour of finished jobs, running jobs with progress, a paused queue with a backlog, failures of
 * several kinds). Written to {@code target/dashboard-screenshots}, or to the directory named by the
 * system property {@code pgjobs.screenshots} ({@code -Dpgjobs.screenshots=../docs/images} refreshes
 * the committed ones).
 */
@Tag(Tags.BROWSER)
@Tag(Tags.DOCS)
class DashboardScreenshotsTest {
  static final Path DIR =
      Path.of(System.getProperty("pgjobs.screenshots", "target/dashboard-screenshots"));
  static DashboardFixture app;
  static DashboardBrowser browser;
  static UUID featured;

  @BeforeAll
  static void start() {
    app = DashboardFixture.start(b -> b, "resize_image", "summarize_text", "webhook_delivery");
    browser = new DashboardBrowser();
    seedHistory();
    featured = stageLiveJobs();
  }

  @AfterAll
  static void stop() {
    try {
      if (browser != null) {
        browser.close();
      }
    } finally {
      app.close();
    }
  }

  /**
   * The last hour of finished jobs, as workers would have left them (finished_jobs rows with UUIDv7 ids
   * of their time), so the throughput chart and the counts have something to show.
   */
  static void seedHistory() {
    app.db.execute("""
        INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
               run_at, created_at, attempted_at, locked_by, errors, output, finished_at)
        SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7'
                || substr(md5(m || '-' || g), 1, 3) || '8' || substr(md5(m || '+' || g), 1, 15))::uuid,
               (ARRAY['send_email', 'resize_image', 'summarize_text', 'webhook_delivery'])[1 + g % 4],
               (ARRAY['emails', 'images', 'default', 'default'])[1 + g % 4],
               jsonb_build_object('note', 'ok', 'key', 'history-' || g), 50,
               CASE WHEN (g + m) % 31 = 0 THEN 'failed' ELSE 'succeeded' END, 1, 3, t, t, t, 'worker-earlier',
               CASE WHEN (g + m) % 31 = 0 THEN '[{"attempt": 1, "at": "2026-01-01T00:00:00Z", "kind": "error",
                   "errorClass": "java.net.SocketTimeoutException", "message": "read timed out after 10000 ms",
                   "stackHead": null, "worker": "worker-earlier"}]'::jsonb ELSE '[]'::jsonb END,
               CASE WHEN (g + m) % 31 = 0 THEN NULL ELSE '{"ok": true}'::jsonb END,
               t + interval '400 milliseconds'
          FROM (SELECT g, m, now() - interval '1 minute' - (m * interval '1 minute') - (g % 50) * interval '1 second' AS t
                  FROM generate_series(0, 58) AS m,
                       LATERAL generate_series(1, 18 + (12 * sin(m / 7.0))::int + (m * 7 % 11)) AS g) AS s
        """);
  }

  /** Running jobs at several stages, a paused queue with a backlog, failures; returns the job to show. */
  static UUID stageLiveJobs() {
    List<UUID> running = new ArrayList<>();
    UUID featured = app.client
        .enqueue(
            "resize_image",
            new DashboardFixture.Task("steps-after-failure", "s3://photos/2026/beach.jpg"),
            EnqueueOptions.builder()
                .queue("images")
                .context("user 4711 uploaded 12 photos")
                .build())
        .job()
        .id();
    app.releaseStep("s3://photos/2026/beach.jpg", 1);
    for (String key : List.of("monthly-report-2026-10", "monthly-report-2026-11")) {
      running.add(app.client
          .enqueue(
              "summarize_text",
              new DashboardFixture.Task("steps", key),
              EnqueueOptions.builder().queue("default").build())
          .job()
          .id());
    }
    app.releaseStep("monthly-report-2026-11", 1);
    app.gatewayDown(true);
    List<UUID> failing = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      failing.add(app.client
          .enqueue(
              "webhook_delivery",
              new DashboardFixture.Task("flaky", "https://hooks.example.com/" + i),
              EnqueueOptions.builder().maxAttempts(2).build())
          .job()
          .id());
    }
    for (String to : List.of("old.address@bounce.example", "typo@bounce.example")) {
      failing.add(app.client
          .enqueue(
              DashboardFixture.SEND_EMAIL,
              new DashboardFixture.SendEmail(to, "Your receipt"),
              EnqueueOptions.builder().maxAttempts(1).build())
          .job()
          .id());
    }
    failing.add(app.client
        .enqueue(
            "resize_image",
            new DashboardFixture.Task("error", "unsupported image format: image/heic"),
            EnqueueOptions.builder().maxAttempts(1).build())
        .job()
        .id());
    app.client.pauseQueue("reports");
    for (int i = 0; i < 14; i++) {
      app.client.enqueue(
          "summarize_text",
          new DashboardFixture.Task("ok", "weekly-digest-" + i),
          EnqueueOptions.builder().queue("reports").build());
    }
    for (int i = 0; i < 3; i++) {
      app.client.enqueue(
          DashboardFixture.SEND_EMAIL,
          new DashboardFixture.SendEmail("user" + i + "@example.com", "Reminder"),
          EnqueueOptions.builder().queue("emails").delay(Duration.ofHours(2)).build());
    }
    failing.forEach(id -> app.awaitState(id, JobState.FAILED));
    running.forEach(id -> app.awaitState(id, JobState.RUNNING));
    org.awaitility.Awaitility.await()
        .atMost(DashboardFixture.WAIT)
        .until(() -> app.job(featured).progressPercent() != null
            && app.job(featured).progressPercent() == 60
            && app.job(running.get(1)).progressPercent() == 60);
    return featured;
  }

  private static void assertSmallPng(Path file) throws IOException {
    BufferedImage image = ImageIO.read(file.toFile());
    assertThat(image.getWidth()).isEqualTo(DashboardBrowser.DESKTOP.width);
    assertThat(Files.size(file)).as("size of %s", file).isLessThan(400_000);
  }

  @Test
  void overviewScreenshotShowsQueuesChartAndWorkers() throws IOException {
    browser.open(app.url("/"));
    browser.waitForText("#queues-table tr[data-queue='reports']", "paused");
    browser.waitFor(d -> Long.parseLong(d.findElement(org.openqa.selenium.By.id("throughput-chart"))
            .getAttribute("data-succeeded"))
        > 500);
    browser.waitForAttribute(
        "#workers-table tr[data-worker='" + app.worker.workerId() + "'] td[data-running]",
        "data-running",
        "3");
    assertSmallPng(browser.screenshot(DIR, "dashboard-overview.png"));
    browser.assertNoConsoleErrors();
  }

  @Test
  void jobScreenshotShowsProgressAttemptsAndPayload() throws IOException {
    browser.open(app.url("/jobs/" + featured));
    browser.waitForAttribute("#job-progress", "data-percent", "60");
    browser.waitForText("#job-attempts", "connection reset by peer");
    browser.click("#job-attempts details summary");
    assertSmallPng(browser.screenshot(DIR, "dashboard-job.png"));
    browser.assertNoConsoleErrors();
  }

  @Test
  void deadLettersScreenshotShowsTheGroups() throws IOException {
    browser.open(app.url("/dead-letters"));
    browser.waitForText("#dead-letters-table", "gateway down");
    browser.waitForText("#dead-letters-table", "SMTP 550");
    assertSmallPng(browser.screenshot(DIR, "dashboard-dead-letters.png"));
    browser.assertNoConsoleErrors();
  }

  @Test
  void graphScreenshotShowsAJobsDependencyGraphWithItsStates() throws IOException {
    // Fan-out, fan-in and the three batch callbacks, one resize failing: what the job page draws.
    java.util.function.Function<String, DashboardFixture.Task> ok =
        name -> new DashboardFixture.Task("ok", name);
    EnqueueOptions held = EnqueueOptions.builder().queue("held-for-review").build();
    java.util.Map<String, UUID> ids = app.client
        .enqueueGraph(io.pgjobs.JobGraph.builder()
            .add("fetch", DashboardFixture.TASK, ok.apply("fetch"))
            .add(
                "resize-1",
                DashboardFixture.TASK,
                ok.apply("resize-1"),
                io.pgjobs.Dependency.on("fetch"))
            .add(
                "resize-2",
                DashboardFixture.TASK,
                ok.apply("resize-2"),
                io.pgjobs.Dependency.on("fetch"))
            .add(
                "resize-3",
                DashboardFixture.TASK,
                new DashboardFixture.Task("fail", "resize-3"),
                EnqueueOptions.builder().maxAttempts(1).build(),
                io.pgjobs.Dependency.on("fetch"))
            .add(
                "zip",
                DashboardFixture.TASK,
                ok.apply("zip"),
                io.pgjobs.Dependency.on("resize-1"),
                io.pgjobs.Dependency.on("resize-2"),
                io.pgjobs.Dependency.on("resize-3"))
            .add(
                "publish",
                DashboardFixture.TASK,
                ok.apply("publish"),
                io.pgjobs.Dependency.on("zip"))
            .add(
                "report",
                DashboardFixture.TASK,
                ok.apply("report"),
                EnqueueOptions.DEFAULTS,
                io.pgjobs.Dependency.on("resize-1").runAnyway(),
                io.pgjobs.Dependency.on("resize-2").runAnyway(),
                io.pgjobs.Dependency.on("resize-3").runAnyway())
            .add(
                "alert",
                DashboardFixture.TASK,
                ok.apply("alert"),
                EnqueueOptions.DEFAULTS,
                io.pgjobs.Dependency.on("resize-1").onlyIfItFails(),
                io.pgjobs.Dependency.on("resize-2").onlyIfItFails(),
                io.pgjobs.Dependency.on("resize-3").onlyIfItFails())
            .add(
                "archive",
                DashboardFixture.TASK,
                ok.apply("archive"),
                held,
                io.pgjobs.Dependency.on("report"))
            .add(
                "cleanup",
                DashboardFixture.TASK,
                ok.apply("cleanup"),
                EnqueueOptions.DEFAULTS,
                io.pgjobs.Dependency.on("archive").runAnyway())
            .build())
        .ids();
    app.awaitState(ids.get("report"), io.pgjobs.JobState.SUCCEEDED);
    app.awaitState(ids.get("alert"), io.pgjobs.JobState.SUCCEEDED);
    app.awaitState(ids.get("zip"), io.pgjobs.JobState.CANCELLED);

    browser.open(app.url("/jobs/" + ids.get("zip")));
    browser.waitFor(d -> browser.findAll("#job-graph g.gnode").size() == 10);
    browser.waitForAttribute(
        "#job-graph g[data-id='" + ids.get("archive") + "']", "data-state", "queued");
    browser.waitForAttribute(
        "#job-graph g[data-id='" + ids.get("cleanup") + "']", "data-state", "blocked");
    browser.script("window.scrollTo(0, 0);");
    assertSmallPng(browser.screenshot(DIR, "dashboard-graph.png"));
    browser.assertNoConsoleErrors();
  }
}
