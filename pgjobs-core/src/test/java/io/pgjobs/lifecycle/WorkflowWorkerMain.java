package io.pgjobs.lifecycle;

import io.pgjobs.DiscardJobException;
import io.pgjobs.worker.JobWorker;
import io.pgjobs.workflow.WorkflowContext;
import io.pgjobs.workflow.WorkflowType;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A worker JVM of {@code WorkflowChaosTest}: one lane on the workflow's queue, running {@link #FLOW}, a
 * three-step workflow whose steps and compensations write an execution log line when they start and end
 * ({@code S|E runId what epochMicros}, {@code what} one of {@code one two three undo-one undo-two}),
 * flushed at once, so the log of a process killed with -9 holds every action it started; the same steps
 * as {@link #ONE_ATTEMPT}, with one attempt. Step two and
 * the compensation of step two take 300–800 ms (where the test kills); the others 20 ms. Arguments
 * {@code key=value}: url, id, log (the file), queue (the one queue it serves; default FLOW's).
 */
public final class WorkflowWorkerMain {
  /** A run's input: {@code failAtThree} makes step three discard the run, which then compensates. */
  public record Order(int n, boolean failAtThree) {}

  /** The workflow: many attempts (kills take some). */
  public static final WorkflowType<Order> FLOW =
      WorkflowType.of("chaos_flow", Order.class).withMaxAttempts(30);

  /**
   * The same steps with one attempt, whose step two lasts a minute (the test kills the worker in it): a
   * kill during it leaves the run to rescue's extra execution.
   */
  public static final WorkflowType<Order> ONE_ATTEMPT =
      WorkflowType.of("chaos_flow_one_attempt", Order.class).withMaxAttempts(1);

  private WorkflowWorkerMain() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> a = ChaosWorkers.arguments(args);
    String id = a.get("id");
    ChaosWorkers.ExecutionLog log = new ChaosWorkers.ExecutionLog(Path.of(a.get("log")));
    JobWorker worker = ChaosWorkers.quickRescue(
            JobWorker.builder(ChaosWorkers.pool(a.get("url"), id, 8))
                .workerId(id)
                .workflow(FLOW, (ctx, order) -> run(ctx, order, log, slow()))
                .workflow(ONE_ATTEMPT, (ctx, order) -> run(ctx, order, log, 60_000))
                .queue(a.getOrDefault("queue", FLOW.jobType().queue()), 1))
        .build();
    worker.closeOnShutdown();
    worker.start();
    System.out.println(
        "workflow worker " + id + " started, pid " + ProcessHandle.current().pid());
    new CountDownLatch(1).await();
  }

  /** Runs the steps; step two takes {@code twoMs} (its compensation the usual 300–800 ms). */
  private static Integer run(
      WorkflowContext ctx, Order order, ChaosWorkers.ExecutionLog log, int twoMs) throws Exception {
    String run = ctx.runId().toString();
    Integer one = ctx.step("one", Integer.class, () -> act(log, run, "one", 20, order.n()))
        .compensate(r -> act(log, run, "undo-one", 20, r))
        .run();
    Integer two = ctx.step("two", Integer.class, () -> act(log, run, "two", twoMs, one * 10))
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
  private static int act(ChaosWorkers.ExecutionLog log, String run, String what, int ms, int value)
      throws InterruptedException {
    log.write("S", run + " " + what);
    Thread.sleep(ms);
    log.write("E", run + " " + what);
    return value;
  }
}
