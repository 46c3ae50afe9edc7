package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pgjobs.DiscardJobException;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.SnoozeJobException;
import io.pgjobs.metrics.MetricNames;
import io.pgjobs.metrics.MicrometerJobMetrics;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The fence end to end. Worker A runs six jobs, one per kind of write (success, failure, snooze, discard,
 * progress, success in the handler's own transaction), whose handlers ignore interrupts. A is cut off
 * from the database (its connections go through a proxy that is cut). Its row goes stale, so maintenance
 * on worker B presumes it dead and rescues its jobs (they fail as worker_lost: one attempt each); an
 * operator retries them (attempts start from 0 again); B claims them as attempt 1 and runs them. Then A
 * comes back and its handlers return, each sending its write. None of those writes changes B's runs.
 */
class CutOffWorkerTest extends LifecycleTestBase {
  /** What A's handler does when it is let return. */
  public record Cut(String kind) {}

  static final JobType<Cut> CUT = JobType.of("cut_off", Cut.class).withMaxAttempts(1);
  private static final List<String> KINDS =
      List.of("success", "fail", "snooze", "discard", "progress", "complete_tx");

  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : closeables.reversed()) {
      c.close();
    }
  }

  private HikariDataSource poolThrough(TcpProxy proxy) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(proxy.through(db.jdbcUrl()));
    config.setMaximumPoolSize(15);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(1_000);
    config.setPoolName("worker-a-through-proxy");
    HikariDataSource pool = new HikariDataSource(config);
    closeables.add(pool);
    return pool;
  }

  @Test
  void
      aWorkerCutOffWhileItsJobsAreRescuedRetriedAndRerunWritesNothingOverTheNewRunsWhenItComesBack()
          throws Exception {
    TcpProxy proxy = TcpProxy.before(db.jdbcUrl());
    closeables.add(proxy);
    SimpleMeterRegistry registryA = new SimpleMeterRegistry();
    CountDownLatch aMayReturn = new CountDownLatch(1);
    CountDownLatch bMayReturn = new CountDownLatch(1);
    AtomicInteger aStarted = new AtomicInteger();
    AtomicInteger aReturned = new AtomicInteger();

    JobWorker a = JobWorker.builder(poolThrough(proxy))
        .workerId("worker-a")
        .metrics(new MicrometerJobMetrics(registryA))
        .queue(JobType.DEFAULT_QUEUE, 10)
        .heartbeatInterval(Duration.ofMillis(300))
        .workerDeadAfter(Duration.ofSeconds(3))
        .stuckHandlerGrace(Duration.ofHours(1)) // A's handlers must reach their own writes
        .maintenance(false)
        .shutdownGrace(Duration.ofSeconds(1))
        .register(CUT, (ctx, cut) -> {
          aStarted.incrementAndGet();
          try {
            awaitIgnoringInterrupts(aMayReturn);
            switch (cut.kind()) {
              case "success" -> {
                return Map.of("by", "worker-a");
              }
              case "fail" -> throw new IllegalStateException("late failure from worker-a");
              case "snooze" -> throw new SnoozeJobException(Duration.ZERO);
              case "discard" -> throw new DiscardJobException("late discard from worker-a");
              case "progress" -> {
                ctx.progress(77, "late progress from worker-a");
                return Map.of("by", "worker-a");
              }
              case "complete_tx" -> {
                try (Connection tx = ctx.dataSource().getConnection()) {
                  tx.setAutoCommit(false);
                  try {
                    ctx.complete(tx, Map.of("by", "worker-a"));
                    tx.commit();
                  } catch (RuntimeException e) {
                    tx.rollback();
                    throw e;
                  }
                }
                return null;
              }
              default -> throw new IllegalArgumentException(cut.kind());
            }
          } finally {
            aReturned.incrementAndGet();
          }
        })
        .build();
    closeables.add(a);
    a.start();

    Map<String, UUID> ids = new java.util.LinkedHashMap<>();
    for (String kind : KINDS) {
      ids.put(
          kind,
          client.enqueue(CUT, new Cut(kind), EnqueueOptions.DEFAULTS).job().id());
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> aStarted.get() == KINDS.size());

    proxy.cut();
    await("worker-a fences itself").atMost(Duration.ofSeconds(20)).until(a::isFenced);

    JobWorker b = start(worker()
        .workerId("worker-b")
        .queue(JobType.DEFAULT_QUEUE, 10)
        .heartbeatInterval(Duration.ofMillis(300))
        .workerDeadAfter(Duration.ofSeconds(3))
        .leaseTtl(Duration.ofSeconds(1))
        .register(CUT, (ctx, cut) -> {
          bMayReturn.await();
          return Map.of("by", "worker-b");
        }));
    for (UUID id : ids.values()) {
      awaitState(id, JobState.FAILED, Duration.ofSeconds(30));
      assertThat(errorKinds(id)).containsExactly("worker_lost");
    }
    assertThat(client.retryAll(Set.of(CUT.name()), Set.of(), Set.of(JobState.FAILED)))
        .isEqualTo(KINDS.size());
    await("worker-b runs every job")
        .atMost(Duration.ofSeconds(20))
        .until(() -> count(
                "SELECT count(*) FROM pgjobs.jobs WHERE locked_by = 'worker-b' AND state = 'running'")
            == KINDS.size());

    proxy.restore();
    await("worker-a is back").atMost(Duration.ofSeconds(20)).until(() -> !a.isFenced());
    aMayReturn.countDown();
    await("worker-a's handlers returned and their writes were settled")
        .atMost(Duration.ofSeconds(30))
        .until(() -> aReturned.get() == KINDS.size() && completedOnA(registryA) == KINDS.size());

    assertThat(completedOnA(registryA, "not_recorded"))
        .as("every write of worker-a matched nothing")
        .isEqualTo(KINDS.size());
    for (Map.Entry<String, UUID> e : ids.entrySet()) {
      Job job = job(e.getValue());
      assertThat(job.state()).as(e.getKey()).isEqualTo(JobState.RUNNING);
      assertThat(job.lockedBy()).as(e.getKey()).isEqualTo("worker-b");
      assertThat(job.attempts()).as(e.getKey()).isEqualTo(1);
      assertThat(job.progressPercent()).as(e.getKey()).isNull();
      assertThat(errorKinds(e.getValue())).as(e.getKey()).containsExactly("worker_lost");
    }

    bMayReturn.countDown();
    for (Map.Entry<String, UUID> e : ids.entrySet()) {
      Job job = awaitState(e.getValue(), JobState.SUCCEEDED, Duration.ofSeconds(20));
      assertThat(job.output().path("by").asString()).as(e.getKey()).isEqualTo("worker-b");
      assertThat(job.attempts()).isEqualTo(1);
      assertThat(errorKinds(e.getValue())).as(e.getKey()).containsExactly("worker_lost");
    }
    assertThat(b.stuckLanes()).isZero();
  }

  private static long completedOnA(SimpleMeterRegistry registry, String outcome) {
    return (long)
        registry.find(MetricNames.JOBS_COMPLETED).tags("outcome", outcome).counters().stream()
            .mapToDouble(Counter::count)
            .sum();
  }

  private static long completedOnA(SimpleMeterRegistry registry) {
    return (long) registry.find(MetricNames.JOBS_COMPLETED).counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  private static void awaitIgnoringInterrupts(CountDownLatch latch) {
    while (true) {
      try {
        if (latch.await(10, TimeUnit.SECONDS)) {
          return;
        }
      } catch (InterruptedException ignored) {
        // worker-a fences itself and interrupts its handlers: these ignore it, to reach their
        // writes
      }
    }
  }
}
