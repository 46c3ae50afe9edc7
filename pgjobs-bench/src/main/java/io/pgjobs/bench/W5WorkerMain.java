package io.pgjobs.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.JobType;
import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.worker.JobWorker;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * W5's worker process: one {@link JobWorker} with default settings except the concurrency of queue
 * {@code default} ({@code LANES}), serving {@link #TYPE}. Its handler takes the time first (the pickup:
 * now minus the enqueue time the producer put in the payload, into an HdrHistogram {@link Recorder}),
 * counts the start in the shared {@link W5Counters}, parks for {@code WORK_MICROS} (synthetic work that
 * takes no CPU, as a job waiting on I/O does) and counts the completion.
 *
 * <p>{@code java W5WorkerMain SCHEMA LANES WORK_MICROS COUNTER_FILE}, the database from the environment as
 * for {@link BenchWorkerMain}. Prints READY once the worker listens; on stdin, {@code WINDOW} answers
 * {@code WINDOW <interval histogram>} (the pickups since the last WINDOW, see {@link W5Histograms}), and
 * {@code STOP} or the end of stdin closes the worker and exits 0.
 */
public final class W5WorkerMain {
  /**
   * The W5 job: {@code t} is the producer's wall clock in µs just before the enqueue call, {@code n} the
   * job's number in the producer (0, 1, 2, …), from which {@code --partitions} keys it.
   */
  public record W5Job(long t, long n) {}

  static final JobType<W5Job> TYPE = JobType.of("w5", W5Job.class);

  private W5WorkerMain() {}

  public static void main(String[] args) {
    if (args.length != 4 || System.getenv(BenchWorkerMain.ENV_JDBC_URL) == null) {
      System.err.println("usage: " + BenchWorkerMain.ENV_JDBC_URL + "=jdbc:postgresql://... java "
          + W5WorkerMain.class.getName() + " SCHEMA LANES WORK_MICROS COUNTER_FILE");
      System.exit(2);
    }
    int status;
    try {
      status = run(args[0], Integer.parseInt(args[1]), Long.parseLong(args[2]), Path.of(args[3]));
    } catch (Throwable e) {
      System.err.println("W5 worker failed: " + e);
      e.printStackTrace(System.err);
      status = 1;
    }
    System.out.flush();
    System.exit(status);
  }

  private static int run(String schema, int lanes, long workMicros, Path counterFile)
      throws Exception {
    DatabaseUrl database = new DatabaseUrl(
        System.getenv(BenchWorkerMain.ENV_JDBC_URL),
        System.getenv(BenchWorkerMain.ENV_USER),
        System.getenv(BenchWorkerMain.ENV_PASSWORD),
        System.getenv(BenchWorkerMain.ENV_DATABASE));
    Recorder pickups = new Recorder(W5Histograms.MAX_MICROS, 3);
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(database.jdbcUrl());
    config.setDataSourceProperties(database.properties());
    // As the JobWorker javadoc says: the total concurrency plus a few.
    config.setMaximumPoolSize(lanes + 5);
    config.setPoolName("w5-worker");
    try (W5Counters counters = W5Counters.open(counterFile);
        HikariDataSource ds = new HikariDataSource(config);
        JobWorker worker = JobWorker.builder(ds)
            .schema(schema)
            .queue(JobType.DEFAULT_QUEUE, lanes)
            .register(TYPE, (ctx, job) -> {
              W5Histograms.record(pickups, W5Histograms.epochMicros() - job.t());
              counters.add(W5Counters.STARTED, 1);
              if (workMicros > 0) {
                LockSupport.parkNanos(workMicros * 1_000);
              }
              counters.add(W5Counters.COMPLETED, 1);
              return null;
            })
            .build()
            .start()) {
      long deadline = System.nanoTime() + BenchWorkerMain.READY_TIMEOUT.toNanos();
      while (!worker.isListening()) {
        if (System.nanoTime() > deadline) {
          System.err.println("W5 worker: not listening after " + BenchWorkerMain.READY_TIMEOUT);
          return 3;
        }
        LockSupport.parkNanos(1_000_000);
      }
      System.out.println(BenchWorkerMain.READY);
      System.out.flush();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      Histogram interval = null;
      while ((line = in.readLine()) != null && !line.trim().equals(BenchWorkerMain.STOP)) {
        if (line.trim().equals("WINDOW")) {
          interval = pickups.getIntervalHistogram(interval);
          System.out.println("WINDOW " + W5Histograms.encode(interval));
          System.out.flush();
        }
      }
    }
    return 0;
  }
}
