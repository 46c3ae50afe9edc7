package io.pgjobs.lifecycle;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.JobType;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * A worker process for the crash, chaos, shutdown and leader tests. Arguments are {@code key=value}:
 * {@code url} (JDBC URL or {@code postgres://} URL, required), {@code id} (worker id, required), {@code concurrency} (5),
 * {@code pool} (concurrency + 5), {@code staleMs} (3000), {@code heartbeatMs} (300), {@code leaseTtlMs}
 * (2000), {@code graceMs} (2000), {@code pollMs} (200), {@code maintenance} (true),
 * {@code connectionTimeoutMs} (5000). It runs {@link Lifecycle#WORK} with {@link Lifecycle#handler},
 * closes the worker gracefully on SIGTERM and otherwise runs until killed.
 */
public final class LifecycleWorkerMain {
  private LifecycleWorkerMain() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      if (eq < 0) {
        throw new IllegalArgumentException("expected key=value, got " + arg);
      }
      a.put(arg.substring(0, eq), arg.substring(eq + 1));
    }
    String id = required(a, "id");
    int concurrency = Integer.parseInt(a.getOrDefault("concurrency", "5"));

    HikariConfig config = new HikariConfig();
    String url = required(a, "url");
    if (url.startsWith("jdbc:")) {
      config.setJdbcUrl(url);
    } else {
      // A libpq-style URL (postgres://h1,h2/db?target_session_attrs=...), as an operator writes it.
      io.pgjobs.config.DatabaseUrl parsed = io.pgjobs.config.DatabaseUrl.parse(url);
      config.setJdbcUrl(parsed.jdbcUrl());
      config.setDataSourceProperties(parsed.properties());
    }
    config.setMaximumPoolSize(
        Integer.parseInt(a.getOrDefault("pool", String.valueOf(concurrency + 5))));
    config.setMinimumIdle(1);
    config.setConnectionTimeout(Long.parseLong(a.getOrDefault("connectionTimeoutMs", "5000")));
    config.setPoolName(id);
    HikariDataSource dataSource = new HikariDataSource(config);

    JobWorker.Builder builder = JobWorker.builder(dataSource)
        .workerId(id)
        .register(
            Lifecycle.WORK,
            handler(
                id,
                a.getOrDefault("handler", "normal"),
                Long.parseLong(a.getOrDefault("stubbornMs", "0"))))
        .queue(JobType.DEFAULT_QUEUE, concurrency)
        .maintenance(Boolean.parseBoolean(a.getOrDefault("maintenance", "true")));
    if (!"defaults".equals(a.get("timings"))) {
      // Short timings for tests; timings=defaults keeps the library's own (stale threshold,
      // heartbeat, dead-worker threshold, lease, grace, poll interval).
      builder
          .staleThreshold(millis(a, "staleMs", 3000))
          .heartbeatInterval(millis(a, "heartbeatMs", 300))
          .leaseTtl(millis(a, "leaseTtlMs", 2000))
          .shutdownGrace(millis(a, "graceMs", 2000))
          .pollInterval(millis(a, "pollMs", 200));
      if (a.containsKey("deadAfterMs")) {
        builder.workerDeadAfter(millis(a, "deadAfterMs", 20_000));
      }
      if (a.containsKey("stuckGraceMs")) {
        builder.stuckHandlerGrace(millis(a, "stuckGraceMs", 10_000));
      }
    }
    if (a.containsKey("recurring")) {
      // A schedule every second of quick work jobs, declared by every process that is given it.
      builder.recurring(io.pgjobs.recurring.Recurring.of(
          a.get("recurring"), "* * * * * *", "UTC", Lifecycle.WORK, Lifecycle.Work.QUICK));
    }
    JobWorker worker = builder.build();
    worker.closeOnShutdown();
    worker.start();
    System.out.println(
        "lifecycle worker " + id + " started, pid " + ProcessHandle.current().pid());
    new CountDownLatch(1).await(); // until killed or terminated
  }

  /**
   * {@code normal}: {@link Lifecycle#handler}. {@code stubborn}: the same, but a blocking attempt blocks
   * for at least {@code stubbornMillis} and ignores interrupts (the runtime must let it go). {@code locking}: the same, but it holds a row lock on its
   * own job row in an open transaction while it blocks (heartbeats and successes must skip it).
   */
  private static io.pgjobs.JobHandler<Lifecycle.Work> handler(
      String id, String kind, long stubbornMillis) {
    io.pgjobs.JobHandler<Lifecycle.Work> normal = Lifecycle.handler(id, true);
    return switch (kind) {
      case "normal" -> normal;
      case "stubborn" ->
        (ctx, work) -> {
          if (work.blockMillis() > 0 && ctx.attempt() <= work.blockAttempts()) {
            long until =
                System.nanoTime() + Math.max(work.blockMillis(), stubbornMillis) * 1_000_000;
            while (System.nanoTime() < until) {
              try {
                Thread.sleep(Math.max(1, (until - System.nanoTime()) / 1_000_000));
              } catch (InterruptedException ignored) {
                // ignores interrupts: the worker must let it go
              }
            }
          }
          return Lifecycle.handler(id, false).run(ctx, work);
        };
      case "locking" ->
        (ctx, work) -> {
          try (java.sql.Connection tx = ctx.dataSource().getConnection()) {
            tx.setAutoCommit(false);
            try (java.sql.PreparedStatement lock =
                tx.prepareStatement("SELECT 1 FROM pgjobs.jobs WHERE id = ? FOR UPDATE")) {
              lock.setObject(1, ctx.jobId());
              lock.execute();
            }
            Object result = normal.run(ctx, work);
            tx.commit();
            return result;
          }
        };
      default -> throw new IllegalArgumentException("unknown handler " + kind);
    };
  }

  private static String required(Map<String, String> args, String key) {
    String value = args.get(key);
    if (value == null) {
      throw new IllegalArgumentException("missing argument " + key + "=...");
    }
    return value;
  }

  private static Duration millis(Map<String, String> args, String key, long defaultMillis) {
    return Duration.ofMillis(Long.parseLong(args.getOrDefault(key, String.valueOf(defaultMillis))));
  }
}
