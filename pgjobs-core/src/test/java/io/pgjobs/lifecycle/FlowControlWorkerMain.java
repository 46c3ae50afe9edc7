package io.pgjobs.lifecycle;

import io.pgjobs.JobType;
import io.pgjobs.RetryPolicy;
import io.pgjobs.worker.JobWorker;
import java.nio.file.Path;
import java.time.Duration;
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
    Map<String, String> a = ChaosWorkers.arguments(args);
    String id = a.get("id");
    int lanes = Integer.parseInt(a.getOrDefault("lanes", "200"));
    ChaosWorkers.ExecutionLog log = new ChaosWorkers.ExecutionLog(Path.of(a.get("log")));
    JobWorker worker = ChaosWorkers.quickRescue(JobWorker.builder(
                ChaosWorkers.pool(a.get("url"), id, 20))
            .workerId(id)
            .register(KEYED, (ctx, job) -> {
              log.write("S", ctx.jobId() + " " + ctx.attempt() + " " + job.key());
              Thread.sleep(job.sleepMs());
              log.write("E", ctx.jobId() + " " + ctx.attempt() + " " + job.key());
              return null;
            })
            .queue("limited", lanes))
        .build();
    worker.closeOnShutdown();
    worker.start();
    System.out.println(
        "flow-control worker " + id + " started, pid " + ProcessHandle.current().pid());
    new CountDownLatch(1).await();
  }
}
