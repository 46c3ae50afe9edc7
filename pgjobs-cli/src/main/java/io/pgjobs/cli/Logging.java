package io.pgjobs.cli;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.core.joran.spi.JoranException;
import io.pgjobs.cli.config.Settings;
import java.net.URL;
import org.slf4j.ILoggerFactory;
import org.slf4j.LoggerFactory;

/**
 * Chooses the logback configuration at start-up: {@code logback-plain.xml} (one readable line per
 * event) or {@code logback-json.xml} (one JSON object per line, logstash-logback-encoder, MDC fields
 * such as {@code job_id} included). Both write to stderr, so a command's own output on stdout stays
 * clean.
 */
final class Logging {
  private static Settings.LogFormat current;
  private static Settings.LogLevel currentLevel;

  private Logging() {}

  /**
   * Configures logback for {@code format}, unless it is configured so already, and sets the level of
   * pgjobs' own loggers ({@code io.pgjobs}) to {@code level}. Libraries (Jetty, Javalin, GreenMail,
   * HikariCP, Flyway) write warnings and errors only, whatever the level: their INFO lines are noise to
   * someone running pgjobs.
   */
  static synchronized void configure(Settings.LogFormat format, Settings.LogLevel level) {
    configure(format);
    if (level == currentLevel) {
      return;
    }
    if (LoggerFactory.getILoggerFactory() instanceof LoggerContext context) {
      context.getLogger("io.pgjobs").setLevel(ch.qos.logback.classic.Level.toLevel(level.name()));
      // One line per HTTP request only at debug: a dashboard reloading on every event would flood
      // the log.
      context
          .getLogger("io.pgjobs.server.access")
          .setLevel(
              level == Settings.LogLevel.DEBUG
                  ? ch.qos.logback.classic.Level.DEBUG
                  : ch.qos.logback.classic.Level.WARN);
      currentLevel = level;
    }
  }

  private static synchronized void configure(Settings.LogFormat format) {
    if (format == current) {
      return;
    }
    ILoggerFactory factory = LoggerFactory.getILoggerFactory();
    if (!(factory instanceof LoggerContext context)) {
      return; // another SLF4J binding: leave it alone
    }
    String resource = format == Settings.LogFormat.JSON ? "logback-json.xml" : "logback-plain.xml";
    URL url = Logging.class.getResource(resource);
    if (url == null) {
      throw new IllegalStateException("missing logging configuration " + resource);
    }
    context.reset();
    JoranConfigurator configurator = new JoranConfigurator();
    configurator.setContext(context);
    try {
      configurator.doConfigure(url);
    } catch (JoranException e) {
      throw new IllegalStateException(
          "invalid logging configuration " + resource + ": " + e.getMessage(), e);
    }
    current = format;
    currentLevel = null; // the reset dropped the level; configure(format, level) sets it again
  }

  /** The level from the environment alone (info when unset or invalid), for the first log lines. */
  static Settings.LogLevel levelFromEnvironment(java.util.Map<String, String> env) {
    String value = env.get("PGJOBS_LOG_LEVEL");
    try {
      return value == null || value.isBlank()
          ? Settings.LogLevel.INFO
          : Settings.LogLevel.valueOf(value.strip().toUpperCase(java.util.Locale.ROOT));
    } catch (IllegalArgumentException e) {
      return Settings.LogLevel.INFO; // the settings report it properly
    }
  }

  /** The format from the environment alone, for the first log lines before the settings are read. */
  static Settings.LogFormat fromEnvironment(java.util.Map<String, String> env) {
    String value = env.getOrDefault("PGJOBS_LOG_FORMAT", env.get("LOG_FORMAT"));
    return value != null && value.strip().equalsIgnoreCase("json")
        ? Settings.LogFormat.JSON
        : Settings.LogFormat.PLAIN;
  }
}
