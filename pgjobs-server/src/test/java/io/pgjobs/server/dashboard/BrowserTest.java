package io.pgjobs.server.dashboard;

import io.pgjobs.server.ApiServer;
import io.pgjobs.testkit.Tags;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestInstance;

/**
 * The base of the browser test classes: one real server over a database of its own
 * ({@link DashboardFixture}) and one headless Chromium ({@link DashboardBrowser}) per class; after every
 * test the browser console must hold no error. A class that needs other server settings (tokens)
 * overrides {@link #server()}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag(Tags.BROWSER)
abstract class BrowserTest {
  static DashboardFixture app;
  static DashboardBrowser browser;

  /** The settings of this class's server: the fixture's defaults unless overridden. */
  UnaryOperator<ApiServer.Builder> server() {
    return b -> b;
  }

  @BeforeAll
  void startServerAndBrowser() {
    app = DashboardFixture.start(server());
    browser = new DashboardBrowser();
  }

  @AfterAll
  void stopServerAndBrowser() {
    try {
      if (browser != null) {
        browser.close();
      }
    } finally {
      if (app != null) {
        app.close();
      }
      browser = null;
      app = null;
    }
  }

  @AfterEach
  void noConsoleErrors() {
    browser.assertNoConsoleErrors();
  }
}
