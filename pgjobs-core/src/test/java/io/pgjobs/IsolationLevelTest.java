package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A database (or role, or pool) whose sessions default to {@code repeatable read} or {@code serializable}
 * isolation. pgjobs's statements are written for {@code read committed}; under the stricter levels two
 * workers' claims and completions now and then fail with a serialization error (SQLState 40001), which
 * is transient: retried, and every job still runs once — plain jobs, retried ones, and a graph whose
 * children are unblocked by their parents' completions.
 */
class IsolationLevelTest extends PgJobsTestBase {
  private static final int JOBS = 10_000;
  static final JobType<Numbered> FLAKY = JobType.of("isolation_flaky", Numbered.class)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(20)));

  private HikariDataSource pool;

  @AfterEach
  void reset() {
    if (pool != null) {
      pool.close();
    }
    db.execute("ALTER DATABASE \"" + db.name() + "\" RESET default_transaction_isolation");
  }

  @ParameterizedTest
  @ValueSource(strings = {"repeatable read", "serializable"})
  void everyJobRunsOnceWhenSessionsDefaultToAStricterIsolationLevel(String level) {
    db.execute(
        "ALTER DATABASE \"" + db.name() + "\" SET default_transaction_isolation = '" + level + "'");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setMaximumPoolSize(24);
    pool = new HikariDataSource(config);
    JobClient strict = JobClient.builder(pool).knownTypes(NUMBERED, FLAKY).build();

    Map<UUID, AtomicInteger> runs = new ConcurrentHashMap<>();
    List<UUID> plain = strict.enqueueAll(
        NUMBERED,
        Collections.nCopies(JOBS, new Numbered(1)),
        EnqueueOptions.builder().build());
    List<UUID> flaky = strict.enqueueAll(
        FLAKY,
        Collections.nCopies(500, new Numbered(2)),
        EnqueueOptions.builder().build());
    // 100 chains of 10: each child is unblocked by its parent's completion.
    JobGraph.Builder graph = JobGraph.builder();
    for (int chain = 0; chain < 100; chain++) {
      for (int link = 0; link < 10; link++) {
        String name = "c" + chain + "-" + link;
        if (link == 0) {
          graph.add(name, NUMBERED, new Numbered(3));
        } else {
          graph.add(name, NUMBERED, new Numbered(3), Dependency.on("c" + chain + "-" + (link - 1)));
        }
      }
    }
    strict.enqueueGraph(graph.build());
    for (String id : new String[] {"strict-a", "strict-b"}) {
      start(JobWorker.builder(pool)
          .workerId(id)
          .shutdownGrace(Duration.ofSeconds(2))
          .queue("default", 10)
          .register(NUMBERED, (ctx, p) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            return null;
          })
          .register(FLAKY, (ctx, p) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            if (ctx.attempt() == 1) {
              throw new IllegalStateException("first attempt fails");
            }
            return null;
          }));
    }
    int total = JOBS + 500 + 1_000;
    await("every job finished")
        .atMost(Duration.ofMinutes(3))
        .until(() -> count("pgjobs.jobs") == 0);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'"))
        .isEqualTo(total);
    assertThat(runs).hasSize(total);
    assertThat(plain).allSatisfy(id -> assertThat(runs.get(id)).hasValue(1));
    assertThat(flaky).allSatisfy(id -> assertThat(runs.get(id)).hasValue(2));
    assertThat(runs.values().stream().mapToInt(AtomicInteger::get).sum())
        .as("handler runs: one a job, two for each job that failed its first attempt")
        .isEqualTo(total + 500);
  }
}
