package io.pgjobs.server.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.Timer;
import io.pgjobs.JobState;
import io.pgjobs.QueueInfo;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cross-site requests in a real browser (finding 11): a page of another origin ({@code http://localhost:<its
 * port>}) makes Chromium send the API's body-less POSTs, as any web site could while the dashboard's user
 * visits it, and nothing changes; the dashboard's own pages (also under the name {@code localhost}) go on
 * pausing and resuming queues.
 */
class CrossSiteDashboardTest extends BrowserTest {
  /** The other site: one page that POSTs to the API without a preflight, by fetch and by a form. */
  static HttpServer other;

  static final String PAGE = """
      <!doctype html>
      <html><head><title>other site</title><link rel="icon" href="data:,"></head><body>
      <form id="cancel" method="POST" enctype="text/plain"><input name="x" value="y"></form>
      <script>
        const params = new URLSearchParams(location.search);
        document.getElementById('cancel').action = params.get('cancel');
        window.pause = () => fetch(params.get('pause'),
            {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body: 'x'})
          .then(() => { document.title = 'sent'; }, e => { document.title = 'fetch failed: ' + e; });
      </script>
      </body></html>
      """;

  @BeforeAll
  static void startTheOtherSite() throws IOException {
    other = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    other.createContext("/", exchange -> {
      byte[] body = PAGE.getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "text/html; charset=utf-8");
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    other.start();
  }

  @AfterAll
  static void stopTheOtherSite() {
    if (other != null) {
      other.stop(0);
    }
  }

  private static String api(String path) {
    return "http://127.0.0.1:" + app.server.port() + path;
  }

  private static String otherPage(String pause, String cancel) {
    return "http://localhost:" + other.getAddress().getPort() + "/page.html?pause="
        + java.net.URLEncoder.encode(pause, StandardCharsets.UTF_8) + "&cancel="
        + java.net.URLEncoder.encode(cancel, StandardCharsets.UTF_8);
  }

  private static boolean paused(String queue) {
    return app.client.queues().stream()
        .filter(q -> q.name().equals(queue))
        .findFirst()
        .map(QueueInfo::paused)
        .orElse(false);
  }

  /** POSTs the server answered 403 so far (its own request timer). */
  private static long refusedPosts() {
    return app
        .server
        .meterRegistry()
        .find("http.server.requests")
        .tag("method", "POST")
        .tag("status", "403")
        .timers()
        .stream()
        .mapToLong(Timer::count)
        .sum();
  }

  @Test
  void aPageOfAnotherSiteCannotPauseAQueueOrCancelAJob() {
    // A queue no worker serves: its job stays queued unless something cancels it.
    String queue = "unserved-" + UUID.randomUUID().toString().substring(0, 8);
    UUID job = app.enqueue("ok", "xsite", queue);
    browser.expectFailedRequest("/pause", 403);
    browser.expectFailedRequest("/cancel", 403);
    // The form's answer is a page of the API's origin, whose favicon Chrome then asks the API for.
    browser.expectFailedRequest("/favicon.ico", 404);

    long refusedBefore = refusedPosts();
    browser.openOther(
        otherPage(api("/queues/" + queue + "/pause"), api("/jobs/" + job + "/cancel")));
    browser.waitFor(d -> d.getTitle().equals("other site"));
    browser.script("window.pause();");
    browser.waitFor(d -> d.getTitle().equals("sent"));
    // The fetch ends once the answer has arrived: whatever the server did is done.
    assertThat(paused(queue)).as("queue paused by another site's page").isFalse();
    // It did reach the server (an opaque response tells the page nothing), which refused it.
    browser.waitFor(d -> refusedPosts() > refusedBefore);

    // The classic form POST: a top-level navigation the browser marks cross-site.
    browser.script("document.getElementById('cancel').submit();");
    browser.waitFor(d -> d.getCurrentUrl().endsWith("/jobs/" + job + "/cancel")
        && d.getPageSource().contains("cross-site-request"));
    assertThat(app.job(job).state()).isEqualTo(JobState.QUEUED);
  }

  @Test
  void theDashboardPausesAndResumesAQueueThroughItsOwnPagesUnderAnyLoopbackName() {
    for (String host : new String[] {"127.0.0.1", "localhost"}) {
      browser.open("http://" + host + ":" + app.server.port() + "/#/queues");
      browser.find("#queue-name").sendKeys("reports");
      browser.find("#queue-name").submit();
      browser.waitForText("#action-result", "is paused");
      browser.waitForAttribute(
          "#queues-admin-table tr[data-queue='reports']", "data-paused", "true");
      assertThat(paused("reports")).as(host).isTrue();

      browser.click("#queues-admin-table tr[data-queue='reports'] button.resume");
      browser.waitForText("#action-result", "is resumed");
      browser.waitForAttribute(
          "#queues-admin-table tr[data-queue='reports']", "data-paused", "false");
      assertThat(paused("reports")).as(host).isFalse();
    }
  }
}
