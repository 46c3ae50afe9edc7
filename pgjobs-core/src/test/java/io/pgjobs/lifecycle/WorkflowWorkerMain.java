package io.pgjobs.lifecycle;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.DiscardJobException;
import io.pgjobs.worker.JobWorker;
import io.pgjobs.workflow.WorkflowContext;
import io.pgjobs.workflow.WorkflowType;
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
import java.util.concurrent.ThreadLocalRandom;

/**
 * A worker JVM of {@code WorkflowChaosTest}: one lane on the workflow's queue, running {@link #FLOW}, a
 * three-step workflow whose steps and compensations write an execution log line when they start and end
 * ({@code S|E runId what epochMicros}, {@code what} one of {@code one two three undo-one undo-two}),
 * flushed at once, so the log of a process killed with -9 holds every action it started. Step two and
 * the compensation of step two take 300–800 ms (where the test kills); the others 20 ms. Arguments
 * {@code key=value}: url, id, log (the file).
 */
public final class WorkflowWorkerMain {
  /** A run's input: {@code failAtThree} makes step three discard the run, which then compensates. */
  public record Order(int n, boolean failAtThree) {}

  /** The workflow: many attempts (kills take some). */
  public static final WorkflowType<Order> FLOW =
      WorkflowType.of("chaos_flow", Order.class).withMaxAttempts(30);

  private WorkflowWorkerMain() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      a.put(arg.substring(0, eq), arg.substring(eq + 1));
    }
    String id = a.get("id");
    BufferedWriter log = Files.newBufferedWriter(
        Path.of(a.get("log")), StandardOpenOption.CREATE, StandardOpenOption.APPEND);

    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(a.get("url"));
    config.setMaximumPoolSize(8);
    config.setMinimumIdle(1);
    config.setPoolName(id);
    HikariDataSource dataSource = new HikariDataSource(config);

    JobWorker worker = JobWorker.builder(dataSource)
        .workerId(id)
        .workflow(FLOW, (ctx, order) -> run(ctx, order, log))
        .queue(FLOW.jobType().queue(), 1)
        .staleThreshold(Duration.ofMillis(2500))
        .heartbeatInterval(Duration.ofMillis(250))
        .workerDeadAfter(Duration.ofSeconds(3))
        .leaseTtl(Duration.ofSeconds(2))
        .pollInterval(Duration.ofMillis(200))
        .build();
    worker.closeOnShutdown();
    worker.start();
    System.out.println(
        "workflow worker " + id + " started, pid " + ProcessHandle.current().pid());
    new CountDownLatch(1).await();
  }

  private static Integer run(WorkflowContext ctx, Order order, BufferedWriter log)
      throws Exception {
    String run = ctx.runId().toString();
    Integer one = ctx.step("one", Integer.class, () -> act(log, run, "one", 20, order.n()))
        .compensate(r -> act(log, run, "undo-one", 20, r))
        .run();
    Integer two = ctx.step("two", Integer.class, () -> act(log, run, "two", slow(), one * 10))
        .compensate(r -> act(log, run, "undo-two", slow(), r))
        .run();
    return ctx.step("three", Integer.class, () -> {
          act(log, run, "three", 20, 0);
          if (order.failAtThree()) {
            throw new DiscardJobException("step three of order " + order.n() + " fails");
          }
          return one + two;
        })
        .run();
  }

  private static int slow() {
    return 300 + ThreadLocalRandom.current().nextInt(501);
  }

  /** Logs the start of {@code what}, takes {@code ms}, logs its end; returns {@code value}. */
  private static int act(BufferedWriter log, String run, String what, int ms, int value)
      throws InterruptedException {
    write(log, "S", run + " " + what);
    Thread.sleep(ms);
    write(log, "E", run + " " + what);
    return value;
  }

  /** One log line, written and flushed under the writer's lock. */
  private static void write(BufferedWriter log, String kind, String action) {
    long micros = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
    synchronized (log) {
      try {
        log.write(kind + " " + action + " " + micros + "\n");
        log.flush();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}
