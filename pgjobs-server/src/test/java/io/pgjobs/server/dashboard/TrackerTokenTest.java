package io.pgjobs.server.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.JobState;
import io.pgjobs.server.ApiServer;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The tracker example page against a server with API tokens: the client sends the page's token. */
class TrackerTokenTest extends BrowserTest {
  static final String ADMIN = "admin-token-0123456789abcdef";
  static final String READ = "read-token-0123456789abcdef";

  @Override
  UnaryOperator<ApiServer.Builder> server() {
    return b -> b.tokens(Map.of(ADMIN, ApiServer.Scope.ADMIN, READ, ApiServer.Scope.READ));
  }

  private static int jobCount() {
    return app.client
        .list(io.pgjobs.JobFilter.builder().limit(1000).build())
        .jobs()
        .size();
  }

  private static void openPage(String key) {
    String args = "{\"note\":\"steps\",\"key\":\"" + key + "\"}";
    browser.openOther("http://127.0.0.1:" + app.server.port()
        + "/client/tracker.html?type=task&args=" + URLEncoder.encode(args, StandardCharsets.UTF_8));
    browser.visible("#start");
  }

  private static void start(String token) {
    browser.find("#token").clear();
    browser.find("#token").sendKeys(token);
    browser.click("#start");
  }

  @Test
  void aRefusedTokenSaysSoAndAReadTokenMayNotStartAJob() {
    int before = jobCount();
    openPage(UUID.randomUUID().toString().substring(0, 8));

    browser.expectFailedRequest("/jobs/task/dispatch", 401);
    start("not-a-valid-token-at-all");
    browser.waitForText("#start-error", "not valid");

    browser.expectFailedRequest("/jobs/task/dispatch", 403);
    start(READ);
    browser.waitForText("#start-error", "READ token");
    assertThat(browser.find("#tracker").isDisplayed()).isFalse();
    assertThat(jobCount()).isEqualTo(before);
  }

  @Test
  void anAdminTokenStartsTheJobAndTheWebSocketFollowsItWithTheSameToken() {
    String key = UUID.randomUUID().toString().substring(0, 8);
    openPage(key);
    start(ADMIN);
    browser.waitForText("#message", "step 1");
    app.releaseStep(key, 1);
    browser.waitForText("#message", "step 2");
    app.releaseStep(key, 2);
    browser.waitForAttribute("body", "data-done", "succeeded");
    assertThat(browser.attribute("body", "data-transport")).isEqualTo("websocket");
    UUID id = UUID.fromString(browser.text("#job-id"));
    assertThat(app.job(id).state()).isEqualTo(JobState.SUCCEEDED);
  }
}
