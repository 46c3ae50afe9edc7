package io.pgjobs.lifecycle;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.DiscardJobException;
import io.pgjobs.JobType;
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
 * A worker JVM of {@code GraphChaosTest}: runs {@link #NODE} jobs with {@code lanes} lanes and writes an
 * execution log line when each run starts and ends ({@code S|E jobId attempt epochMicros}), flushed at
 * once, so the log of a process killed with -9 holds every run it started. A node whose payload says
 * {@code fail} ends failed (discarded) after its end line. Arguments {@code key=value}: url, id, lanes,
 * log (the file).
 */
public final class GraphWorkerMain {
  /** A node of a random graph: it takes {@code sleepMs}, then succeeds or, with {@code fail}, fails. */
  public record Node(String name, boolean fail, int sleepMs) {}

  /** The job type: many attempts (kills take some). */
  public static final JobType<Node> NODE =
      JobType.of("graph_node", Node.class).withQueue("graphs").withMaxAttempts(50);

  private GraphWorkerMain() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      a.put(arg.substring(0, eq), arg.substring(eq + 1));
    }
    String id = a.get("id");
    int lanes = Integer.parseInt(a.getOrDefault("lanes", "8"));
    BufferedWriter log = Files.newBufferedWriter(
        Path.of(a.get("log")), StandardOpenOption.CREATE, StandardOpenOption.APPEND);

    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(a.get("url"));
    config.setMaximumPoolSize(10);
    config.setMinimumIdle(1);
    config.setPoolName(id);
    HikariDataSource dataSource = new HikariDataSource(config);

    JobWorker worker = JobWorker.builder(dataSource)
        .workerId(id)
        .register(NODE, (ctx, node) -> {
          write(log, "S", ctx.jobId() + " " + ctx.attempt());
          Thread.sleep(node.sleepMs());
          write(log, "E", ctx.jobId() + " " + ctx.attempt());
          if (node.fail()) {
            throw new DiscardJobException("node " + node.name() + " fails");
          }
          return null;
        })
        .queue("graphs", lanes)
        .staleThreshold(Duration.ofMillis(2500))
        .heartbeatInterval(Duration.ofMillis(250))
        .workerDeadAfter(Duration.ofSeconds(3))
        .leaseTtl(Duration.ofSeconds(2))
        .pollInterval(Duration.ofMillis(200))
        .build();
    worker.closeOnShutdown();
    worker.start();
    System.out.println(
        "graph worker " + id + " started, pid " + ProcessHandle.current().pid());
    new CountDownLatch(1).await();
  }

  /** One log line, written and flushed under the writer's lock (lanes share it). */
  private static void write(BufferedWriter log, String kind, String run) {
    long micros = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
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
