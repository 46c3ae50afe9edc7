package io.pgjobs;

import static org.awaitility.Awaitility.await;

import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 29, acceptance 3, the figure (docs/BENCHMARKS.md, "Flow control"): the wait of the small tenants'
 * jobs (claim time less enqueue time, p50 and p95) when one tenant has 90 % of 20,000 jobs, against the
 * same 2,000 small-tenant jobs alone, in a partitioned queue (round-robin) and, for contrast, in a plain
 * queue (claim order). Not a test (no assertion on speed): run it by name,
 * {@code ./mvnw -o test -pl pgjobs-core -Dtest=FairnessMeasurement -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class FairnessMeasurement extends PgJobsTestBase {
  public record Tenant(String tenant, int n) {}

  static final JobType<Tenant> TENANT_JOB =
      JobType.of("tenant_job", Tenant.class).withQueue("tenants");

  @BeforeEach
  void noLimits() {
    db.execute("TRUNCATE pgjobs.queues, pgjobs.queue_rates");
  }

  @Test
  void smallTenantsWaitWithAndWithoutABigOne() {
    for (boolean partitioned : new boolean[] {true, false}) {
      double[] alone = run(partitioned, false);
      double[] beside = run(partitioned, true);
      System.out.printf(
          "%s: small tenants' wait p50/p95 alone %.0f/%.0f ms, beside a tenant with 90%% of the jobs"
              + " %.0f/%.0f ms (p95 %.2fx)%n",
          partitioned ? "partitioned by tenant (round-robin)" : "plain queue (claim order)",
          alone[0],
          alone[1],
          beside[0],
          beside[1],
          beside[1] / alone[1]);
    }
  }

  /** p50 and p95 wait of the small tenants' jobs, in ms. */
  private double[] run(boolean partitioned, boolean bigTenant) {
    db.execute("TRUNCATE pgjobs.jobs, pgjobs.finished_jobs, pgjobs.queues, pgjobs.queue_rates");
    if (partitioned) {
      client.setLimits(
          "tenants", QueueLimits.builder().partitionBy("input.tenant").build());
    }
    List<Tenant> jobs = new ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      jobs.add(new Tenant("small-" + (i % 99), i));
    }
    if (bigTenant) {
      for (int i = 0; i < 18_000; i++) {
        jobs.add(new Tenant("big", 10_000 + i));
      }
    }
    Collections.shuffle(jobs, new Random(29));
    client.pauseQueue("tenants");
    for (int i = 0; i < jobs.size(); i += 5_000) {
      client.enqueueAll(
          TENANT_JOB, jobs.subList(i, Math.min(jobs.size(), i + 5_000)), EnqueueOptions.DEFAULTS);
    }
    JobWorker worker = worker()
        .register(TENANT_JOB, (ctx, t) -> {
          Thread.sleep(2);
          return null;
        })
        .queue("tenants", 20)
        .build()
        .start();
    try {
      client.resumeQueue("tenants");
      await()
          .atMost(Duration.ofMinutes(5))
          .pollInterval(Duration.ofMillis(200))
          .until(() -> count("pgjobs.finished_jobs") == jobs.size());
    } finally {
      worker.close();
    }
    // Waits from the resume (the earliest claim less a hair), not from the enqueue, which took a
    // while.
    long p50 = db.queryLong(percentile(0.50));
    long p95 = db.queryLong(percentile(0.95));
    return new double[] {p50, p95};
  }

  private static String percentile(double p) {
    return "SELECT (percentile_cont(" + p
        + ") WITHIN GROUP (ORDER BY extract(epoch FROM attempted_at"
        + " - (SELECT min(attempted_at) FROM pgjobs.finished_jobs)) * 1000))::bigint"
        + " FROM pgjobs.finished_jobs WHERE payload->>'tenant' LIKE 'small-%'";
  }
}
