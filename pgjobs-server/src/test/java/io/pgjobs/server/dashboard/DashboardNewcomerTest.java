package io.pgjobs.server.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;

/**
 * Issue 11, item 17: what a newcomer tripped over in the dashboard, in a real headless Chromium against a real
 * server and database. After every test the browser console must hold no error.
 */
class DashboardNewcomerTest extends BrowserTest {
  @AfterEach
  void backToTheDesktopSize() {
    browser.windowSize(DashboardBrowser.DESKTOP);
  }

  @Test
  void theChartsYAxisLabelOfTenThousandIsShownWhole() {
    // 10,000 jobs finished in one minute: the chart's top grid line is labelled "10,000".
    app.db.execute("""
        INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
               run_at, created_at, errors, finished_at)
        SELECT gen_random_uuid(), 'task', 'default', '{}', 50, 'succeeded', 1, 3, t, t, '[]', t
          FROM (SELECT date_trunc('minute', now()) - interval '5 minutes' + interval '10 seconds' AS t,
                       generate_series(1, 10000)) AS s""");
    browser.open(app.url("/"));
    // Found and measured in one step in the page: the live chart re-renders its labels at any
    // moment, so a label found by WebDriver can be gone by the time it is measured (a stale element
    // in CI).
    @SuppressWarnings("unchecked")
    Map<String, Number> box = browser.waitFor(d -> (Map<String, Number>) browser.script("""
        const label = [...document.querySelectorAll('svg text.axis')].find(e => e.textContent === '10,000');
        if (!label) return null;
        const chart = label.closest('svg').getBoundingClientRect(), r = label.getBoundingClientRect();
        return {labelLeft: r.left, chartLeft: chart.left};"""));
    assertThat(box.get("labelLeft").doubleValue())
        .as("the label starts inside the chart")
        .isGreaterThanOrEqualTo(box.get("chartLeft").doubleValue());
  }

  @Test
  void anUnknownAddressShowsNotFoundInsteadOfTheOverview() {
    browser.open(app.url("/no-such-page"));
    browser.visible("#not-found");
    assertThat(browser.attribute("#main", "data-page")).isEqualTo("not-found");
    assertThat(browser.text("#not-found")).contains("Not found", "#/no-such-page");
    assertThat(browser.findAll("#cards, .cards")).isEmpty();
  }

  @Test
  void aMalformedJobIdShowsNotFoundSayingWhatAJobIdIs() {
    browser.open(app.url("/jobs/01a2"));
    browser.visible("#not-found");
    assertThat(browser.text("#not-found")).contains("\"01a2\" is not a job id", "UUID");
  }

  @Test
  void theScheduledCardListsOnlyScheduledJobs() {
    UUID due = app.enqueue("gate", "due-" + UUID.randomUUID(), "nobody-serves-this");
    UUID later = app.client
        .enqueue(
            DashboardFixture.TASK,
            new DashboardFixture.Task("later", "x"),
            io.pgjobs.EnqueueOptions.builder()
                .queue("nobody-serves-this")
                .delay(java.time.Duration.ofHours(2))
                .build())
        .job()
        .id();
    browser.open(app.url("/"));
    WebElement card = browser.visible(".card.scheduled");
    card.click();
    browser.waitFor(d -> d.findElements(By.cssSelector("#jobs-table tr[data-job='" + later + "']"))
            .size()
        == 1);
    assertThat(browser.findAll("#jobs-table tr[data-job='" + due + "']")).isEmpty();
    assertThat(browser.findAll("#jobs-table tbody tr[data-job]"))
        .allSatisfy(tr ->
            assertThat(tr.findElement(By.cssSelector(".state")).getText()).contains("scheduled"));
  }

  @Test
  void theEnqueueFormsPrefilledTemplateIsAcceptedOnFirstSubmit() {
    // send_email validates its payload: a template of empty values ("to": "") was refused on first
    // submit.
    browser.open(app.url("/enqueue"));
    browser.waitFor(d -> d.findElements(By.cssSelector("#enqueue-type option[value='send_email']"))
            .size()
        == 1);
    new Select(browser.find("#enqueue-type")).selectByValue("send_email");
    browser.waitFor(
        d -> browser.attribute("#enqueue-payload", "value").contains("ada@example.com"));
    browser.click("#enqueue-submit");
    browser.waitFor(d -> browser.attribute("#main", "data-page").equals("jobs")
        && d.getCurrentUrl().matches(".*#/jobs/[0-9a-f-]{36}$"));
    browser.waitForText("#action-result", "201 Created");
  }

  @Test
  void everyValidationErrorOfTheFormIsShownAtOnce() {
    browser.open(app.url("/enqueue"));
    browser.waitFor(d ->
        d.findElements(By.cssSelector("#enqueue-type option[value='task']")).size() == 1);
    new Select(browser.find("#enqueue-type")).selectByValue("task");
    WebElement payload = browser.find("#enqueue-payload");
    payload.clear();
    payload.sendKeys("{not json");
    browser.find("#enqueue-priority").sendKeys("urgent");
    browser.find("#enqueue-max-attempts").sendKeys("0");
    browser.find("#enqueue-delay").sendKeys("-5");
    browser.click("#enqueue-submit");
    browser.waitFor(d -> !browser.text(".field-error[data-for='payload']").isEmpty());
    for (String field : List.of("payload", "priority", "max_attempts", "delay_ms")) {
      assertThat(browser.text(".field-error[data-for='" + field + "']"))
          .as(field)
          .isNotEmpty();
    }
    assertThat(browser.attribute("#main", "data-page")).isEqualTo("enqueue");
  }

  @Test
  void theNavigationFitsAFourHundredPixelWideScreen() {
    browser.windowSize(new Dimension(400, 800));
    browser.open(app.url("/"));
    @SuppressWarnings("unchecked")
    Map<String, Object> fit = (Map<String, Object>) browser.script("""
        const nav = document.getElementById('nav');
        const width = document.documentElement.clientWidth;
        const outside = [...nav.querySelectorAll('a')]
            .filter(a => { const r = a.getBoundingClientRect(); return r.right > width + 0.5 || r.left < -0.5; })
            .map(a => a.textContent);
        return {outside, scrolls: nav.scrollWidth > nav.clientWidth + 1};""");
    assertThat((List<?>) fit.get("outside")).as("links outside the screen").isEmpty();
    assertThat(fit.get("scrolls")).as("the nav scrolls sideways").isEqualTo(false);
  }

  @Test
  void theFindByIdBoxIsOneLineHighAtDesktopAndPhoneWidths() {
    for (Dimension size : List.of(new Dimension(1280, 900), new Dimension(390, 844))) {
      browser.windowSize(size);
      browser.open(app.url("/jobs"));
      browser.visible("#job-id-input");
      @SuppressWarnings("unchecked")
      Map<String, Object> box = (Map<String, Object>) browser.script("""
          const input = document.getElementById('job-id-input').getBoundingClientRect();
          const go = document.getElementById('job-id-go').getBoundingClientRect();
          const form = document.getElementById('job-id-search').getBoundingClientRect();
          return {input: input.height, go: go.height, form: form.height, width: input.width,
                  page: document.documentElement.clientWidth};""");
      double input = ((Number) box.get("input")).doubleValue();
      double go = ((Number) box.get("go")).doubleValue();
      assertThat(input).as("the id input's height at %s", size).isLessThanOrEqualTo(go * 1.5);
      assertThat(((Number) box.get("form")).doubleValue())
          .as("the find-by-id panel's height at %s", size)
          .isLessThan(160);
      assertThat(((Number) box.get("width")).doubleValue())
          .as("the id input's width at %s", size)
          .isGreaterThan(((Number) box.get("page")).doubleValue() * 0.4);
    }
  }

  @Test
  void aJobCanBeFoundByItsId() {
    UUID id = app.enqueue("gate", "find-" + UUID.randomUUID(), "nobody-serves-this");
    browser.open(app.url("/jobs"));
    browser.find("#job-id-input").sendKeys(id.toString().toUpperCase() + " ");
    browser.click("#job-id-go");
    browser.waitFor(d -> d.getCurrentUrl().endsWith("#/jobs/" + id));
    browser.waitForText(".job-head", id.toString());
    browser.visible("#job-facts");

    browser.open(app.url("/jobs"));
    browser.find("#job-id-input").sendKeys("01a2");
    browser.click("#job-id-go");
    browser.waitForText("#job-id-error", "not a job id");
  }
}
