package io.pgjobs.bench;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.worker.JobWorker;
import io.pgjobs.worker.PickupListener;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
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

  /** How long a worker process may take to start and listen. */
  static final Duration WORKER_READY_TIMEOUT =
      Duration.ofSeconds(180); // a JVM starting on a loaded machine
  /** How long a drain may take. */
  static final Duration DRAIN_TIMEOUT = Duration.ofMinutes(10);

  private final DatabaseUrl database;
  private final DataSource dataSource;
  private final String schema;
  private final JobClient client;

  /** @param database where worker processes connect ({@code dataSource} points at the same database) */
  PgJobsWorkloads(DatabaseUrl database, DataSource dataSource, String schema) {
    this.database = database;
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
    return BenchResult.throughput(
        "pgjobs", "enqueueAll (COPY)", Workload.W1, run, jobs, System.nanoTime() - start);
  }

  BenchResult w2(int run, int jobs) {
    long start = System.nanoTime();
    for (int i = 0; i < jobs; i++) {
      client.enqueue(NOOP, new Noop(i));
    }
    return BenchResult.throughput(
        "pgjobs", "enqueue", Workload.W2, run, jobs, System.nanoTime() - start);
  }

  /**
   * W3 as a deployment runs it: {@code processes} worker processes ({@link BenchWorkerMain}: default
   * settings, each its own JVM with {@link WorkerProcess#JVM_FLAGS}) drain {@code jobs} no-op jobs. The
   * jobs are enqueued while queue {@code default} is paused, the processes start and report READY, and the
   * clock runs from the resume (which notifies the workers) until the hot table is empty. The peak RSS is
   * the largest VmHWM of the worker processes over their whole life, start-up included.
   */
  BenchResult w3Processes(Workload w, int run, int jobs, String label, int processes)
      throws Exception {
    pause();
    enqueueDue(jobs);
    return drainWithProcesses(w, run, jobs, label, processes, null);
  }

  /**
   * W3 under limits: {@code limits} set on queue {@code default} (none: cleared), the jobs enqueued with
   * {@code partitions} partitions ({@code n % partitions}; 0: none), then the one-process drain. The limits
   * are cleared afterwards.
   */
  BenchResult w3Limited(
      int run, int jobs, String label, io.pgjobs.QueueLimits limits, int partitions)
      throws Exception {
    pause();
    client.setLimits(JobType.DEFAULT_QUEUE, limits);
    try {
      JobType<Noop> type =
          partitions > 0 ? NOOP.withPartition(p -> "p" + (p.n() % partitions)) : NOOP;
      client.enqueueAll(type, payloads(jobs), EnqueueOptions.DEFAULTS);
      return drainWithProcesses(Workload.W3L, run, jobs, label, 1, null);
    } finally {
      client.clearLimits(JobType.DEFAULT_QUEUE);
    }
  }

  /**
   * W3 of a graph: {@code jobs} no-op jobs enqueued as one graph of {@code shape} on the paused queue, then
   * the one-process drain, timed from the resume until the last job ended.
   */
  BenchResult w3Graph(int run, int jobs, GraphShape shape) throws Exception {
    pause();
    client.enqueueGraph(shape.graph(jobs, NOOP, Noop::new));
    return drainWithProcesses(Workload.W3G, run, jobs, shape.label(jobs), 1, null);
  }

  /**
   * The floor of any graph drain that keeps blocked jobs in the hot table: {@code jobs} no-op jobs stored
   * blocked (enqueued, set blocked, vacuumed: one live version each, as a graph's COPY leaves them), then,
   * on the clock, one statement that makes them all queued (what an unblock must write at least: no edge,
   * no count, no trigger) and the one-process drain.
   */
  BenchResult w3UnblockFloor(int run, int jobs) throws Exception {
    pause();
    enqueueDue(jobs);
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      st.execute("UPDATE " + schema + ".jobs SET state = 'blocked', waiting_on = 1");
      st.execute("VACUUM " + schema + ".jobs");
    }
    return drainWithProcesses(
        Workload.W3G,
        run,
        jobs,
        "floor: " + String.format("%,d", jobs) + " blocked jobs queued in one UPDATE, then drained",
        1,
        null,
        () -> {
          try (Connection c = dataSource.getConnection();
              Statement st = c.createStatement()) {
            st.execute("UPDATE " + schema + ".jobs SET state = 'queued', waiting_on = NULL,"
                + " run_at = greatest(run_at, clock_timestamp()) WHERE state = 'blocked'");
          }
        });
  }

  /**
   * The enqueue of one layered graph of {@code jobs} no-op jobs (layers of 1,000, two parents each in the
   * layer before), timed from the call to its return (the graph built beforehand); the jobs are then
   * deleted, not run.
   */
  BenchResult enqueueGraph(int run, int jobs) throws SQLException {
    pause();
    io.pgjobs.JobGraph graph = GraphShape.LAYERED.graph(jobs, NOOP, Noop::new);
    long start = System.nanoTime();
    client.enqueueGraph(graph);
    long nanos = System.nanoTime() - start;
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      st.execute("TRUNCATE " + schema + ".jobs, " + schema + ".job_dependencies, " + schema
          + ".job_graph_names");
    }
    client.resumeQueue(JobType.DEFAULT_QUEUE);
    return BenchResult.throughput(
        "pgjobs",
        "enqueueGraph of " + GraphShape.LAYERED.label(jobs) + " (enqueue only, jobs/s)",
        Workload.W3G,
        run,
        jobs,
        nanos);
  }

  /** Pauses queue {@code default}: jobs enqueued now wait for {@link #drainWithProcesses}. */
  void pause() {
    client.pauseQueue(JobType.DEFAULT_QUEUE);
  }

  /** Enqueues {@code jobs} no-op jobs, due now, in one {@code enqueueAll}. */
  void enqueueDue(int jobs) {
    client.enqueueAll(NOOP, payloads(jobs), EnqueueOptions.DEFAULTS);
  }

  /**
   * Starts {@code processes} worker processes on the paused queue, waits until all are READY, resumes the
   * queue and times the drain: until the hot table is empty or, with {@code after} set, until no job with
   * an id above {@code after} is left (the W3S tables keep millions of scheduled jobs, all below it).
   */
  BenchResult drainWithProcesses(
      Workload w, int run, int jobs, String label, int processes, UUID after) throws Exception {
    return drainWithProcesses(w, run, jobs, label, processes, after, null);
  }

  /** What runs on the clock before the resume ({@link #w3UnblockFloor}). */
  interface OnTheClock {
    void run() throws SQLException;
  }

  /** Same, with {@code first} (if not null) run on the clock just before the resume. */
  BenchResult drainWithProcesses(
      Workload w, int run, int jobs, String label, int processes, UUID after, OnTheClock first)
      throws Exception {
    List<WorkerProcess> children = new ArrayList<>();
    try {
      for (int i = 1; i <= processes; i++) {
        children.add(WorkerProcess.start("worker-" + i, database, schema));
      }
      for (WorkerProcess child : children) {
        child.awaitReady(WORKER_READY_TIMEOUT);
      }
      DrainProfile profile = DrainProfile.enabled()
          ? DrainProfile.start(
              dataSource, children.stream().map(WorkerProcess::pid).toList())
          : null;
      long start = System.nanoTime();
      if (first != null) {
        first.run();
      }
      client.resumeQueue(JobType.DEFAULT_QUEUE);
      awaitDrained(after, DRAIN_TIMEOUT, () -> children.forEach(WorkerProcess::checkAlive));
      long nanos = System.nanoTime() - start;
      if (profile != null) {
        profile.finish(label, jobs, System.err);
      }
      // VmHWM before STOP: the graceful shutdown is not part of the measurement.
      double peakRss =
          children.stream().mapToDouble(WorkerProcess::peakRssMib).max().orElse(0);
      for (WorkerProcess child : children) {
        child.stop(Duration.ofSeconds(60));
      }
      return BenchResult.throughput("pgjobs", label, w, run, jobs, nanos).withPeakRss(peakRss);
    } finally {
      children.forEach(WorkerProcess::close);
    }
  }

  /**
   * W3 with the given worker settings, the worker inside this JVM (for the sweep, which varies the
   * settings); {@code label} names them. The peak RSS is this JVM's (bench and worker together).
   */
  BenchResult w3InProcess(int run, int jobs, String label, int concurrency, int claimBatch)
      throws SQLException {
    client.enqueueAll(NOOP, payloads(jobs), EnqueueOptions.DEFAULTS);
    Memory.resetPeak();
    long start = System.nanoTime();
    JobWorker worker = JobWorker.builder(dataSource)
        .schema(schema)
        .register(NOOP, (ctx, p) -> null)
        .queue(JobType.DEFAULT_QUEUE, concurrency)
        .claimBatch(claimBatch)
        .build()
        .start();
    try {
      awaitDrained(null, DRAIN_TIMEOUT, () -> {});
      long nanos = System.nanoTime() - start;
      return BenchResult.throughput("pgjobs", label, Workload.W3, run, jobs, nanos)
          .withPeakRss(Memory.peakMib());
    } finally {
      worker.close();
    }
  }

  /**
   * W4: {@code jobs} single enqueues 50 ms apart to an idle worker, each timed to its handler's start;
   * after {@code warmup} untimed jobs 2 ms apart ({@link BenchRunner#w4Warmup}).
   */
  BenchResult w4(int run, int jobs, int warmup) throws SQLException {
    Map<UUID, long[]> enqueuedAt = new ConcurrentHashMap<>(); // call started, call returned
    Map<UUID, Long> startedAt = new ConcurrentHashMap<>();
    StageProbe probe = new StageProbe();
    JobWorker worker = JobWorker.builder(dataSource)
        .schema(schema)
        .pickupListener(probe)
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
      if (warmup > 0) {
        // Each warm-up job alone as well (the worker is idle again within the 2 ms), so the code
        // the timed jobs take is the code the JIT compiles; then forget them.
        for (int i = 0; i < warmup; i++) {
          client.enqueue(NOOP, new Noop(-1 - i));
          LockSupport.parkNanos(Duration.ofMillis(2).toNanos());
        }
        deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (startedAt.size() < warmup && System.nanoTime() < deadline) {
          LockSupport.parkNanos(1_000_000);
        }
        if (startedAt.size() < warmup) {
          throw new IllegalStateException(
              "W4: " + startedAt.size() + " of " + warmup + " warm-up jobs started in 120 s");
        }
        startedAt.clear();
        probe.byJob.clear();
      }
      // Let the worker settle into its idle wait before the first job.
      LockSupport.parkNanos(Duration.ofMillis(500).toNanos());
      for (int i = 0; i < jobs; i++) {
        long t0 = System.nanoTime();
        UUID id = client.enqueue(NOOP, new Noop(i)).job().id();
        long t1 = System.nanoTime();
        enqueuedAt.put(id, new long[] {t0, t1});
        LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
      }
      deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (startedAt.size() < jobs && System.nanoTime() < deadline) {
        LockSupport.parkNanos(1_000_000);
      }
      List<Double> fromReturn = new ArrayList<>();
      List<Double> fromCall = new ArrayList<>();
      Map<String, List<Double>> stages = new LinkedHashMap<>();
      for (String stage : List.of(
          "return_to_notification", "notification_to_claim", "claim_to_lane", "lane_to_handler")) {
        stages.put(stage, new ArrayList<>());
      }
      int onNotification = 0;
      for (Map.Entry<UUID, long[]> e : enqueuedAt.entrySet()) {
        long t0 = e.getValue()[0];
        long t1 = e.getValue()[1];
        Long handler = startedAt.get(e.getKey());
        if (handler == null) {
          continue;
        }
        fromReturn.add((handler - t1) / 1e6);
        fromCall.add((handler - t0) / 1e6);
        long[] trace =
            probe.byJob.get(e.getKey()); // notification, claim, lane, on notification (1/0)
        if (trace == null || trace[2] == 0) {
          continue;
        }
        onNotification += (int) trace[3];
        // A notification from before this job's enqueue belongs to an earlier job: a poll found
        // this one.
        if (trace[0] >= t0) {
          stages.get("return_to_notification").add((trace[0] - t1) / 1e6);
          stages.get("notification_to_claim").add((trace[1] - trace[0]) / 1e6);
        }
        stages.get("claim_to_lane").add((trace[2] - trace[1]) / 1e6);
        stages.get("lane_to_handler").add((handler - trace[2]) / 1e6);
      }
      BenchResult r = Percentiles.w4(
          "pgjobs",
          Percentiles.w4Variant("LISTEN/NOTIFY, idle worker", warmup),
          run,
          jobs,
          fromReturn,
          fromCall,
          stages);
      r.stages()
          .put(
              "claimed_on_notification_pct",
              100.0 * onNotification / Math.max(1, fromReturn.size()));
      return r;
    } finally {
      worker.close();
    }
  }

  /**
   * Collects the worker's stage stamps per job: the last notification received before the claim that
   * returned the job, the claim's return, and the lane taking it.
   */
  private static final class StageProbe implements PickupListener {
    final Map<UUID, long[]> byJob = new ConcurrentHashMap<>();
    private volatile long lastNotification;

    @Override
    public void notified(long nanos) {
      lastNotification = nanos;
    }

    @Override
    public void claimed(List<UUID> ids, long nanos, boolean onNotification) {
      long notified = lastNotification;
      for (UUID id : ids) {
        byJob.put(id, new long[] {notified, nanos, 0, onNotification ? 1 : 0});
      }
    }

    @Override
    public void started(UUID id, long nanos) {
      long[] trace = byJob.get(id);
      if (trace != null) {
        trace[2] = nanos; // read after the handler's start was seen (a later happens-before edge)
      }
    }
  }

  /**
   * Polls until no job (with {@code after} set: no job with a greater id) is left: every 2 ms at first,
   * then every {@link #POLL_SHARE}th of the time since the drain started, at most every 20 ms. A poll
   * late by its interval overstates the drain by at most that share (0.5 %, 0.25 % on average), while
   * every poll is taken from the drain it measures: every 2 ms, the polls of a 300,000-job drain cost the
   * bench 1.6-2.0 µs of CPU and PostgreSQL 1.1-1.3 µs (planning 0.7, execution 0.4-0.5) per job, about 7 %
   * of the machine's CPU per job (2026-11-29, DrainProfile), which the raw reference, timing itself, does
   * not pay.
   *
   * <p>Each poll reads the lowest id left, starting from the one the last poll found: a job leaves the hot
   * table only when it finishes and never comes back, and every new job has a higher id (UUIDv7), so the
   * lowest id left only grows. Each poll then starts past the drained jobs' dead primary-key entries
   * instead of walking all of them again.
   * The bound is a literal, not a parameter: a generic plan for "id >= $1" guesses a third of the table
   * matches and seq-scans it (W3S: 5M rows every 2 ms), while the literal shows the planner an index range.
   */
  /** The poll interval of {@link #awaitDrained} is the time since the start divided by this. */
  static final long POLL_SHARE = 200;

  private static final long MIN_POLL_NANOS = 2_000_000;
  private static final long MAX_POLL_NANOS = 20_000_000;

  private void awaitDrained(UUID after, Duration timeout, Runnable check) throws SQLException {
    long started = System.nanoTime();
    long deadline = started + timeout.toNanos();
    long nextCheck = 0;
    String bound = after == null ? null : "id > '" + after + "'::uuid";
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      while (System.nanoTime() < deadline) {
        String sql = "SELECT id FROM " + schema + ".jobs" + (bound == null ? "" : " WHERE " + bound)
            + " ORDER BY id LIMIT 1";
        try (ResultSet rs = st.executeQuery(sql)) {
          if (!rs.next()) {
            return;
          }
          bound = "id >= '" + rs.getObject(1, UUID.class) + "'::uuid";
        }
        if (System.nanoTime() > nextCheck) {
          check.run();
          nextCheck = System.nanoTime() + 100_000_000L;
        }
        long interval = (System.nanoTime() - started) / POLL_SHARE;
        LockSupport.parkNanos(Math.max(MIN_POLL_NANOS, Math.min(MAX_POLL_NANOS, interval)));
      }
    }
    throw new IllegalStateException("W3 did not drain within " + timeout);
  }
}
