package io.pgjobs.server.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.JobState;
import io.pgjobs.server.ApiServer;
import java.util.function.UnaryOperator;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;

/**
 * The dashboard against a server with token authentication: it asks for a token, keeps it in
 * sessionStorage, sends it as a bearer token on every request and on the event stream (read with
 * fetch, since EventSource cannot send headers).
 */
class DashboardTokenTest extends BrowserTest {
  static final String ADMIN = "admin-token-0123456789abcdef";
  static final String READ = "read-token-0123456789abcdef";
  @Override
  UnaryOperator<ApiServer.Builder> server() {
    return b -> b.tokens(Map.of(ADMIN, ApiServer.Scope.ADMIN, READ, ApiServer.Scope.READ));
  }

  /** Every API read of the dashboard answers 401 until it has a token; Chrome logs each. */
  private static void expectUnauthorized() {
    for (String path : new String[] {"/queues", "/stats", "/workers", "/events", "/jobs", "/job-types"}) {
      browser.expectFailedRequest(path, 401);
    }
  }

  private static void enterToken(String token) {
    browser.visible("#token-dialog");
    browser.find("#token-input").sendKeys(token);
    browser.find("#token-save").click();
  }

  @Test
  void dashboardAsksForATokenKeepsItForTheTabAndStreamsEventsWithIt() {
    expectUnauthorized();
    browser.open(app.url("/jobs"));
    browser.visible("#token-dialog");
    assertThat(browser.find("#token-message").getText()).contains("needs a bearer token");

    enterToken("not-a-valid-token-at-all");
    browser.waitForText("#token-message", "not accepted");
    browser.find("#token-input").clear();
    enterToken(ADMIN);

    browser.waitFor(d -> !d.findElement(By.id("token-dialog")).isDisplayed());
    assertThat(browser.script("return sessionStorage.getItem('pgjobs.token');")).isEqualTo(ADMIN);
    browser.waitForAttribute("#live", "data-status", "live");
    browser.waitForText("#jobs-table tbody", "No jobs match.");

    // A new job appears by the event stream, which needs the token too.
    UUID id = app.enqueue("ok", "live", "parked");
    browser.waitFor(d -> !d.findElements(By.cssSelector("#jobs-table tr[data-job='" + id + "']")).isEmpty());

    // A reload keeps the token: no question asked.
    browser.driver.navigate().refresh();
    browser.waitFor(d -> !d.findElements(By.cssSelector("#jobs-table tr[data-job='" + id + "']")).isEmpty());
    assertThat(browser.find("#token-dialog").isDisplayed()).isFalse();
    browser.waitForAttribute("#live", "data-status", "live");
    assertThat(browser.find("#sign-out").isDisplayed()).isTrue();
  }

  @Test
  void readTokenCanLookButAChangeShowsTheForbiddenAnswer() {
    UUID id = app.enqueue("ok", "read", "parked");
    browser.open(app.url("/"));
    if (browser.script("return sessionStorage.getItem('pgjobs.token');") != null) {
      expectUnauthorized();
      browser.find("#sign-out").click(); // forgets the token and reloads
    } else {
      expectUnauthorized();
    }
    enterToken(READ);
    browser.waitFor(d -> !d.findElement(By.id("token-dialog")).isDisplayed());
    browser.open(app.url("/jobs/" + id));
    browser.waitForText("#job-state", "queued");

    browser.expectFailedRequest("/jobs/" + id + "/cancel", 403);
    browser.find("#action-cancel").click();
    browser.confirm("Cancel this job?");
    browser.waitForText("#action-result", "403");
    assertThat(browser.find("#action-result").getText()).contains("READ token");
    assertThat(app.job(id).state()).isEqualTo(JobState.QUEUED);
  }
}
