package io.pgjobs.server.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.JobState;
import io.pgjobs.QueueLimits;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.interactions.Actions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The Queues page's flow-control limits (issue 29) in a real headless Chromium against a real server,
 * database and worker: limits, usage and why jobs wait, shown live, and the "Edit limits" form.
 */
class QueueLimitsDashboardTest extends BrowserTest {
  /** How soon a change made elsewhere must show: the page polls every 2 s, limits are 1 s old at most. */
  static final Duration SHOWS_WITHIN = Duration.ofSeconds(8);

  private static int put(String path, String json) throws Exception {
    try (HttpClient http = HttpClient.newHttpClient()) {
      HttpRequest request = HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + app.server.port() + path))
          .header("Content-Type", "application/json")
          .PUT(HttpRequest.BodyPublishers.ofString(json))
          .build();
      return http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
    }
  }

  private static String row(String queue) {
    return "#queues-admin-table tr[data-queue='" + queue + "']";
  }

  /**
   * Runs a job on {@code queue} (so the page lists it, without limits), opens the Queues page and the
   * queue's limits form; returns the form's selector.
   */
  private String openLimitsFormOfANewQueue(String queue) {
    app.awaitState(app.enqueue("ok", "img", queue), JobState.SUCCEEDED);
    browser.open(app.url("/queues"));
    browser.waitForText(row(queue) + " td.limits", "none");
    browser.click(row(queue) + " button.edit-limits");
    return "tr.limits-edit[data-editing='" + queue + "'] form";
  }

  @Test
  void aLimitLoweredThroughTheApiShowsOnTheQueuesPageWithUsageWhyJobsWaitAndBusiestPartitions()
      throws Exception {
    String queue = "reports";
    assertThat(
            put(
                "/queues/" + queue + "/limits",
                "{\"global_concurrency\": 3, \"partition_by\": \"input.key\","
                    + " \"partition_concurrency\": 2, \"partition_rate\": {\"limit\": 5, \"period\": \"1s\"}}"))
        .isEqualTo(200);
    List<UUID> jobs = new ArrayList<>();
    for (String key : List.of("a", "a", "a", "b")) {
      jobs.add(app.enqueue("block", key, queue));
    }
    try {
      browser.open(app.url("/queues"));
      // a runs two (its partition's limit), b one: the queue's three; the third a waits.
      browser.waitForText(row(queue) + " .limits-usage", "3 of 3 running · 1 waiting");
      assertThat(browser.text(row(queue) + " .limits-summary"))
          .isEqualTo("3 at once · per input.key: 2 at once, 5/s");
      assertThat(browser.text(row(queue) + " .limit-why")).isEqualTo("at global limit");
      assertThat(browser.text(row(queue) + " table.partitions tr[data-partition='a']"))
          .isEqualTo("a 2 1 partition busy");
      assertThat(browser.text(row(queue) + " table.partitions tr[data-partition='b']"))
          .isEqualTo("b 1 0 –");

      long start = System.nanoTime();
      assertThat(
              put(
                  "/queues/" + queue + "/limits",
                  "{\"global_concurrency\": 2, \"partition_by\": \"input.key\","
                      + " \"partition_concurrency\": 2, \"partition_rate\": {\"limit\": 5, \"period\": \"1s\"}}"))
          .isEqualTo(200);
      browser.waitForText(row(queue) + " .limits-summary", "2 at once ·");
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .as("the lowered limit shows without a reload or a job event")
          .isLessThan(SHOWS_WITHIN);
      assertThat(browser.text(row(queue) + " .limits-usage")).startsWith("3 of 2 running");
      assertThat(browser.text(row(queue) + " .limit-why")).isEqualTo("at global limit");
    } finally {
      jobs.forEach(app.client::cancel);
      app.client.clearLimits(queue);
    }
  }

  @Test
  void theEditLimitsFormShowsARefusalInPlaceThenSetsAndRemovesTheLimits() {
    String queue = "images";
    String form = openLimitsFormOfANewQueue(queue);
    browser.visible(form + " input[name='global_concurrency']").sendKeys("0");
    browser.expectFailedRequest("/queues/" + queue + "/limits", 422);
    browser.click(form + " button.save-limits");
    browser.waitForText(form + " .limits-problem", "between 1 and 100000, was 0");
    assertThat(browser.text(form + " .limits-problem")).contains("422", "global_concurrency");
    assertThat(app.client.limits(queue)).isEmpty();

    WebElement global = browser.find(form + " input[name='global_concurrency']");
    global.clear();
    global.sendKeys("5");
    browser.find(form + " input[name='rate_limit']").sendKeys("10");
    browser.find(form + " input[name='rate_period']").sendKeys("1s");
    browser.click(form + " button.save-limits");
    browser.waitForText("#action-result", "limits are set");
    browser.waitForText(row(queue) + " .limits-summary", "5 at once · 10/s");
    assertThat(browser.findAll("tr.limits-edit")).isEmpty();
    assertThat(app.client.limits(queue))
        .contains(QueueLimits.builder()
            .globalConcurrency(5)
            .rate(10, Duration.ofSeconds(1))
            .build());

    browser.click(row(queue) + " button.edit-limits");
    assertThat(browser.visible(form + " input[name='rate_period']").getAttribute("value"))
        .isEqualTo("1s");
    browser.click(form + " button.remove-limits");
    browser.waitForText("#action-result", "has no limits now");
    browser.waitForText(row(queue) + " td.limits", "none");
    assertThat(app.client.limits(queue)).isEmpty();
  }

  /**
   * The page re-renders its table every 2 s and on job events; the open form must stay in the document
   * through it. A form row taken out and put back loses the focus, and what the user goes on typing lands
   * nowhere: on a slow machine the form test above sent "1" of a period "1s" and got a 422.
   */
  @Test
  void aFieldBeingTypedInKeepsTheFocusThroughTheLiveUpdates() {
    String queue = "images";
    String form = openLimitsFormOfANewQueue(queue);
    WebElement period = browser.visible(form + " input[name='rate_period']");
    period.sendKeys("1");

    // A re-render replaces the queue's row with a new one: wait for one.
    WebElement before = browser.find(row(queue));
    new WebDriverWait(browser.driver, Duration.ofSeconds(20))
        .until(ExpectedConditions.stalenessOf(before));
    assertThat(browser.script("return document.activeElement.getAttribute('name')"))
        .as("the focused element after a live update")
        .isEqualTo("rate_period");
    // Typing on goes to the focused element, as a user's keys do.
    new Actions(browser.driver).sendKeys("s").perform();
    assertThat(browser.find(form + " input[name='rate_period']").getAttribute("value"))
        .isEqualTo("1s");
    browser.click(form + " button[type='button']:not(.remove-limits)");
    browser.waitFor(d ->
        d.findElements(org.openqa.selenium.By.cssSelector("tr.limits-edit")).isEmpty());
  }

  @Test
  void aJobsPageShowsItsPartitionAndWhyItWaits() throws Exception {
    String queue = "emails";
    assertThat(put(
            "/queues/" + queue + "/limits",
            "{\"partition_by\": \"input.key\", \"partition_concurrency\": 1}"))
        .isEqualTo(200);
    UUID first = app.enqueue("block", "t1", queue);
    UUID second = app.enqueue("block", "t1", queue);
    try {
      app.awaitState(first, JobState.RUNNING);
      browser.open(app.url("/jobs/" + second));
      browser.waitForText("#job-waiting-for", "waiting: partition busy");
      assertThat(browser.text("#job-partition")).isEqualTo("t1");

      browser.open(app.url("/jobs/" + first));
      browser.waitForText("#job-partition", "t1");
      assertThat(browser.findAll("#job-waiting-for")).as("running, not waiting").isEmpty();
    } finally {
      app.client.cancel(first);
      app.client.cancel(second);
      app.client.clearLimits(queue);
    }
  }
}
