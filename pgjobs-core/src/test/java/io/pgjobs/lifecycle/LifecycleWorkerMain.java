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
 * {@code url} (JDBC URL, required), {@code id} (worker id, required), {@code concurrency} (5),
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
    config.setJdbcUrl(required(a, "url"));
    config.setMaximumPoolSize(Integer.parseInt(a.getOrDefault("pool", String.valueOf(concurrency + 5))));
    config.setMinimumIdle(1);
    config.setConnectionTimeout(Long.parseLong(a.getOrDefault("connectionTimeoutMs", "5000")));
    config.setPoolName(id);
    HikariDataSource dataSource = new HikariDataSource(config);

    JobWorker worker =
        JobWorker.builder(dataSource)
            .workerId(id)
            .register(Lifecycle.WORK, Lifecycle.handler(id, true))
            .queue(JobType.DEFAULT_QUEUE, concurrency)
            .staleThreshold(millis(a, "staleMs", 3000))
            .heartbeatInterval(millis(a, "heartbeatMs", 300))
            .leaseTtl(millis(a, "leaseTtlMs", 2000))
            .shutdownGrace(millis(a, "graceMs", 2000))
            .pollInterval(millis(a, "pollMs", 200))
            .maintenance(Boolean.parseBoolean(a.getOrDefault("maintenance", "true")))
            .build();
    worker.closeOnShutdown();
    worker.start();
    System.out.println("lifecycle worker " + id + " started, pid " + ProcessHandle.current().pid());
    new CountDownLatch(1).await(); // until killed or terminated
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
