package io.pgjobs.server.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.stream.Stream;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.logging.LoggingPreferences;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * Headless Debian Chromium driven by Debian's chromedriver (paths and flags from STACK.md), with a new
 * empty profile, and the browser's console log kept so a test can fail on errors.
 */
final class DashboardBrowser implements AutoCloseable {
  static final String CHROMEDRIVER =
      System.getProperty("pgjobs.chromedriver", "/usr/bin/chromedriver");
  static final String CHROMIUM = System.getProperty("pgjobs.chromium", "/usr/bin/chromium");
  static final Duration WAIT = Duration.ofSeconds(30);
  /** The size of screenshots and of the tests' window. */
  static final Dimension DESKTOP = new Dimension(1280, 860);

  final ChromeDriver driver;
  private final Path profile;
  private final ChromeDriverService service;
  /** Console entries read so far and not yet checked. */
  private final List<LogEntry> console = new ArrayList<>();
  /** Failed requests the current test provokes on purpose: [path, status] of the console line. */
  private final List<String[]> expectedFailures = new ArrayList<>();

  DashboardBrowser() {
    for (String binary : List.of(CHROMIUM, CHROMEDRIVER)) {
      if (!Files.isExecutable(Path.of(binary))) {
        throw new IllegalStateException(
            "the dashboard's browser tests need " + binary + ": apt-get install chromium"
                + " chromium-driver (or name other binaries with -Dpgjobs.chromium=... -Dpgjobs.chromedriver=...)");
      }
    }
    try {
      profile = Files.createTempDirectory("pgjobs-dashboard-chromium-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    service = new ChromeDriverService.Builder()
        .usingDriverExecutable(new File(CHROMEDRIVER))
        .usingAnyFreePort()
        .build();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM);
    options.addArguments(
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--user-data-dir=" + profile,
        "--window-size=" + DESKTOP.width + "," + DESKTOP.height,
        "--lang=en-US");
    LoggingPreferences logs = new LoggingPreferences();
    logs.enable(LogType.BROWSER, Level.ALL);
    options.setCapability(ChromeOptions.LOGGING_PREFS, logs);
    driver = new ChromeDriver(service, options);
  }

  /** Opens a dashboard address and waits until the page has rendered. */
  void open(String url) {
    driver.get(url);
    waitFor(d -> d.findElement(By.id("main")).getAttribute("data-page") != null);
  }

  /** Opens any address (not the dashboard's) without waiting for the dashboard to render. */
  void openOther(String url) {
    driver.get(url);
  }

  WebElement find(String css) {
    return driver.findElement(By.cssSelector(css));
  }

  List<WebElement> findAll(String css) {
    return driver.findElements(By.cssSelector(css));
  }

  /** Waits until {@code condition} is true (or non-null); page changes on the way are fine. */
  <T> T waitFor(Function<WebDriver, T> condition) {
    return new WebDriverWait(driver, WAIT)
        .ignoring(org.openqa.selenium.StaleElementReferenceException.class)
        .ignoring(org.openqa.selenium.NoSuchElementException.class)
        .until(condition);
  }

  /**
   * Clicks the element matching {@code css}, finding it again if the page re-rendered it between the find
   * and the click (a live update can replace a job page's buttons at any moment).
   */
  void click(String css) {
    waitFor(d -> {
      WebElement element = d.findElement(By.cssSelector(css));
      try {
        element.click();
      } catch (org.openqa.selenium.StaleElementReferenceException replaced) {
        // Re-rendered between the find and the click. On a loaded machine a page that refreshes
        // every few hundred milliseconds can do that to every attempt: click it in the page itself,
        // where the find and the click are one step. (Only an element found there, so the click
        // still needs the element to exist.) An SVG element (a node of the dependency graph) has no
        // click(): a click event is dispatched, which bubbles to its link as a user's would.
        Object clicked = script(
            "const e = document.querySelector(arguments[0]); if (!e) return false;"
                + " if (typeof e.click === 'function') e.click();"
                + " else e.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window}));"
                + " return true;",
            css);
        return Boolean.TRUE.equals(clicked) ? true : null;
      }
      return true;
    });
  }

  /** Waits until an element matching {@code css} is visible, and returns it. */
  WebElement visible(String css) {
    return new WebDriverWait(driver, WAIT)
        .until(ExpectedConditions.visibilityOfElementLocated(By.cssSelector(css)));
  }

  /**
   * The text of the element matching {@code css}, found again if a live update re-rendered it between the
   * find and the read.
   */
  String text(String css) {
    return waitFor(d -> d.findElement(By.cssSelector(css)).getText());
  }

  /**
   * The attribute of the element matching {@code css} (null if it has none), found again if a live update
   * re-rendered it between the find and the read.
   */
  String attribute(String css, String attribute) {
    return waitFor(d -> java.util.Optional.ofNullable(
            d.findElement(By.cssSelector(css)).getAttribute(attribute)))
        .orElse(null);
  }

  /** The texts of every element matching {@code css}, read again if a live update re-rendered one. */
  List<String> texts(String css) {
    return waitFor(d ->
        d.findElements(By.cssSelector(css)).stream().map(WebElement::getText).toList());
  }

  /**
   * An attribute of every element matching {@code css}, read again if a live update re-rendered one.
   */
  List<String> attributes(String css, String attribute) {
    return waitFor(d -> d.findElements(By.cssSelector(css)).stream()
        .map(e -> String.valueOf(e.getAttribute(attribute)))
        .toList());
  }

  /** Waits until the element's text contains {@code text}. */
  void waitForText(String css, String text) {
    waitFor(d -> d.findElement(By.cssSelector(css)).getText().contains(text));
  }

  /** Waits until the element's attribute equals {@code value}. */
  void waitForAttribute(String css, String attribute, String value) {
    waitFor(d -> value.equals(d.findElement(By.cssSelector(css)).getAttribute(attribute)));
  }

  Object script(String js, Object... args) {
    return ((JavascriptExecutor) driver).executeScript(js, args);
  }

  /** Clicks the "yes" button of the confirmation dialog, after checking it asks {@code question}. */
  void confirm(String question) {
    visible("#confirm-dialog");
    assertThat(find("#confirm-title").getText()).isEqualTo(question);
    find("#confirm-yes").click();
    waitFor(d -> !d.findElement(By.id("confirm-dialog")).isDisplayed());
  }

  void windowSize(Dimension size) {
    driver.manage().window().setSize(size);
  }

  /** Emulates the system's colour scheme preference (Chrome DevTools Protocol). */
  void colorScheme(String scheme) {
    driver.executeCdpCommand(
        "Emulation.setEmulatedMedia",
        Map.of("features", List.of(Map.of("name", "prefers-color-scheme", "value", scheme))));
  }

  /** A PNG of the window, written to {@code dir/name}. */
  Path screenshot(Path dir, String name) {
    try {
      Files.createDirectories(dir);
      Path file = dir.resolve(name);
      Files.write(file, driver.getScreenshotAs(OutputType.BYTES));
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Says the current test makes a request to a URL containing {@code path} fail with {@code status} on
   * purpose; Chrome logs such responses as console errors ("Failed to load resource").
   */
  void expectFailedRequest(String path, int status) {
    expectedFailures.add(new String[] {
      path, "Failed to load resource: the server responded with a status of " + status + " "
    });
  }

  /** Every console entry at SEVERE level since the last call, except the failures the test expected. */
  List<String> consoleErrors() {
    console.addAll(driver.manage().logs().get(LogType.BROWSER).getAll());
    List<String> errors = console.stream()
        .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue())
        .map(LogEntry::getMessage)
        .filter(m -> expectedFailures.stream().noneMatch(f -> m.contains(f[0]) && m.contains(f[1])))
        .toList();
    console.clear();
    expectedFailures.clear();
    return errors;
  }

  /** Asserts the browser logged no error since the last check. */
  void assertNoConsoleErrors() {
    assertThat(consoleErrors()).as("SEVERE entries in the browser console").isEmpty();
  }

  @Override
  public void close() {
    try {
      driver.quit();
    } finally {
      service.stop();
      try (Stream<Path> files = Files.walk(profile)) {
        files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
      } catch (IOException e) {
        // a leftover temporary profile is harmless
      }
    }
  }
}
