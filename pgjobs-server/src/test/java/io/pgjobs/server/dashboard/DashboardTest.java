package io.pgjobs.server.dashboard;

import static io.pgjobs.server.dashboard.DashboardFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;

/**
 * The dashboard in a real headless Chromium against a real server, database and worker. One browser
 * for the class; after every test the browser console must hold no error.
 */
class DashboardTest extends BrowserTest {
  @AfterEach
  void backToTheDesktopSize() {
    browser.windowSize(DashboardBrowser.DESKTOP);
  }

  private static String key() {
    return UUID.randomUUID().toString().substring(0, 8);
  }

  /** Marks the page; the mark survives everything but a reload. */
  private static void markPage() {
    browser.script("window.__pgjobsMark = 'not reloaded';");
  }

  private static void assertNotReloaded() {
    assertThat(browser.script("return window.__pgjobsMark;")).isEqualTo("not reloaded");
  }

  // ---------------------------------------------------------------- acceptance: enqueue and watch

  @Test
  void jobEnqueuedThroughTheFormShowsItsProgressBarMovingAndEndsSucceededWithoutReload() {
    String key = key();
    browser.open(app.url("/enqueue"));
    markPage();
    browser.waitFor(d ->
        d.findElements(By.cssSelector("#enqueue-type option[value='task']")).size() == 1);
    new Select(browser.find("#enqueue-type")).selectByValue("task");
    assertThat(browser.attribute("#enqueue-payload", "value")).contains("\"note\"", "\"key\"");
    WebElement payload = browser.find("#enqueue-payload");
    payload.clear();
    payload.sendKeys("{\"note\": \"steps\", \"key\": \"" + key + "\"}");
    browser.find("#enqueue-context").sendKeys("form " + key);
    browser.click("#enqueue-submit");

    browser.waitFor(d -> d.getCurrentUrl().matches(".*#/jobs/[0-9a-f-]{36}$"));
    UUID id = UUID.fromString(browser.driver.getCurrentUrl().replaceAll(".*#/jobs/", ""));
    browser.waitForText("#action-result", "201");
    assertThat(app.job(id).context()).isEqualTo("form " + key);

    browser.waitForAttribute("#job-progress", "data-percent", "10");
    browser.waitForText("#job-progress-message", "step 1");
    assertThat(browser.text("#job-state")).isEqualTo("running");

    app.releaseStep(key, 1);
    browser.waitForAttribute("#job-progress", "data-percent", "60");
    browser.waitForText("#job-progress-message", "step 2");

    app.releaseStep(key, 2);
    browser.waitForText("#job-state", "succeeded");
    browser.waitForAttribute("#job-progress", "data-percent", "100");
    browser.waitForText("#job-output", "\"done\": \"" + key + "\"");
    assertThat(browser.text("#job-payload")).contains("\"note\": \"steps\"");
    assertThat(browser.text("#job-worker")).isEqualTo(app.worker.workerId());
    assertNotReloaded();
  }

  @Test
  void jobsTableShowsLiveProgressBarsOfRunningJobsWithoutReload() {
    String key = key();
    browser.open(app.url("/jobs"));
    markPage();
    UUID id = app.enqueue("steps", key, "default");
    String row = "#jobs-table tr[data-job='" + id + "']";

    browser.waitForAttribute(row + " .progress", "data-percent", "10");
    assertThat(browser.text(row + " .state")).isEqualTo("running");
    app.releaseStep(key, 1);
    browser.waitForAttribute(row + " .progress", "data-percent", "60");
    app.releaseStep(key, 2);
    browser.waitForText(row + " .state", "succeeded");
    assertNotReloaded();
  }

  // ---------------------------------------------------------------- acceptance: actions

  @Test
  void runningJobCancelledFromItsPageShowsPendingOnWorkerAndEndsCancelled() {
    UUID id = app.enqueue("block", key(), "default");
    app.awaitState(id, JobState.RUNNING);
    browser.open(app.url("/jobs/" + id));
    browser.waitForText("#job-state", "running");
    markPage();

    browser.click("#action-cancel");
    browser.confirm("Cancel this job?");

    browser.waitForText("#action-result", "202");
    assertThat(browser.text("#action-result")).contains("pending on worker");
    browser.waitForText("#job-state", "cancelled");
    assertThat(app.job(id).state()).isEqualTo(JobState.CANCELLED);
    assertThat(browser.text("#job-attempts")).contains("cancelled while running");
    assertThat(browser.findAll("#action-cancel")).isEmpty();
    assertNotReloaded();
  }

  @Test
  void aChildJobAndItsParentLinkToEachOtherOnTheirPages() {
    UUID parent = app.enqueue("ok", key(), "parked");
    UUID child = app.enqueue(
        "ok",
        key(),
        io.pgjobs.EnqueueOptions.builder().queue("parked").parent(parent).build());

    browser.open(app.url("/jobs/" + child));
    browser.waitForText("#job-parent", parent.toString());
    browser.click("#job-parent");
    browser.waitFor(d -> d.getCurrentUrl().endsWith("#/jobs/" + parent));
    browser.waitForText("#job-children", child.toString());
  }

  @Test
  void aBlockedJobOfAGraphShowsWhatItWaitsForAndFollowsItsParentsEndLive() {
    String key = key();
    java.util.Map<String, UUID> ids = app.client
        .enqueueGraph(io.pgjobs.JobGraph.builder()
            .add(
                "parent",
                DashboardFixture.TASK,
                new DashboardFixture.Task("ok", key),
                EnqueueOptions.builder().queue("parked").build())
            .add(
                "child",
                DashboardFixture.TASK,
                new DashboardFixture.Task("ok", key),
                EnqueueOptions.DEFAULTS,
                io.pgjobs.Dependency.on("parent"))
            .build())
        .ids();
    UUID parent = ids.get("parent");
    UUID child = ids.get("child");

    browser.open(app.url("/jobs/" + child));
    markPage();
    browser.waitForText("#job-state", "blocked");
    browser.waitForText("#job-parents", parent.toString().substring(0, 8));
    assertThat(browser.text("#job-parents"))
        .contains("not ended")
        .contains("cancelled if it fails");

    // The parent is cancelled elsewhere: the child's page follows without a reload.
    app.client.cancel(parent);
    browser.waitForText("#job-state", "cancelled");
    browser.waitForText("#job-parents", "cancelled");
    assertNotReloaded();
    assertThat(app.job(child).errors())
        .last()
        .satisfies(e -> assertThat(e.kind()).isEqualTo("dependency"));
  }

  @Test
  void aJobsPageDrawsItsDependencyGraphAndRedrawsItAsTheOtherJobsEnd() {
    String key = key();
    EnqueueOptions parked = EnqueueOptions.builder().queue("parked").build();
    java.util.Map<String, UUID> ids = app.client
        .enqueueGraph(io.pgjobs.JobGraph.builder()
            .add("root", DashboardFixture.TASK, new DashboardFixture.Task("ok", key), parked)
            .add(
                "left",
                DashboardFixture.TASK,
                new DashboardFixture.Task("ok", key),
                parked,
                io.pgjobs.Dependency.on("root"))
            .add(
                "right",
                DashboardFixture.TASK,
                new DashboardFixture.Task("ok", key),
                parked,
                io.pgjobs.Dependency.on("root").runAnyway())
            .add(
                "join",
                DashboardFixture.TASK,
                new DashboardFixture.Task("ok", key),
                parked,
                io.pgjobs.Dependency.on("left"),
                io.pgjobs.Dependency.on("right"))
            .build())
        .ids();

    browser.open(app.url("/jobs/" + ids.get("join")));
    markPage();
    browser.waitFor(d -> browser.findAll("#job-graph g.gnode").size() == 4);
    assertThat(browser.findAll("#job-graph path.gedge")).hasSize(4);
    assertThat(browser.findAll("#job-graph path.gedge-run")).hasSize(1);
    assertThat(browser.attribute("#job-graph g.current", "data-id"))
        .isEqualTo(ids.get("join").toString());
    String root = "#job-graph g[data-id='" + ids.get("root") + "']";
    assertThat(browser.attribute(root, "data-state")).isEqualTo("queued");
    // Columns by depth: the root left of its children, the join right of them.
    double rootX = ((Number) browser.script(
            "return document.querySelector(arguments[0]).getBoundingClientRect().x;", root))
        .doubleValue();
    double joinX = ((Number) browser.script(
            "return document.querySelector('#job-graph g.current').getBoundingClientRect().x;"))
        .doubleValue();
    assertThat(joinX).isGreaterThan(rootX);

    // The root is cancelled elsewhere: "left" (cancel) is cancelled with the join; "right" (run) is
    // queued. The drawing follows without a reload.
    app.client.cancel(ids.get("root"));
    browser.waitForAttribute(root, "data-state", "cancelled");
    browser.waitForAttribute(
        "#job-graph g[data-id='" + ids.get("left") + "']", "data-state", "cancelled");
    browser.waitForAttribute(
        "#job-graph g[data-id='" + ids.get("right") + "']", "data-state", "queued");
    browser.waitForAttribute("#job-graph g.current", "data-state", "cancelled");
    assertNotReloaded();
    browser.click(root); // each job links to its page
    browser.waitFor(d -> d.getCurrentUrl().endsWith("#/jobs/" + ids.get("root")));
  }

  @Test
  void aWorkflowRunsPageListsItsRecordedSteps() {
    UUID run = app.client
        .enqueue(DashboardFixture.FLOW.jobType(), new DashboardFixture.Task("ok", key()))
        .job()
        .id();
    app.awaitState(run, JobState.SUCCEEDED);

    browser.open(app.url("/jobs/" + run));
    browser.waitFor(d -> browser.findAll("#workflow-steps tbody tr").size() == 3);
    assertThat(browser.attributes("#workflow-steps tbody tr", "data-step"))
        .containsExactly("fetch", "store", "enrich");
    assertThat(browser.attributes("#workflow-steps tbody tr", "data-state"))
        .containsExactly("done", "done", "skipped");
    assertThat(browser.text("#workflow-steps")).contains("42").contains("enrichment service down");

    // A job that is not a workflow run has no steps panel.
    UUID plain = app.enqueue("ok", key(), "default");
    app.awaitState(plain, JobState.SUCCEEDED);
    browser.open(app.url("/jobs/" + plain));
    browser.waitForText("#job-state", "succeeded");
    assertThat(browser.find("#workflow-steps-panel").isDisplayed()).isFalse();
  }

  @Test
  void waitingJobCancelledFromItsPageIsCancelledAtOnce() {
    UUID id = app.enqueue("ok", key(), "parked");
    browser.open(app.url("/jobs/" + id));
    browser.waitForText("#job-state", "queued");

    browser.click("#action-cancel");
    browser.confirm("Cancel this job?");

    browser.waitForText("#action-result", "200");
    assertThat(browser.text("#action-result")).contains("Cancelled");
    browser.waitForText("#job-state", "cancelled");
    assertThat(app.job(id).state()).isEqualTo(JobState.CANCELLED);
  }

  @Test
  void declinedConfirmationLeavesTheJobAlone() {
    UUID id = app.enqueue("ok", key(), "parked");
    browser.open(app.url("/jobs/" + id));
    browser.waitForText("#job-state", "queued");

    browser.click("#action-cancel");
    browser.visible("#confirm-dialog");
    browser.click("#confirm-no");

    browser.waitFor(d -> !d.findElement(By.id("confirm-dialog")).isDisplayed());
    assertThat(browser.text("#action-result")).isEmpty();
    assertThat(app.job(id).state()).isEqualTo(JobState.QUEUED);
  }

  @Test
  void failedJobRetriedFromItsPageRunsAgainAndSucceeds() {
    String key = key();
    UUID id =
        app.enqueue("fail-once", key, EnqueueOptions.builder().maxAttempts(1).build());
    app.awaitState(id, JobState.FAILED);
    browser.open(app.url("/jobs/" + id));
    browser.waitForText("#job-state", "failed");
    assertThat(browser.text("#job-attempts"))
        .contains("Attempt 1", "java.lang.IllegalStateException", "first try fails: " + key);
    browser.click("#job-attempts details summary");
    assertThat(browser.text("#job-attempts details pre")).contains("at ");

    browser.click("#action-retry");
    browser.confirm("Retry this job?");

    browser.waitForText("#action-result", "200");
    assertThat(browser.text("#action-result")).contains("Queued again");
    browser.waitForText("#job-state", "succeeded");
    // The first attempt's error stays visible.
    assertThat(browser.text("#job-attempts")).contains("first try fails: " + key);
    assertThat(app.job(id).state()).isEqualTo(JobState.SUCCEEDED);
  }

  @Test
  void failedJobRequeuedAsANewJobOpensTheCopyAndLeavesTheFailedOne() {
    String key = key();
    UUID id = app.enqueue(
        "fail-once",
        key,
        EnqueueOptions.builder().maxAttempts(1).context("requeue " + key).build());
    app.awaitState(id, JobState.FAILED);
    browser.open(app.url("/jobs/" + id));
    browser.waitForText("#job-state", "failed");

    browser.click("#action-requeue");
    browser.confirm("Requeue as a new job?");

    browser.waitFor(d -> !d.getCurrentUrl().endsWith(id.toString()));
    UUID copy = UUID.fromString(browser.driver.getCurrentUrl().replaceAll(".*#/jobs/", ""));
    browser.waitForText("#action-result", "201");
    browser.waitForText("#job-state", "succeeded");
    assertThat(app.job(copy).context()).isEqualTo("requeue " + key);
    assertThat(app.job(copy).payload().path("key").asString()).isEqualTo(key);
    assertThat(app.job(id).state()).isEqualTo(JobState.FAILED);
  }

  // ---------------------------------------------------------------- acceptance: queues

  @Test
  void pausedQueueKeepsItsJobsQueuedUntilResumed() {
    browser.open(app.url("/queues"));
    browser.find("#queue-name").sendKeys("reports");
    browser.find("#queue-name").submit();
    browser.waitForText("#action-result", "paused");
    browser.waitForAttribute("#queues-admin-table tr[data-queue='reports']", "data-paused", "true");

    UUID first = app.enqueue("ok", key(), "reports");
    UUID second = app.enqueue("ok", key(), "reports");
    // The worker serves "reports" and polls it every 100 ms: for two seconds nothing is claimed.
    await()
        .during(Duration.ofSeconds(2))
        .atMost(WAIT)
        .until(() -> app.job(first).state() == JobState.QUEUED
            && app.job(second).state() == JobState.QUEUED);

    browser.open(app.url("/"));
    String row = "#queues-table tr[data-queue='reports']";
    browser.waitForText(row + " td[data-count='queued']", "2");
    assertThat(browser.text(row)).contains("paused");

    browser.open(app.url("/queues"));
    // The table loads after the page: wait for the row before pressing its button.
    browser.waitForAttribute("#queues-admin-table tr[data-queue='reports']", "data-paused", "true");
    browser.click("#queues-admin-table tr[data-queue='reports'] button.resume");
    browser.waitForText("#action-result", "resumed");
    app.awaitState(first, JobState.SUCCEEDED);
    app.awaitState(second, JobState.SUCCEEDED);
    browser.waitForAttribute(
        "#queues-admin-table tr[data-queue='reports']", "data-paused", "false");
  }

  @Test
  void aJobThatNoLiveWorkerCanRunIsShownAsSuchOnTheQueuesPage() {
    // A queue of its own (no other test counts it); the fixture's worker declares no capabilities.
    String queue = "gpu-" + key();
    UUID id = app.enqueue(
        "ok", key(), EnqueueOptions.builder().queue(queue).capability("gpu").build());
    try {
      browser.open(app.url("/queues"));
      String row = "#queues-admin-table tr[data-queue='" + queue + "']";
      browser.waitForText(row + " .badge.unrunnable", "1 need gpu, no live worker has it");
      assertThat(app.job(id).state()).isEqualTo(JobState.QUEUED);
    } finally {
      app.client.cancel(id);
    }
  }

  // ---------------------------------------------------------------- acceptance: throughput chart

  @Test
  void throughputChartShowsTheCompletionsLive() {
    browser.open(app.url("/"));
    markPage();
    browser.visible("#throughput-chart svg");
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      ids.add(app.enqueue("ok", key(), "default"));
    }
    for (int i = 0; i < 2; i++) {
      ids.add(app.enqueue("fail", key(), EnqueueOptions.builder().maxAttempts(1).build()));
    }
    await()
        .atMost(WAIT)
        .until(() -> ids.stream().allMatch(id -> app.job(id).state().isTerminal()));

    long succeeded =
        app.db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'");
    long failed =
        app.db.queryLong("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'failed'");
    browser.waitForAttribute("#throughput-chart", "data-succeeded", Long.toString(succeeded));
    browser.waitForAttribute("#throughput-chart", "data-failed", Long.toString(failed));
    assertThat(succeeded).isGreaterThanOrEqualTo(5);
    assertThat(browser.text("#throughput-chart .total-succeeded"))
        .isEqualTo(Long.toString(succeeded));
    // The bars of this minute (and maybe the last, across a minute boundary) hold the new
    // completions. Read again if the live chart redraws between finding its bars and reading them.
    await()
        .atMost(WAIT)
        .ignoreException(org.openqa.selenium.StaleElementReferenceException.class)
        .untilAsserted(() -> assertThat(
                browser.findAll("#throughput-chart g[data-succeeded]").stream()
                    .mapToLong(g -> Long.parseLong(g.getAttribute("data-succeeded")))
                    .sum())
            .isEqualTo(succeeded));
    assertThat(browser.findAll("#throughput-chart rect.ok")).isNotEmpty();
    assertThat(browser.findAll("#throughput-chart rect.fail")).isNotEmpty();
    assertNotReloaded();
  }

  // ---------------------------------------------------------------- overview

  @Test
  void overviewShowsCountsPerQueueAndStateAndTheLiveWorker() {
    UUID running = app.enqueue("block", key(), "images");
    app.awaitState(running, JobState.RUNNING);
    UUID waiting = app.enqueue("ok", key(), "parked");
    UUID later = app.enqueue(
        "ok",
        key(),
        EnqueueOptions.builder().queue("parked").delay(Duration.ofHours(1)).build());
    browser.open(app.url("/"));

    String parked = "#queues-table tr[data-queue='parked']";
    browser.waitForText(parked + " td[data-count='scheduled']", "1");
    assertThat(browser.text(parked + " td[data-count='queued']"))
        .isEqualTo(Long.toString(app.db.queryLong(
            "SELECT count(*) FROM pgjobs.jobs WHERE queue = 'parked' AND run_at <= now()")));
    browser.waitFor(d ->
        !d.findElement(By.cssSelector(parked + " td[data-oldest]")).getText().equals("–"));
    browser.waitForText("#queues-table tr[data-queue='images'] td[data-count='running']", "1");

    String worker = "#workers-table tr[data-worker='" + app.worker.workerId() + "']";
    browser.waitForText(worker, "images ×4");
    // The last heartbeat reads "just now" for its first second, then "1 s ago" (the page ticks
    // every second).
    browser.waitForText(worker, "ago");
    assertThat(browser.text(worker)).contains("default ×4", "emails ×4", "reports ×4", "ago");
    browser.waitFor(
        d -> Integer.parseInt(d.findElement(By.cssSelector(worker + " td[data-running]"))
                .getAttribute("data-running"))
            >= 1);
    assertThat(browser.text("#totals .card.running .n")).isNotEqualTo("0");

    app.client.cancel(running);
    app.client.cancel(waiting);
    app.client.cancel(later);
  }

  // ---------------------------------------------------------------- jobs table

  @Test
  void jobsTableFiltersByStateTypeQueueAndTextNewestFirstAPageAtATime() {
    String mark = "order-" + key();
    String queue = "list-" + key();
    List<UUID> listed = new ArrayList<>();
    for (int i = 0; i < 55; i++) {
      listed.add(app.enqueue(
          "ok",
          "p" + i,
          EnqueueOptions.builder().queue(queue).context(i == 7 ? mark : null).build()));
    }
    UUID failed =
        app.enqueue("fail", "f-" + mark, EnqueueOptions.builder().maxAttempts(1).build());
    app.awaitState(failed, JobState.FAILED);
    // Newest first: by id, which is time-ordered (UUIDv7; ids of one millisecond in random order).
    List<String> expected =
        listed.stream().sorted(PG_UUID_ORDER.reversed()).map(UUID::toString).toList();

    browser.open(app.url("/jobs?queue=" + queue));
    browser.waitForText("#page-info", "page 1 · 50 jobs");
    List<String> all = new ArrayList<>(rowIds());
    assertThat(all).isEqualTo(expected.subList(0, 50));
    browser.click("#page-older");
    browser.waitForText("#page-info", "page 2 · 5 jobs");
    all.addAll(rowIds());
    assertThat(all).isEqualTo(expected);
    assertThat(browser.find("#page-older").isEnabled()).isFalse();
    browser.click("#page-newer");
    browser.waitForText("#page-info", "page 1 · 50 jobs");
    assertThat(rowIds()).isEqualTo(expected.subList(0, 50));

    // Text in the context or the payload.
    browser.find("#filter-queue").clear();
    browser.find("#filter-text").sendKeys(mark);
    browser.click("#filter-apply");
    browser.waitFor(
        d -> rowIds().equals(List.of(failed.toString(), listed.get(7).toString())));
    assertThat(browser.driver.getCurrentUrl()).contains("text=" + mark);

    new Select(browser.find("#filter-state")).selectByValue("failed");
    browser.waitFor(d -> rowIds().equals(List.of(failed.toString())));

    browser.find("#filter-text").clear();
    browser.find("#filter-type").sendKeys("send_email");
    browser.click("#filter-apply");
    browser.waitForText("#jobs-table tbody", "No jobs match.");
  }

  /** PostgreSQL's uuid order (unsigned, byte by byte), which "newest first" follows. */
  private static final java.util.Comparator<UUID> PG_UUID_ORDER = java.util.Comparator.comparing(
          UUID::getMostSignificantBits, Long::compareUnsigned)
      .thenComparing(UUID::getLeastSignificantBits, Long::compareUnsigned);

  private static List<String> rowIds() {
    return browser.findAll("#jobs-table tbody tr[data-job]").stream()
        .map(r -> r.getAttribute("data-job"))
        .toList();
  }

  // ---------------------------------------------------------------- bulk actions

  @Test
  void cancelMatchingShowsTheCountFromADryRunBeforeConfirmingAndThenCancelsExactlyThose() {
    String queue = "bulk-" + key();
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ids.add(app.enqueue(
          key(),
          key(),
          EnqueueOptions.builder()
              .queue(queue)
              .delay(java.time.Duration.ofHours(1))
              .build()));
    }
    UUID elsewhere = app.enqueue(
        key(),
        key(),
        EnqueueOptions.builder()
            .queue("other-" + key())
            .delay(java.time.Duration.ofHours(1))
            .build());

    browser.open(app.url("/jobs?queue=" + queue));
    browser.waitFor(d -> browser.findAll("#jobs-table tbody tr[data-job]").size() == 3);
    browser.click("#bulk-cancel");
    browser.visible("#confirm-dialog");
    assertThat(browser.text("#confirm-title")).isEqualTo("Cancel matching jobs?");
    assertThat(browser.text("#confirm-message"))
        .startsWith("3 jobs matching these filters will be cancelled");
    assertThat(browser.text("#confirm-yes")).isEqualTo("Cancel 3 jobs");
    // The count came from a dry run: nothing is cancelled while the question is open.
    ids.forEach(id -> assertThat(app.job(id).state()).isEqualTo(JobState.QUEUED));
    browser.confirm("Cancel matching jobs?");

    browser.waitForText("#bulk-result", "Cancelled 3");
    ids.forEach(id -> app.awaitState(id, JobState.CANCELLED));
    assertThat(app.job(elsewhere).state()).isEqualTo(JobState.QUEUED);

    browser.click("#bulk-retry");
    browser.visible("#confirm-dialog");
    assertThat(browser.text("#confirm-message"))
        .startsWith("3 jobs matching these filters will be queued again");
    browser.click("#confirm-no");
    browser.waitFor(d -> !d.findElement(By.id("confirm-dialog")).isDisplayed());
    ids.forEach(id -> assertThat(app.job(id).state()).isEqualTo(JobState.CANCELLED));
  }

  @Test
  void eventsUrlOpenedInABrowserShowsTheLiveStream() {
    String queue = "events-" + key();
    browser.openOther(app.url("") + "events?queue=" + queue);
    browser.waitForText("#status", "connected");
    browser.waitForText("#events", "snapshot");

    app.enqueue(key(), key(), EnqueueOptions.builder().queue(queue).build());

    browser.waitForText("#events", "\"queue\":\"" + queue + "\"");
    assertThat(browser.text("#events")).contains(" state ");
  }

  // ---------------------------------------------------------------- dead letters

  @Test
  void deadLettersGroupFailedJobsByTypeAndErrorAndRetryAllQueuesTheGroupAgain() {
    app.gatewayDown(true);
    List<UUID> group = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      group.add(
          app.enqueue("flaky", key(), EnqueueOptions.builder().maxAttempts(1).build()));
    }
    String otherKey = key();
    UUID other =
        app.enqueue("fail", otherKey, EnqueueOptions.builder().maxAttempts(1).build());
    group.forEach(id -> app.awaitState(id, JobState.FAILED));
    app.awaitState(other, JobState.FAILED);

    browser.open(app.url("/dead-letters"));
    browser.waitFor(d -> groupRow("java.net.ConnectException") != null);
    WebElement row = groupRow("java.net.ConnectException");
    assertThat(row.getAttribute("data-type")).isEqualTo("task");
    assertThat(row.getAttribute("data-count")).isEqualTo("3");
    assertThat(row.findElement(By.cssSelector(".err-line")).getText()).contains("gateway down");
    assertThat(Integer.parseInt(
            groupRow("java.lang.IllegalStateException").getAttribute("data-count")))
        .isPositive();

    app.gatewayDown(false);
    row.findElement(By.cssSelector("button.retry-group")).click();
    browser.confirm("Retry this group?");

    browser.waitForText("#action-result", "Queued again: 3 task jobs");
    group.forEach(id -> app.awaitState(id, JobState.SUCCEEDED));
    assertThat(app.job(other).state()).isEqualTo(JobState.FAILED);
    browser.waitFor(d -> groupRow("java.net.ConnectException") == null);
    assertThat(groupRow("java.lang.IllegalStateException")).isNotNull();
  }

  private static WebElement groupRow(String error) {
    return browser.findAll("#dead-letters-table tbody tr[data-type]").stream()
        .filter(r -> r.findElement(By.cssSelector(".err-line code")).getText().equals(error))
        .findFirst()
        .orElse(null);
  }

  // ---------------------------------------------------------------- enqueue form

  @Test
  void enqueueFormShowsTheApisValidationErrorsNextToTheFieldsAndStoresNothing() {
    long before = storedJobs();
    browser.open(app.url("/enqueue?type=send_email"));
    browser.waitFor(
        d -> "send_email".equals(d.findElement(By.id("enqueue-type")).getAttribute("value")));
    assertThat(browser.attribute("#enqueue-queue", "placeholder")).isEqualTo("emails");
    // Prefilled with the type's example (JobType.withExample).
    assertThat(browser.attribute("#enqueue-payload", "value"))
        .contains("\"to\": \"ada@example.com\"");

    // Not JSON: caught before anything is sent.
    WebElement payload = browser.find("#enqueue-payload");
    payload.clear();
    payload.sendKeys("{\"to\": ");
    browser.click("#enqueue-submit");
    browser.waitForText(".field-error[data-for='payload']", "not valid JSON");

    // A bad option only the API can judge (the form checks numbers itself): its 422 names the
    // field, shown next to it.
    browser.expectFailedRequest("/jobs", 422);
    payload.clear();
    payload.sendKeys("{\"to\": \"nobody\", \"subject\": \"\"}");
    browser.find("#enqueue-queue").sendKeys("no spaces allowed");
    browser.click("#enqueue-submit");
    browser.waitForText("#enqueue-errors", "422");
    browser.waitFor(d -> !browser.text(".field-error[data-for='queue']").isEmpty());
    assertThat(browser.attribute("#enqueue-queue", "class")).contains("invalid");

    // A payload its type's validator rejects: every problem next to the payload.
    browser.find("#enqueue-queue").clear();
    browser.expectFailedRequest("/jobs", 422);
    browser.click("#enqueue-submit");
    browser.waitForText(
        ".field-error[data-for='payload']", "payload.to: must be an e-mail address");
    assertThat(browser.text(".field-error[data-for='payload']"))
        .contains("payload.subject: is required");
    assertThat(browser.text(".field-error[data-for='queue']")).isEmpty();
    assertThat(browser.attribute("#enqueue-payload", "class")).contains("invalid");
    assertThat(browser.driver.getCurrentUrl()).endsWith("#/enqueue?type=send_email");
    assertThat(storedJobs()).isEqualTo(before);

    // Fixed: enqueued, and the page of the new job opens.
    payload.clear();
    payload.sendKeys("{\"to\": \"ada@example.com\", \"subject\": \"Hi\"}");
    browser.click("#enqueue-submit");
    browser.waitFor(d -> d.getCurrentUrl().matches(".*#/jobs/[0-9a-f-]{36}$"));
    browser.waitForText("#job-state", "succeeded");
    browser.waitForText("#job-output", "\"sent\": true");
  }

  private static long storedJobs() {
    return app.db.queryLong(
        "SELECT (SELECT count(*) FROM pgjobs.jobs) + (SELECT count(*) FROM pgjobs.finished_jobs)");
  }

  @Test
  void enqueueWithTheSameIdempotencyKeyTwiceShowsTheOriginalJob() {
    String idempotencyKey = "dash-" + key();
    List<String> urls = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      browser.open(app.url("/enqueue?type=task"));
      browser.waitFor(
          d -> "task".equals(d.findElement(By.id("enqueue-type")).getAttribute("value")));
      WebElement payload = browser.find("#enqueue-payload");
      payload.clear();
      payload.sendKeys("{\"note\": \"ok\", \"key\": \"" + idempotencyKey + "\"}");
      browser.find("#enqueue-queue").sendKeys("parked");
      browser.find("#enqueue-key").sendKeys(idempotencyKey);
      browser.click("#enqueue-submit");
      browser.waitFor(d -> d.getCurrentUrl().matches(".*#/jobs/[0-9a-f-]{36}$"));
      browser.waitForText("#action-result", i == 0 ? "201" : "200");
      urls.add(browser.driver.getCurrentUrl());
    }
    assertThat(browser.text("#action-result")).contains("already exists");
    assertThat(urls.get(1)).isEqualTo(urls.get(0));
  }

  // ---------------------------------------------------------------- layout

  @Test
  void everyPageFitsAPhoneWidthWithoutSidewaysScrolling() {
    UUID id = app.enqueue(
        "fail",
        key(),
        EnqueueOptions.builder()
            .maxAttempts(1)
            .context(("a rather long context "
                    + "string that goes on and on to see that it wraps instead of widening the page ")
                .repeat(2))
            .build());
    app.awaitState(id, JobState.FAILED);
    browser.windowSize(new Dimension(390, 844));
    for (String page :
        List.of("/", "/jobs", "/jobs/" + id, "/dead-letters", "/enqueue", "/queues")) {
      browser.open(app.url(page));
      browser.waitFor(d -> !d.findElement(By.id("main")).getText().isBlank());
      browser.waitFor(d -> d.findElements(By.cssSelector(
                  "#main tbody tr, #job-facts dt, #enqueue-type option[value='task']"))
              .size()
          > 0);
      Number overflow = (Number) browser.script(
          "return document.documentElement.scrollWidth - document.documentElement.clientWidth;");
      assertThat(overflow.intValue())
          .as("sideways overflow of %s at 390 px", page)
          .isLessThanOrEqualTo(0);
    }
  }

  @Test
  void themeFollowsTheSystemColourScheme() {
    browser.open(app.url("/"));
    try {
      browser.colorScheme("dark");
      String dark = (String)
          browser.script("return getComputedStyle(document.documentElement).backgroundColor;");
      browser.colorScheme("light");
      String light = (String)
          browser.script("return getComputedStyle(document.documentElement).backgroundColor;");
      assertThat(brightness(dark)).isLessThan(0.2);
      assertThat(brightness(light)).isGreaterThan(0.8);
    } finally {
      browser.colorScheme("light");
    }
  }

  /** Brightness 0..1 of "rgb(r, g, b)". */
  private static double brightness(String rgb) {
    String[] parts = rgb.replaceAll("[^0-9,]", "").split(",");
    return (Integer.parseInt(parts[0]) + Integer.parseInt(parts[1]) + Integer.parseInt(parts[2]))
        / (3 * 255.0);
  }

  // ---------------------------------------------------------------- the event stream parser

  @Test
  void eventStreamParserHandlesEventsSplitAnywhereAndEveryLineEnding() {
    browser.open(app.url("/"));
    Object events = browser.driver.executeAsyncScript("""
        const done = arguments[arguments.length - 1];
        import('/js/events.js').then(({sseParser}) => {
          const seen = [];
          const feed = sseParser(e => seen.push(e.event + '|' + e.data + '|' + e.id));
          const text = ': ping\\r\\nevent: state\\r\\nid: 7\\r\\ndata: {"a":1}\\r\\n\\r\\n'
              + 'data: line one\\ndata: line two\\n\\n'
              + 'event: progress\\rdata:no-space\\r\\r'
              + 'event: ignored-without-data\\n\\n';
          // One character at a time: every split point, CR and LF apart included.
          for (const c of text) feed(c);
          done(seen);
        });
        """);
    assertThat(events)
        .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.LIST)
        .containsExactly(
            "state|{\"a\":1}|7", "message|line one\nline two|7", "progress|no-space|7");
  }
}
