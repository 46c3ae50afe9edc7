package io.pgjobs.server.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.JobState;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The browser job tracker ({@code /client/pgjobs.js}) through its example page
 * ({@code /client/tracker.html}) in headless Chromium, against a real server, database and worker:
 * the page starts a job, follows it over the WebSocket (or the SSE fallback), cancels it, and
 * survives a server restart.
 */
class TrackerPageTest extends BrowserTest {

  private static String key() {
    return UUID.randomUUID().toString().substring(0, 8);
  }

  /** Opens the example page set up to start a {@code task} job with {@code note} and {@code key}. */
  private static void openPage(String note, String key, String extra) {
    String args = "{\"note\":\"" + note + "\",\"key\":\"" + key + "\"}";
    browser.openOther(
        "http://127.0.0.1:" + app.server.port() + "/client/tracker.html?type=task&args="
            + URLEncoder.encode(args, StandardCharsets.UTF_8) + extra);
    browser.visible("#start");
  }

  /** Clicks Start and returns the id of the job the page started. */
  private static UUID startJob() {
    String before = browser.text("#job-id");
    browser.click("#start");
    browser.waitFor(
        d -> !browser.text("#job-id").isEmpty() && !browser.text("#job-id").equals(before));
    return UUID.fromString(browser.text("#job-id"));
  }

  private static void waitForProgress(int percent, String message) {
    browser.waitForText("#percent", percent + " %");
    browser.waitForText("#message", message);
    assertThat(browser.attribute("#bar", "style")).contains("width: " + percent + "%");
  }

  @Test
  void progressAdvancesAndTheFinalStateAndOutputArriveOverTheWebSocket() {
    String key = key();
    openPage("steps", key, "");
    UUID id = startJob();

    browser.waitForText("#state", "running");
    waitForProgress(10, "step 1");
    app.releaseStep(key, 1);
    waitForProgress(60, "step 2");
    app.releaseStep(key, 2);

    browser.waitForAttribute("body", "data-done", "succeeded");
    assertThat(browser.text("#state")).isEqualTo("succeeded");
    assertThat(browser.text("#output")).contains("\"done\": \"" + key + "\"");
    assertThat(browser.find("#cancel").isEnabled()).isFalse();
    assertThat(browser.attribute("body", "data-transport")).isEqualTo("websocket");
    assertThat(app.job(id).state()).isEqualTo(JobState.SUCCEEDED);
  }

  /** The recorded steps the page lists, as "name state". */
  private static java.util.List<String> listedSteps() {
    java.util.List<String> names = browser.attributes("#steps li", "data-step");
    java.util.List<String> states = browser.attributes("#steps li", "data-state");
    java.util.List<String> out = new java.util.ArrayList<>();
    for (int i = 0; i < names.size() && i < states.size(); i++) {
      out.add(names.get(i) + " " + states.get(i));
    }
    return out;
  }

  @Test
  void aWorkflowStartedFromThePageShowsEachStepAsItIsRecordedAndItsFinalState() {
    String key = key();
    String input = "{\"note\":\"steps\",\"key\":\"" + key + "\"}";
    browser.openOther("http://127.0.0.1:" + app.server.port() + "/client/tracker.html?workflow="
        + DashboardFixture.FLOW.name() + "&input="
        + URLEncoder.encode(input, StandardCharsets.UTF_8));
    browser.visible("#start");
    UUID id = startJob();

    // The run waits in its second step: the first is listed while the run is still running.
    browser.waitFor(d -> listedSteps().equals(java.util.List.of("fetch done")));
    assertThat(browser.text("#state")).isEqualTo("running");
    app.releaseStep(key, 1);
    browser.waitFor(d -> listedSteps().equals(java.util.List.of("fetch done", "store done")));
    assertThat(browser.text("#state")).isEqualTo("running");
    app.releaseStep(key, 2);

    browser.waitForAttribute("body", "data-done", "succeeded");
    assertThat(listedSteps()).containsExactly("fetch done", "store done", "enrich skipped");
    assertThat(browser.text("#steps")).contains("enrichment service down");
    assertThat(browser.text("#output")).contains("\"ok\": true");
    assertThat(browser.attribute("body", "data-transport")).isEqualTo("websocket");
    assertThat(app.job(id).state()).isEqualTo(JobState.SUCCEEDED);
    assertThat(browser.driver.getCurrentUrl()).contains("?run=" + id);
  }

  @Test
  void cancelStopsTheRunningJobAndTheCancelledStateArrives() {
    openPage("block", key(), "");
    UUID id = startJob();
    browser.waitForText("#state", "running");

    browser.click("#cancel");

    browser.waitForAttribute("body", "data-done", "cancelled");
    assertThat(app.awaitState(id, JobState.CANCELLED).state()).isEqualTo(JobState.CANCELLED);
  }

  @Test
  void aFailedJobShowsItsLastError() {
    String key = key();
    openPage("fail", key, "");
    startJob();
    browser.waitForAttribute("body", "data-done", "failed");
    browser.waitForText("#error", "boom: " + key);
  }

  @Test
  void aServerRestartDropsTheWebSocketAndThePageStillShowsTheFinalState() {
    String key = key();
    openPage("steps", key, "");
    UUID id = startJob();
    waitForProgress(10, "step 1");
    assertThat(browser.attribute("body", "data-transport")).isEqualTo("websocket");

    int port = app.stopServer();
    // The job ends while no server is there to tell the page: its final event is lost for good.
    app.releaseStep(key, 1);
    app.releaseStep(key, 2);
    app.awaitState(id, JobState.SUCCEEDED);
    app.startServerAgain(port);

    browser.waitForAttribute("body", "data-done", "succeeded");
    assertThat(browser.text("#state")).isEqualTo("succeeded");
    assertThat(browser.text("#output")).contains("\"done\": \"" + key + "\"");
    // Reconnected over the WebSocket again: the server answered HTTP only once the socket worked
    // too.
    assertThat(browser.attribute("body", "data-transport")).isEqualTo("websocket");
    // While the server was away Chrome logged the refused connections; those are expected here.
    browser
        .consoleErrors()
        .forEach(
            e -> assertThat(e).containsAnyOf("ERR_CONNECTION_REFUSED", "WebSocket connection"));
  }

  @Test
  void theServerSentEventsFallbackDeliversProgressAndTheFinalState() {
    String key = key();
    openPage("steps", key, "&transport=sse");
    startJob();
    waitForProgress(10, "step 1");
    assertThat(browser.attribute("body", "data-transport")).isEqualTo("sse");
    app.releaseStep(key, 1);
    waitForProgress(60, "step 2");
    app.releaseStep(key, 2);
    browser.waitForAttribute("body", "data-done", "succeeded");
    assertThat(browser.text("#output")).contains("\"done\": \"" + key + "\"");
  }

  @Test
  void aSecondJobStartedOnThePageIsFollowedAfterTheFirstWasClosed() {
    String first = key();
    openPage("steps", first, "");
    UUID firstId = startJob();
    waitForProgress(10, "step 1");

    // The page closes the first tracker (the client's connection goes idle) and follows the new
    // job.
    String second = key();
    browser.find("#args").clear();
    browser.find("#args").sendKeys("{\"note\":\"steps\",\"key\":\"" + second + "\"}");
    UUID secondId = startJob();
    assertThat(secondId).isNotEqualTo(firstId);
    waitForProgress(10, "step 1");
    app.releaseStep(second, 1);
    app.releaseStep(second, 2);
    browser.waitForAttribute("body", "data-done", "succeeded");
    assertThat(browser.text("#output")).contains("\"done\": \"" + second + "\"");
    app.releaseStep(first, 1);
    app.releaseStep(first, 2);
    app.awaitState(firstId, JobState.SUCCEEDED);
  }

  @Test
  void aPageOpenedWithAJobIdFollowsThatJob() {
    String key = key();
    UUID id = app.enqueue("steps", key, "default");
    browser.openOther("http://127.0.0.1:" + app.server.port() + "/client/tracker.html?job=" + id);
    waitForProgress(10, "step 1");
    app.releaseStep(key, 1);
    app.releaseStep(key, 2);
    browser.waitForAttribute("body", "data-done", "succeeded");
    assertThat(browser.text("#job-id")).isEqualTo(id.toString());
  }

  @Test
  void theDashboardFollowsAJobOnTheSameClientOverTheWebSocketAndOverTheFallback() {
    for (String transport : new String[] {"websocket", "sse"}) {
      String key = key();
      UUID id = app.enqueue("steps", key, "default");
      browser.open(app.url("/jobs/" + id));
      // The dashboard reads the forced transport when it starts: set it, then reload.
      browser.script(
          transport.equals("sse")
              ? "sessionStorage.setItem('pgjobs.transport', 'sse');"
              : "sessionStorage.removeItem('pgjobs.transport');");
      browser.driver.navigate().refresh();
      browser.waitForAttribute("#live", "data-transport", transport);
      browser.waitForAttribute("#live", "data-status", "live");

      browser.waitForText("#job-progress-message", "step 1");
      app.releaseStep(key, 1);
      browser.waitForText("#job-progress-message", "step 2");
      app.releaseStep(key, 2);
      browser.waitForText("#job-state", "succeeded");
      browser.waitForText("#job-output", "\"done\": \"" + key + "\"");
    }
    browser.script("sessionStorage.removeItem('pgjobs.transport');");
  }
}
