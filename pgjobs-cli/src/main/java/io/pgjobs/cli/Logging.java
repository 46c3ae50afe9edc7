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

  private Logging() {}

  /** Configures logback for {@code format}, unless it is configured so already. */
  static synchronized void configure(Settings.LogFormat format) {
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
      throw new IllegalStateException("invalid logging configuration " + resource + ": " + e.getMessage(), e);
    }
    current = format;
  }

  /** The format from the environment alone, for the first log lines before the settings are read. */
  static Settings.LogFormat fromEnvironment(java.util.Map<String, String> env) {
    String value = env.getOrDefault("PGJOBS_LOG_FORMAT", env.get("LOG_FORMAT"));
    return value != null && value.strip().equalsIgnoreCase("json") ? Settings.LogFormat.JSON : Settings.LogFormat.PLAIN;
  }
}
