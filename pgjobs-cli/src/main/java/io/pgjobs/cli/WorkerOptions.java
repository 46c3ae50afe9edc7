package io.pgjobs.cli;

import io.pgjobs.cli.config.Settings;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The flags of a worker process ({@code work}, later {@code demo}). Kept as text: {@link Settings}
 * validates them with the same rules and messages as environment variables and config file entries.
 */
final class WorkerOptions {
  @Option(names = "--queues", paramLabel = "<q[=n],...>", descriptionKey = Settings.QUEUES)
  String queues;

  @Option(
      names = "--capabilities",
      paramLabel = "<name,...>",
      descriptionKey = Settings.CAPABILITIES)
  String capabilities;

  @Option(names = "--concurrency", paramLabel = "<n>", descriptionKey = Settings.CONCURRENCY)
  String concurrency;

  @Option(names = "--claim-batch", paramLabel = "<n>", descriptionKey = Settings.CLAIM_BATCH)
  String claimBatch;

  @Option(
      names = "--poll-interval",
      paramLabel = "<duration>",
      descriptionKey = Settings.POLL_INTERVAL)
  String pollInterval;

  @Option(
      names = "--shutdown-grace",
      paramLabel = "<duration>",
      descriptionKey = Settings.SHUTDOWN_GRACE)
  String shutdownGrace;

  @Option(
      names = "--stale-threshold",
      paramLabel = "<duration>",
      descriptionKey = Settings.STALE_THRESHOLD)
  String staleThreshold;

  @Option(
      names = "--worker-dead-after",
      paramLabel = "<duration>",
      descriptionKey = Settings.WORKER_DEAD_AFTER)
  String workerDeadAfter;

  @Option(names = "--retention", paramLabel = "<duration>", descriptionKey = Settings.RETENTION)
  String retention;

  @Option(names = "--smtp-host", paramLabel = "<host>", descriptionKey = Settings.SMTP_HOST)
  String smtpHost;

  @Option(names = "--smtp-port", paramLabel = "<port>", descriptionKey = Settings.SMTP_PORT)
  String smtpPort;

  @Option(names = "--smtp-from", paramLabel = "<address>", descriptionKey = Settings.SMTP_FROM)
  String smtpFrom;

  @Option(
      names = "--webhook-timeout",
      paramLabel = "<duration>",
      descriptionKey = Settings.WEBHOOK_TIMEOUT)
  String webhookTimeout;

  /** The flags given, by setting name (null when not given). */
  Map<String, String> flags() {
    Map<String, String> flags = new LinkedHashMap<>();
    flags.put(Settings.QUEUES, queues);
    flags.put(Settings.CAPABILITIES, capabilities);
    flags.put(Settings.CONCURRENCY, concurrency);
    flags.put(Settings.CLAIM_BATCH, claimBatch);
    flags.put(Settings.POLL_INTERVAL, pollInterval);
    flags.put(Settings.SHUTDOWN_GRACE, shutdownGrace);
    flags.put(Settings.STALE_THRESHOLD, staleThreshold);
    flags.put(Settings.WORKER_DEAD_AFTER, workerDeadAfter);
    flags.put(Settings.RETENTION, retention);
    flags.put(Settings.SMTP_HOST, smtpHost);
    flags.put(Settings.SMTP_PORT, smtpPort);
    flags.put(Settings.SMTP_FROM, smtpFrom);
    flags.put(Settings.WEBHOOK_TIMEOUT, webhookTimeout);
    return flags;
  }
}
