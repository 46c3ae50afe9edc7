package io.pgjobs.cli;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.maintenance.Maintenance;
import io.pgjobs.metrics.MicrometerJobMetrics;
import io.pgjobs.server.ApiServer;
import io.pgjobs.worker.JobWorker;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code pgjobs serve}: the HTTP API, OpenAPI document, Swagger UI, dashboard and {@code /metrics}; with
 * {@code --with-workers} also a worker for every registered job type in the same process. The process
 * takes part in maintenance either way. Runs until SIGTERM or Ctrl-C.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Run the HTTP API (and, with --with-workers, a worker) until SIGTERM or Ctrl-C.",
      "API tokens: 'read:<token>' may only read, 'admin:<token>' or a bare token may do everything."
    })
final class ServeCommand extends Subcommand {
  @Mixin
  ServerOptions server = new ServerOptions();

  @Mixin
  WorkerOptions worker = new WorkerOptions();

  @Option(
      names = "--with-workers",
      description = "Also run a worker for every registered job type in this process.")
  boolean withWorkers;

  @Override
  public Integer call() throws InterruptedException {
    Map<String, String> flags = new LinkedHashMap<>(worker.flags());
    flags.putAll(server.flags());
    Settings settings = settings(flags);
    return run(this, settings, withWorkers, server.insecure, null, null);
  }

  /** What {@code demo} does once the API listens: gets the client (metrics on) and the API's local URI. */
  @FunctionalInterface
  interface AfterStart {
    void run(io.pgjobs.JobClient client, java.net.URI api);
  }

  /**
   * Starts the API (and maybe a worker) on {@code settings}' database and waits; shared with {@code demo},
   * which adds routes through {@code customize} and starts its samples in {@code afterStart}. A
   * non-loopback host without tokens is refused unless {@code insecure}.
   */
  static int run(
      Subcommand command,
      Settings settings,
      boolean withWorkers,
      boolean insecure,
      java.util.function.Consumer<ApiServer.Builder> customize,
      AfterStart afterStart)
      throws InterruptedException {
    List<JobWorker.Registration<?>> registrations = JobKinds.registrations(settings);
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    // One registry for the client (enqueues), the workers, the pool and the API: /metrics shows
    // them all.
    MicrometerJobMetrics metrics = new MicrometerJobMetrics(registry);
    // The API's client knows the workflows too: it lists them and their runs and starts only them.
    Database db = Database.open(
        settings,
        true,
        registrations.stream().map(JobWorker.Registration::type).toList(),
        JobKinds.workflows(registrations),
        metrics);
    if (db.created()) {
      command.out().println("created database " + db.url().database());
    }
    db.migrate();
    if (!withWorkers) {
      // Workers give this warning as they start; an API-only process enqueues, which a failover can
      // lose too.
      io.pgjobs.replication.ReplicationCheck.warnIfCommitsCanBeLost(db.dataSource());
    }
    if (db.dataSource() instanceof com.zaxxer.hikari.HikariDataSource pool) {
      // Connection pool metrics (hikaricp_connections_*) next to the API's and the workers'.
      pool.setMetricRegistry(registry);
    }
    ApiServer.Builder apiBuilder = ApiServer.builder(db.client())
        .host(settings.host())
        .port(settings.port())
        .tokens(tokens(settings.apiTokens()))
        .allowedOrigins(settings.allowedOrigins())
        .allowedHosts(settings.allowedHosts())
        .meterRegistry(registry);
    if (settings.listenOff()) {
      apiBuilder.liveEvents(false);
    } else if (db.listenDataSource() != null) {
      apiBuilder.listenDataSource(db.listenDataSource());
    }
    if (customize != null) {
      customize.accept(apiBuilder);
    }
    if (insecure) {
      apiBuilder.allowUnauthenticated();
    }
    ApiServer api;
    try {
      api = apiBuilder.build().start();
    } catch (IllegalArgumentException e) {
      db.close();
      if (settings.apiTokens().isEmpty()
          && !insecure
          && e.getMessage().startsWith("refusing to listen")) {
        throw new CommandFailedException(
            "refusing to listen on " + settings.host() + " without authentication:"
                + " anyone who can reach it could enqueue, cancel and retry every job. Give --api-tokens, listen on"
                + " 127.0.0.1 (the default --host), or add --insecure if a proxy or the network protects the port.");
      }
      throw new CommandFailedException(e.getMessage());
    }
    JobWorker jobWorker = null;
    Maintenance maintenance = null;
    if (withWorkers) {
      jobWorker = WorkCommand.worker(settings, db, registrations, metrics);
      jobWorker.start();
    } else {
      // Over the client of `db` (one composition root): recurring slots fire through it.
      maintenance = io.pgjobs.worker.PgJobs.over(db.client())
          .maintenanceBuilder()
          .staleThreshold(settings.staleThreshold())
          .workerDeadAfter(settings.workerDeadAfter())
          .retention(settings.retention())
          .build()
          .start();
    }
    JobWorker startedWorker = jobWorker;
    Maintenance startedMaintenance = maintenance;
    CountDownLatch stopped = new CountDownLatch(1);
    CountDownLatch closed = new CountDownLatch(1);
    closing = closed;
    Runtime.getRuntime()
        .addShutdownHook(new Thread(
            () -> {
              try {
                if (startedWorker != null) {
                  startedWorker.close();
                }
                if (startedMaintenance != null) {
                  startedMaintenance.close();
                }
                api.close();
                db.close();
              } finally {
                closed.countDown();
                stopped.countDown();
              }
            },
            "pgjobs-serve-shutdown"));
    String base = "http://" + displayHost(settings.host()) + ":" + api.port();
    command.out().println("pgjobs API on " + db.url() + (withWorkers ? " with workers" : "") + ":");
    command.out().println("  dashboard   " + base + "/");
    command.out().println("  API docs    " + base + "/docs");
    command.out().println("  OpenAPI     " + base + "/openapi.json");
    command.out().println("  metrics     " + base + "/metrics");
    command.out().println("  events      " + base + "/events");
    // The browser job tracker's example page: start a summary (a demo kind) and watch it live.
    command.out().println("  tracker     " + base + "/client/tracker.html");
    command.out().println("Stop with SIGTERM or Ctrl-C.");
    command.out().flush();
    if (afterStart != null) {
      afterStart.run(db.client(), api.localUri());
    }
    stopped.await();
    return PgJobsCommand.OK;
  }

  /** Counted down once the shutdown hook has closed the worker, the API and the pool; null before. */
  private static volatile CountDownLatch closing;

  /**
   * Waits (at most {@code timeout}) until a started {@code serve}/{@code demo} has shut down its worker,
   * API and pool: a shutdown hook that stops what they depend on (the demo's embedded PostgreSQL) runs
   * after them, so the worker's graceful shutdown still has its database. Returns at once if nothing
   * was started.
   */
  static void awaitClosed(java.time.Duration timeout) {
    CountDownLatch c = closing;
    if (c == null) {
      return;
    }
    try {
      c.await(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static String displayHost(String host) {
    return host.equals("0.0.0.0") || host.equals("::") ? "127.0.0.1" : host;
  }

  /** {@code read:<token>} is read-only; {@code admin:<token>} or a bare token is admin. */
  static Map<String, ApiServer.Scope> tokens(List<String> tokens) {
    Map<String, ApiServer.Scope> scoped = new LinkedHashMap<>();
    for (String token : tokens) {
      if (token.startsWith("read:")) {
        scoped.put(token.substring(5), ApiServer.Scope.READ);
      } else if (token.startsWith("admin:")) {
        scoped.put(token.substring(6), ApiServer.Scope.ADMIN);
      } else {
        scoped.put(token, ApiServer.Scope.ADMIN);
      }
    }
    return scoped;
  }
}
