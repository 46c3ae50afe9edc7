package io.pgjobs.server.dashboard;

import static io.pgjobs.server.dashboard.DashboardFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.recurring.CronSchedule;
import io.pgjobs.recurring.RecurringSchedules.Definition;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The dashboard's Recurring page in a real headless Chromium against a real server, database and worker. */
class RecurringDashboardTest extends BrowserTest {

  /** Adds a schedule of the fixture's task type (its jobs succeed) through the library; returns its name. */
  private static String schedule(String cron, String zone) {
    String name = "sched-" + UUID.randomUUID().toString().substring(0, 8);
    app.client
        .recurring()
        .add(
            Definition.of(name, cron, zone, "task").withPayload(Map.of("note", "ok", "key", name)));
    return name;
  }

  private static String row(String name) {
    return "#recurring-table tr[data-name='" + name + "']";
  }

  @Test
  void thePageShowsAScheduleWithItsWordsZoneAndNextFiveFireTimes() {
    String name = schedule("30 6 * * MON-FRI", "America/New_York");

    browser.open(app.url("/recurring"));
    browser.waitFor(d -> !browser.findAll(row(name)).isEmpty());

    // Read through the browser's helpers, which read again when the page's live refresh replaced
    // the row.
    assertThat(browser.text(row(name)))
        .contains(name, "30 6 * * MON-FRI", "America/New_York", "none yet", "active");
    assertThat(browser.text(row(name) + " .words"))
        .isEqualTo(CronSchedule.parse("30 6 * * MON-FRI", "America/New_York").describe());
    List<String> shown = browser.attributes(row(name) + " ol.next-runs time", "datetime");
    List<Instant> expected =
        CronSchedule.parse("30 6 * * MON-FRI", "America/New_York").upcoming(Instant.now(), 5);
    assertThat(shown).hasSize(5);
    assertThat(shown)
        .containsExactlyElementsOf(expected.stream().map(Instant::toString).toList());
    // Shown in the schedule's zone, where its fields are read: 06:30 New York time whatever the
    // browser's zone.
    assertThat(browser.texts(row(name) + " ol.next-runs time"))
        .allSatisfy(t -> assertThat(t).matches("\\d{4}-\\d\\d-\\d\\d 06:30:00"));
    assertThat(browser.attribute("#nav a[data-page='recurring']", "aria-current"))
        .isEqualTo("page");
  }

  @Test
  void pauseThenResumeChangesTheScheduleState() {
    String name = schedule("@daily", "UTC");
    browser.open(app.url("/recurring"));
    browser.waitForAttribute(row(name), "data-paused", "false");

    browser.click(row(name) + " button.pause");
    browser.waitForText("#action-result", "is paused");
    browser.waitForAttribute(row(name), "data-paused", "true");
    assertThat(browser.text(row(name) + " td.status")).isEqualTo("paused");
    assertThat(app.client.recurring().get(name).orElseThrow().paused()).isTrue();

    browser.click(row(name) + " button.resume");
    browser.waitForText("#action-result", "is resumed");
    browser.waitForAttribute(row(name), "data-paused", "false");
    assertThat(app.client.recurring().get(name).orElseThrow().paused()).isFalse();
  }

  @Test
  void runNowCreatesAJobThatTheLastRunLinkOpens() {
    String name = schedule("@yearly", "Europe/Berlin");
    browser.open(app.url("/recurring"));
    browser.waitFor(d -> !browser.findAll(row(name) + " button.run-now").isEmpty());

    browser.click(row(name) + " button.run-now");
    browser.waitFor(d -> !browser.findAll("#run-now-job").isEmpty());
    UUID id = UUID.fromString(browser.text("#run-now-job"));
    Job job = app.awaitState(id, JobState.SUCCEEDED);
    assertThat(job.idempotencyKey()).startsWith("recurring:" + name + ":now:");
    assertThat(job.context()).startsWith("recurring " + name + " @ ");

    // The row's last run links to the job and shows its outcome once the page polls again.
    browser.waitFor(d -> browser.text(row(name) + " .last-run").contains("succeeded"));
    browser.click(row(name) + " a.last-run-link");
    browser.waitFor(d -> d.getCurrentUrl().endsWith("#/jobs/" + id));
    browser.waitForText("#job-state", "succeeded");
    await()
        .atMost(WAIT)
        .until(() ->
            app.client.recurring().get(name).orElseThrow().lastRun().jobId().equals(id));
  }
}
