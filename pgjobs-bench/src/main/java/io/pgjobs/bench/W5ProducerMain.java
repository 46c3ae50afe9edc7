package io.pgjobs.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.config.DatabaseUrl;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * W5's producer process. Every {@value #TICK_MS} ms it makes one bulk enqueue ({@code JobClient.enqueueAll},
 * COPY) of jobs whose payload carries its wall clock in µs taken just before the call, and the job's number:
 * <ul>
 *   <li>{@code rate R}: as many jobs as the credit on real elapsed time allows, {@code floor(R × elapsed)}
 *       minus those offered so far, at most one second's worth per call. A tick that comes late (a slow
 *       enqueue, a pause) is not made up by extra ticks, but the next batch is larger by the credit;
 *   <li>{@code depth D}: the peak probe; as many jobs as bring the depth (offered minus started, from the
 *       shared {@link W5Counters}) back up to D, at most 10,000 per call.
 * </ul>
 * Jobs count as offered just before the call. The time each enqueue call takes goes into a histogram.
 * With {@code PARTITIONS} N > 0 the jobs carry a partition key, job i (counted over the process's life)
 * {@code "p" + (i % N)}, for the limits the bench put on the queue ({@link W5Options#partitions()}).
 *
 * <p>{@code java W5ProducerMain SCHEMA rate|depth VALUE COUNTER_FILE PARTITIONS} (0 partitions: no
 * keys), the database from the environment as for {@link BenchWorkerMain}. Prints READY when connected;
 * on stdin {@code START} starts the clock, {@code WINDOW} answers {@code WINDOW <enqueue-call histogram
 * since the last WINDOW>}, {@code STOP} or the end of stdin stops after the current call and exits 0.
 */
public final class W5ProducerMain {
  /** The producer's period. */
  static final int TICK_MS = 10;
  /** The largest batch of the peak probe. */
  static final int MAX_TOP_UP = 10_000;

  private W5ProducerMain() {}

  public static void main(String[] args) {
    if (args.length != 5
        || System.getenv(BenchWorkerMain.ENV_JDBC_URL) == null
        || !(args[1].equals("rate") || args[1].equals("depth"))) {
      System.err.println("usage: " + BenchWorkerMain.ENV_JDBC_URL + "=jdbc:postgresql://... java "
          + W5ProducerMain.class.getName() + " SCHEMA rate|depth VALUE COUNTER_FILE PARTITIONS");
      System.exit(2);
    }
    int status;
    try {
      status = run(
          args[0],
          args[1].equals("depth"),
          Long.parseLong(args[2]),
          Path.of(args[3]),
          Integer.parseInt(args[4]));
    } catch (Throwable e) {
      System.err.println("W5 producer failed: " + e);
      e.printStackTrace(System.err);
      status = 1;
    }
    System.out.flush();
    System.exit(status);
  }

  private static int run(String schema, boolean peak, long value, Path counterFile, int partitions)
      throws Exception {
    DatabaseUrl database = new DatabaseUrl(
        System.getenv(BenchWorkerMain.ENV_JDBC_URL),
        System.getenv(BenchWorkerMain.ENV_USER),
        System.getenv(BenchWorkerMain.ENV_PASSWORD),
        System.getenv(BenchWorkerMain.ENV_DATABASE));
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(database.jdbcUrl());
    config.setDataSourceProperties(database.properties());
    config.setMaximumPoolSize(2);
    config.setPoolName("w5-producer");
    Recorder calls = new Recorder(W5Histograms.MAX_MICROS, 3);
    AtomicBoolean stop = new AtomicBoolean();
    try (W5Counters counters = W5Counters.open(counterFile);
        HikariDataSource ds = new HikariDataSource(config)) {
      JobClient client = JobClient.builder(ds).schema(schema).build();
      // A key per job, from its number (EnqueueOptions.partition gives a whole batch one key):
      // consecutive jobs go to different partitions, so every partition gets work.
      JobType<W5WorkerMain.W5Job> type = partitions > 0
          ? W5WorkerMain.TYPE.withPartition(j -> "p" + (j.n() % partitions))
          : W5WorkerMain.TYPE;
      // One call before READY, so the first batch of the run does not pay for connecting and class
      // loading.
      try (var c = ds.getConnection()) {
        c.isValid(5);
      }
      System.out.println(BenchWorkerMain.READY);
      System.out.flush();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = in.readLine()) != null && !line.trim().equals("START")) {
        if (line.trim().equals(BenchWorkerMain.STOP)) {
          return 0;
        }
      }
      if (line == null) {
        return 0;
      }
      Thread pacer = new Thread(
          () -> {
            try {
              pace(client, type, peak, value, counters, calls, stop);
            } catch (Throwable e) {
              // The bench sees the process exit and quotes this.
              System.err.println("W5 producer: enqueue failed: " + e);
              e.printStackTrace(System.err);
              System.exit(1);
            }
          },
          "w5-producer");
      pacer.setDaemon(true);
      pacer.start();
      Histogram interval = null;
      while ((line = in.readLine()) != null && !line.trim().equals(BenchWorkerMain.STOP)) {
        if (line.trim().equals("WINDOW")) {
          interval = calls.getIntervalHistogram(interval);
          System.out.println("WINDOW " + W5Histograms.encode(interval));
          System.out.flush();
        }
      }
      stop.set(true);
      pacer.join(60_000);
      if (pacer.isAlive()) {
        System.err.println("W5 producer: the enqueue call did not return within 60 s of STOP");
        return 1;
      }
    }
    return 0;
  }

  private static void pace(
      JobClient client,
      JobType<W5WorkerMain.W5Job> type,
      boolean peak,
      long value,
      W5Counters counters,
      Recorder calls,
      AtomicBoolean stop) {
    long start = System.nanoTime();
    long tick = TICK_MS * 1_000_000L;
    long next = start;
    long offered = 0;
    List<W5WorkerMain.W5Job> batch = new ArrayList<>();
    while (!stop.get()) {
      long now = System.nanoTime();
      long n;
      if (peak) {
        long depth = counters.get(W5Counters.OFFERED) - counters.get(W5Counters.STARTED);
        n = Math.min(MAX_TOP_UP, value - depth);
      } else {
        long due = (long) Math.floor(value * ((now - start) / 1e9));
        n = Math.min(Math.max(value, 1), due - offered);
      }
      if (n > 0) {
        long t = W5Histograms.epochMicros();
        batch.clear();
        for (long i = 0; i < n; i++) {
          batch.add(new W5WorkerMain.W5Job(t, offered + i));
        }
        counters.add(W5Counters.OFFERED, n);
        offered += n;
        long t0 = System.nanoTime();
        client.enqueueAll(type, batch, EnqueueOptions.DEFAULTS);
        W5Histograms.record(calls, (System.nanoTime() - t0) / 1_000);
      }
      next += tick;
      long after = System.nanoTime();
      if (next < after) {
        // Late: no burst of ticks to catch up; the credit above makes up the jobs.
        next = after;
      } else {
        LockSupport.parkNanos(next - after);
      }
    }
  }
}
