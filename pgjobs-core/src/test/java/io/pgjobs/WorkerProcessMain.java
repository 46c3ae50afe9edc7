package io.pgjobs;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A worker process for tests that need real separate JVMs (start it with {@code JvmProcess.start}).
 *
 * <p>Arguments: {@code <jdbc-url> <worker-id> [concurrency] [pool-size] [capabilities]} (capabilities
 * comma-separated, none when absent). It registers
 * {@link PgJobsTestBase#NUMBERED} with a handler that inserts {@code (job_id, worker_id)} into the
 * table {@code effects}, starts a {@link JobWorker} on the default queue, prints
 * {@value #READY} followed by its worker id once its LISTEN connection is up, and then runs until it
 * is killed. On SIGTERM a shutdown hook closes the worker and the pool.
 */
public final class WorkerProcessMain {
  /** Printed (followed by the worker id) once the worker is started and listening. */
  public static final String READY = "PGJOBS-WORKER-READY ";

  private WorkerProcessMain() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println(
          "usage: WorkerProcessMain <jdbc-url> <worker-id> [concurrency] [pool-size]");
      System.exit(2);
    }
    String url = args[0];
    String workerId = args[1];
    int concurrency = args.length > 2 ? Integer.parseInt(args[2]) : 10;
    int poolSize = args.length > 3 ? Integer.parseInt(args[3]) : concurrency + 3;
    java.util.List<String> capabilities =
        args.length > 4 ? java.util.List.of(args[4].split(",")) : java.util.List.of();

    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(0);
    config.setPoolName(workerId);
    HikariDataSource pool = new HikariDataSource(config);

    JobWorker worker = JobWorker.builder(pool)
        .workerId(workerId)
        .queue(JobType.DEFAULT_QUEUE, concurrency)
        .capabilities(capabilities)
        .shutdownGrace(Duration.ofSeconds(2))
        .register(PgJobsTestBase.NUMBERED, (ctx, payload) -> {
          recordEffect(ctx);
          return null;
        })
        .build();

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(new Thread(
            () -> {
              try {
                worker.close();
                pool.close();
              } finally {
                stopped.countDown();
              }
            },
            "worker-shutdown"));

    worker.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!worker.isListening()) {
      if (System.nanoTime() > deadline) {
        System.out.println("worker " + workerId + " is not listening after 60 s; polling only");
        break;
      }
      // Waiting for the listener thread: a short park, not a guess about timing of the test.
      stopped.await(20, TimeUnit.MILLISECONDS);
    }
    System.out.println(READY + workerId);
    System.out.flush();
    stopped.await(); // until killed
  }

  /** The side effect the exactly-once tests count: one row per handler run. */
  static void recordEffect(JobContext ctx) throws Exception {
    try (Connection c = ctx.dataSource().getConnection();
        PreparedStatement ps =
            c.prepareStatement("INSERT INTO effects (job_id, worker) VALUES (?, ?)")) {
      ps.setObject(1, ctx.jobId());
      ps.setString(2, ctx.workerId());
      ps.executeUpdate();
    }
  }
}
