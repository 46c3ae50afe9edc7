package io.pgjobs.lifecycle;

import io.pgjobs.DiscardJobException;
import io.pgjobs.JobType;
import io.pgjobs.worker.JobWorker;
import java.nio.file.Path;
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
    Map<String, String> a = ChaosWorkers.arguments(args);
    String id = a.get("id");
    int lanes = Integer.parseInt(a.getOrDefault("lanes", "8"));
    ChaosWorkers.ExecutionLog log = new ChaosWorkers.ExecutionLog(Path.of(a.get("log")));
    JobWorker worker = ChaosWorkers.quickRescue(JobWorker.builder(
                ChaosWorkers.pool(a.get("url"), id, 10))
            .workerId(id)
            .register(NODE, (ctx, node) -> {
              log.write("S", ctx.jobId() + " " + ctx.attempt());
              Thread.sleep(node.sleepMs());
              log.write("E", ctx.jobId() + " " + ctx.attempt());
              if (node.fail()) {
                throw new DiscardJobException("node " + node.name() + " fails");
              }
              return null;
            })
            .queue("graphs", lanes))
        .build();
    worker.closeOnShutdown();
    worker.start();
    System.out.println(
        "graph worker " + id + " started, pid " + ProcessHandle.current().pid());
    new CountDownLatch(1).await();
  }
}
