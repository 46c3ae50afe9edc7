package io.pgjobs.bench;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;
import javax.sql.DataSource;

/** W1–W4 through pgjobs' public API, with its default settings unless a variant says otherwise. */
final class PgJobsWorkloads {
  /** The no-op job of every workload. */
  record Noop(int n) {}

  static final JobType<Noop> NOOP = JobType.of("noop", Noop.class);

  private final DataSource dataSource;
  private final String schema;
  private final JobClient client;

  PgJobsWorkloads(DataSource dataSource, String schema) {
    this.dataSource = dataSource;
    this.schema = schema;
    this.client = JobClient.builder(dataSource).schema(schema).build();
    client.migrate();
  }

  private static List<Noop> payloads(int n) {
    return IntStream.range(0, n).mapToObj(Noop::new).toList();
  }

  BenchResult w1(int run, int jobs) {
    List<Noop> payloads = payloads(jobs);
    long start = System.nanoTime();
    client.enqueueAll(NOOP, payloads, EnqueueOptions.DEFAULTS);
    return BenchResult.throughput("pgjobs", "enqueueAll (COPY)", Workload.W1, run, jobs, System.nanoTime() - start);
  }

  BenchResult w2(int run, int jobs) {
    long start = System.nanoTime();
    for (int i = 0; i < jobs; i++) {
      client.enqueue(NOOP, new Noop(i));
    }
    return BenchResult.throughput("pgjobs", "enqueue", Workload.W2, run, jobs, System.nanoTime() - start);
  }

  /** W3 with the given worker settings; {@code label} names them. */
  BenchResult w3(int run, int jobs, String label, int concurrency, int claimBatch) throws SQLException {
    client.enqueueAll(NOOP, payloads(jobs), EnqueueOptions.DEFAULTS);
    Memory.resetPeak();
    long start = System.nanoTime();
    JobWorker worker =
        JobWorker.builder(dataSource)
            .schema(schema)
            .register(NOOP, (ctx, p) -> null)
            .queue(JobType.DEFAULT_QUEUE, concurrency)
            .claimBatch(claimBatch)
            .build()
            .start();
    try {
      awaitEmpty(Duration.ofMinutes(10));
      long nanos = System.nanoTime() - start;
      return BenchResult.throughput("pgjobs", label, Workload.W3, run, jobs, nanos).withPeakRss(Memory.peakMib());
    } finally {
      worker.close();
    }
  }

  BenchResult w4(int run, int jobs) throws SQLException {
    Map<UUID, Long> enqueuedAt = new ConcurrentHashMap<>();
    Map<UUID, Long> startedAt = new ConcurrentHashMap<>();
    JobWorker worker =
        JobWorker.builder(dataSource)
            .schema(schema)
            .register(NOOP, (ctx, p) -> {
              startedAt.put(ctx.jobId(), System.nanoTime());
              return null;
            })
            .build()
            .start();
    try {
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (!worker.isListening() && System.nanoTime() < deadline) {
        LockSupport.parkNanos(1_000_000);
      }
      // Let the worker settle into its idle wait before the first job.
      LockSupport.parkNanos(Duration.ofMillis(500).toNanos());
      for (int i = 0; i < jobs; i++) {
        long t0 = System.nanoTime();
        UUID id = client.enqueue(NOOP, new Noop(i)).job().id();
        enqueuedAt.put(id, t0);
        LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
      }
      deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (startedAt.size() < jobs && System.nanoTime() < deadline) {
        LockSupport.parkNanos(1_000_000);
      }
      List<Double> latencies = new ArrayList<>();
      enqueuedAt.forEach((id, t0) -> {
        Long t1 = startedAt.get(id);
        if (t1 != null) {
          latencies.add((t1 - t0) / 1e6);
        }
      });
      return Percentiles.of("pgjobs", "LISTEN/NOTIFY, idle worker", Workload.W4, run, jobs, latencies);
    } finally {
      worker.close();
    }
  }

  private void awaitEmpty(Duration timeout) throws SQLException {
    long deadline = System.nanoTime() + timeout.toNanos();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT NOT EXISTS (SELECT 1 FROM " + schema + ".jobs)")) {
      while (System.nanoTime() < deadline) {
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (rs.getBoolean(1)) {
            return;
          }
        }
        LockSupport.parkNanos(2_000_000);
      }
    }
    throw new IllegalStateException("W3 did not drain within " + timeout);
  }
}
