package io.pgjobs.cli;

import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.cli.demo.DemoJobs;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.metrics.MicrometerJobMetrics;
import io.pgjobs.worker.JobWorker;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code pgjobs work}: runs a worker until the process is told to stop (SIGTERM or Ctrl-C), then shuts
 * down gracefully: it stops claiming, lets running jobs finish within the shutdown grace and gives the
 * rest back to the queue. It runs the built-in demo kinds plus every handler a
 * {@link io.pgjobs.worker.JobRegistrations} provider on the class path offers. The database and schema
 * are created or migrated first.
 */
@Command(
    name = "work",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Run jobs until SIGTERM or Ctrl-C, then stop gracefully.",
      "Runs the demo kinds send_email, resize_image, summarize_text and webhook_delivery, and every handler"
          + " offered on the class path (META-INF/services/io.pgjobs.worker.JobRegistrations)."
          + " Creates the database and migrates the schema first. On SIGTERM it stops claiming, lets running"
          + " jobs finish within the shutdown grace and gives the rest back to the queue."
    })
final class WorkCommand extends Subcommand {
  private static final Logger log = LoggerFactory.getLogger(WorkCommand.class);

  @Mixin
  WorkerOptions options = new WorkerOptions();

  @picocli.CommandLine.Option(
      names = "--metrics-bind",
      paramLabel = "<host:port|off>",
      descriptionKey = Settings.WORKER_METRICS_BIND)
  String metricsBind;

  private final CountDownLatch stopped = new CountDownLatch(1);

  @Override
  public Integer call() throws InterruptedException {
    Map<String, String> flags = new java.util.LinkedHashMap<>(options.flags());
    flags.put(Settings.WORKER_METRICS_BIND, metricsBind);
    Settings settings = settings(flags);
    List<JobWorker.Registration<?>> registrations = JobKinds.registrations(settings);
    Database db = Database.open(
        settings, true, registrations.stream().map(JobWorker.Registration::type).toList());
    WorkerMetricsServer metricsServer = null;
    try {
      if (db.created()) {
        announce(settings, "created database " + db.url().database());
      }
      db.migrate();
      Map<String, Integer> queues = queues(settings, registrations);
      JobMetrics metrics = JobMetrics.NONE;
      if (settings.workerMetricsBind().isPresent()) {
        // The worker's own /metrics: its job metrics, its pool and the JVM, scraped like any
        // process.
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        if (db.dataSource() instanceof com.zaxxer.hikari.HikariDataSource pool) {
          pool.setMetricRegistry(registry);
        }
        metrics = new MicrometerJobMetrics(registry);
        try {
          metricsServer = WorkerMetricsServer.start(
              settings.workerMetricsBind().get(), registry, db.dataSource());
        } catch (IllegalStateException e) {
          throw new CommandFailedException(
              e.getMessage()); // exit 1 with that line, before any job is claimed
        }
        announce(
            settings,
            "worker metrics on http://" + settings.workerMetricsBind().get().host() + ":"
                + metricsServer.port() + "/metrics");
      }
      JobWorker worker = worker(settings, db, registrations, metrics);
      worker.closeOnShutdown().start();
      String banner = "worker " + worker.workerId() + " running on " + db.url() + ": queues "
          + queues.entrySet().stream()
              .map(e -> e.getKey() + "=" + e.getValue())
              .collect(Collectors.joining(","))
          + "; job types "
          + registrations.stream().map(r -> r.type().name()).collect(Collectors.joining(","))
          + ". Stop with SIGTERM or Ctrl-C.";
      announce(settings, banner);
      try {
        stopped
            .await(); // the shutdown hook of closeOnShutdown() stops the worker; the JVM then exits
      } finally {
        worker.close();
      }
      return PgJobsCommand.OK;
    } finally {
      // Reached only when the wait is interrupted (in-process use): the JVM's shutdown does not
      // return here.
      if (metricsServer != null) {
        metricsServer.close();
      }
      db.close();
    }
  }

  /** Tells the operator: on stdout next to plain logs, or as a log event when logs are JSON (one format per stream). */
  private void announce(Settings settings, String message) {
    if (settings.logFormat() == Settings.LogFormat.PLAIN) {
      out().println(message);
      out().flush();
    } else {
      log.info(message);
    }
  }

  /** A worker configured from {@code settings}, not yet started (shared with {@code serve} and {@code demo}). */
  static JobWorker worker(
      Settings settings,
      Database db,
      List<JobWorker.Registration<?>> registrations,
      JobMetrics metrics) {
    // Over the client of `db` (one composition root): handlers enqueue through it.
    JobWorker.Builder builder = io.pgjobs.worker.PgJobs.over(db.client())
        .workerBuilder()
        .registerAll(registrations)
        .metrics(metrics)
        .claimBatch(settings.claimBatch())
        .capabilities(settings.capabilities())
        .pollInterval(settings.pollInterval())
        .shutdownGrace(settings.shutdownGrace())
        .staleThreshold(settings.staleThreshold())
        .workerDeadAfter(settings.workerDeadAfter())
        // Handlers' HTTP (ctx.http(), webhook_delivery) times out as webhook_timeout says.
        .httpConnectTimeout(settings.webhookTimeout())
        .httpRequestTimeout(settings.webhookTimeout())
        .retention(settings.retention());
    Map<String, Integer> queues = queues(settings, registrations);
    queues.forEach(builder::queue);
    // The demo kinds' limits (webhook deliveries per target host), declared in code for the queues
    // this worker serves: each worker that starts states them again, so they hold after a restart,
    // and a `pgjobs limits set` meanwhile wins until it is cleared.
    DemoJobs.limits().forEach((queue, limits) -> {
      if (queues.containsKey(queue)) {
        builder.limits(queue, limits);
      }
    });
    // listen_database_url: LISTEN on a direct connection (behind PgBouncer), or `off`: polling
    // only.
    if (settings.listenOff()) {
      builder.listen(false);
    } else if (db.listenDataSource() != null) {
      builder.listenDataSource(db.listenDataSource());
    }
    return builder.build();
  }

  /** The queues to serve: those named, else each registered type's queue, with the concurrency setting. */
  static Map<String, Integer> queues(
      Settings settings, List<JobWorker.Registration<?>> registrations) {
    if (!settings.queues().isEmpty()) {
      return settings.queues();
    }
    Map<String, Integer> queues = new LinkedHashMap<>();
    registrations.forEach(r -> queues.putIfAbsent(r.type().queue(), settings.concurrency()));
    return queues;
  }
}
