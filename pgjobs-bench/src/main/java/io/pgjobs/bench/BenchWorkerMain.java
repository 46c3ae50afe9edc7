package io.pgjobs.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.worker.JobWorker;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * The W3 worker process: one {@link JobWorker} with default settings serving the {@code noop} type of
 * {@link PgJobsWorkloads#NOOP} on queue {@code default} of the schema given as the only argument.
 *
 * <p>Protocol (see {@link WorkerProcess}, which starts it): the database comes from the environment
 * ({@value #ENV_JDBC_URL}, {@value #ENV_USER}, {@value #ENV_PASSWORD}, {@value #ENV_DATABASE}; not the
 * command line, where a password would show in {@code ps}). It prints {@value #READY} on stdout once the
 * worker listens for notifications, then runs until it reads {@value #STOP} or its stdin closes (the bench
 * exited or was killed), closes the worker gracefully and exits 0. Exit codes: 2 usage, 3 the worker did
 * not get ready within {@link #READY_TIMEOUT}, 1 any other failure. Logs go to stderr.
 */
public final class BenchWorkerMain {
  /** The line printed on stdout when the worker listens. */
  public static final String READY = "READY";
  /** The line that asks the process to stop. */
  public static final String STOP = "STOP";

  static final String ENV_JDBC_URL = "PGJOBS_BENCH_JDBC_URL";
  static final String ENV_USER = "PGJOBS_BENCH_USER";
  static final String ENV_PASSWORD = "PGJOBS_BENCH_PASSWORD";
  static final String ENV_DATABASE = "PGJOBS_BENCH_DATABASE";
  /** How long the worker may take to start listening. */
  static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

  private BenchWorkerMain() {}

  public static void main(String[] args) {
    if (args.length != 1 || System.getenv(ENV_JDBC_URL) == null) {
      System.err.println("usage: " + ENV_JDBC_URL + "=jdbc:postgresql://... java "
          + BenchWorkerMain.class.getName() + " SCHEMA   (stop: write " + STOP
          + " or close stdin)");
      System.exit(2);
    }
    int status;
    try {
      status = run(args[0]);
    } catch (Throwable e) {
      System.err.println("bench worker failed: " + e);
      e.printStackTrace(System.err);
      status = 1;
    }
    System.out.flush();
    System.exit(status);
  }

  private static int run(String schema) throws IOException {
    DatabaseUrl database = new DatabaseUrl(
        System.getenv(ENV_JDBC_URL),
        System.getenv(ENV_USER),
        System.getenv(ENV_PASSWORD),
        System.getenv(ENV_DATABASE));
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(database.jdbcUrl());
    config.setDataSourceProperties(database.properties());
    // The JobWorker javadoc: size the pool for the total concurrency plus a few (listener,
    // heartbeat, completions, claims, maintenance).
    config.setMaximumPoolSize(JobWorker.DEFAULT_CONCURRENCY + 5);
    config.setPoolName("bench-worker");
    try (HikariDataSource ds = new HikariDataSource(config);
        JobWorker worker = JobWorker.builder(ds)
            .schema(schema)
            .register(PgJobsWorkloads.NOOP, (ctx, p) -> null)
            .build()
            .start()) {
      long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
      while (!worker.isListening()) {
        if (System.nanoTime() > deadline) {
          System.err.println("bench worker: not listening after " + READY_TIMEOUT);
          return 3;
        }
        LockSupport.parkNanos(1_000_000);
      }
      System.out.println(READY);
      System.out.flush();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = in.readLine()) != null && !line.trim().equals(STOP)) {
        // Anything else is ignored.
      }
    }
    return 0;
  }
}
