package io.pgjobs.lifecycle;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.JobType;
import io.pgjobs.RetryPolicy;
import io.pgjobs.worker.JobWorker;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * A worker JVM of {@code FlowControlChaosTest}: runs {@link #KEYED} jobs of queue {@code limited} with
 * {@code lanes} lanes and writes an execution log line when each run starts and ends ({@code S|E id attempt
 * key epochMicros}), flushed at once, so the log of a process killed with -9 holds every run it started.
 * Arguments {@code key=value}: url, id, lanes, log (the file).
 */
public final class FlowControlWorkerMain {
  /** A job of partition {@code key} that sleeps {@code sleepMs}. */
  public record Keyed(String key, int n, int sleepMs) {}

  /** The job type: queue {@code limited}, many attempts (kills take some), quick retries. */
  public static final JobType<Keyed> KEYED = JobType.of("flow_keyed", Keyed.class)
      .withQueue("limited")
      .withMaxAttempts(50)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(100)));

  private FlowControlWorkerMain() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      a.put(arg.substring(0, eq), arg.substring(eq + 1));
    }
    String id = a.get("id");
    int lanes = Integer.parseInt(a.getOrDefault("lanes", "200"));
    BufferedWriter log = Files.newBufferedWriter(
        Path.of(a.get("log")), StandardOpenOption.CREATE, StandardOpenOption.APPEND);

    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(a.get("url"));
    config.setMaximumPoolSize(20);
    config.setMinimumIdle(1);
    config.setPoolName(id);
    HikariDataSource dataSource = new HikariDataSource(config);

    JobWorker worker = JobWorker.builder(dataSource)
        .workerId(id)
        .register(KEYED, (ctx, job) -> {
          write(log, "S", ctx.jobId() + " " + ctx.attempt() + " " + job.key());
          Thread.sleep(job.sleepMs());
          write(log, "E", ctx.jobId() + " " + ctx.attempt() + " " + job.key());
          return null;
        })
        .queue("limited", lanes)
        .staleThreshold(Duration.ofMillis(2500))
        .heartbeatInterval(Duration.ofMillis(250))
        .workerDeadAfter(Duration.ofSeconds(3))
        .leaseTtl(Duration.ofSeconds(2))
        .pollInterval(Duration.ofMillis(200))
        .build();
    worker.closeOnShutdown();
    worker.start();
    System.out.println(
        "flow-control worker " + id + " started, pid " + ProcessHandle.current().pid());
    new CountDownLatch(1).await();
  }

  /** One log line, written and flushed under the writer's lock (lanes share it). */
  private static void write(BufferedWriter log, String kind, String run) {
    Instant now = Instant.now();
    long micros = ChronoUnit.MICROS.between(Instant.EPOCH, now);
    synchronized (log) {
      try {
        log.write(kind + " " + run + " " + micros + "\n");
        log.flush();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}
