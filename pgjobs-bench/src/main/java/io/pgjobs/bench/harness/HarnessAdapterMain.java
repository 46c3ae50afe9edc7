package io.pgjobs.bench.harness;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueueOutcomeUnknownException;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsException;
import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.worker.JobWorker;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Recorder;

/**
 * The pgjobs adapter of the independent harness hardbyte/postgresql-job-queue-benchmarking: one
 * long-running process that produces and works jobs through pgjobs' public API ({@link JobClient},
 * {@link JobWorker}, default settings except the worker's concurrency) and speaks the harness's JSONL
 * contract (CONTRIBUTING_ADAPTERS.md): settings from the environment, samples on stdout, logs on stderr.
 *
 * <p>Producer modes, as the harness's other bulk-producer adapters (pg-boss, pgque) do them:
 * <ul>
 *   <li>{@code depth-target}: before every batch, read {@link JobClient#queueDepth()} and enqueue
 *       {@code min(PRODUCER_BATCH_MAX, TARGET_DEPTH - depth)} jobs with one {@code enqueueAll} (COPY);
 *       sleep {@code PRODUCER_BATCH_MS} when the queue is full. The peak probe.
 *   <li>{@code fixed} with {@code PRODUCER_PACING=harness} (the harness's default): enqueue the {@code n}
 *       of each {@code ENQUEUE n} line the harness writes on stdin.
 *   <li>{@code fixed} otherwise: {@code PRODUCER_RATE} (or the number in {@code PRODUCER_RATE_CONTROL_FILE})
 *       credited on real elapsed time, at most {@code PRODUCER_BATCH_MAX} per call.
 * </ul>
 *
 * <p>Each job carries its enqueue time; the handler records claim latency (enqueue to handler start),
 * sleeps {@code JOB_WORK_MS} and counts a completion when it returns (pgjobs writes the success in its
 * next completion batch, milliseconds later). Besides the contract's metrics it emits
 * {@code queue_depth_call_p50_ms}/{@code _p99_ms}: what {@code queueDepth()} cost over the window.
 *
 * <p>{@code PGJOBS_ENQUEUE_RETRY=idempotent} makes the producer enqueue as docs/guarantees.md tells a
 * careful caller to ("When an enqueue fails"): every job carries an idempotency key (this process's
 * random id and the job's sequence number, {@link JobType#withIdempotencyKeyFrom}), and a batch whose
 * call ended in {@link EnqueueOutcomeUnknownException} is sent again, with the same keys, until a call
 * succeeds (a plain failure of such a retry does not settle what the first call did); a batch whose first
 * call failed otherwise stored nothing, and is dropped as before. The default
 * ({@code none}) enqueues without keys and drops a failed batch, as the harness's other adapters do.
 * {@code run-native audit} then counts, in the database, jobs stored twice.
 *
 * <p>Run it with {@code pgjobs-bench/harness/run-native}; {@code PGJOBS_VERSION} names the build in the
 * descriptor.
 */
public final class HarnessAdapterMain {
  /** The job type of every job the adapter makes. */
  static final JobType<BenchJob> BENCH_JOB = JobType.of("harness_bench", BenchJob.class);

  /** The same type, each job keyed by its {@link BenchJob#key()} ({@code PGJOBS_ENQUEUE_RETRY=idempotent}). */
  static final JobType<BenchJob> KEYED_BENCH_JOB = BENCH_JOB.withIdempotencyKeyFrom("key");

  // Forensics only (the descriptor's schema_version): the last migration pgjobs applied.
  private static final String SCHEMA_VERSION_SQL =
      "SELECT version FROM pgjobs.pgjobs_schema_history WHERE success ORDER BY installed_rank DESC LIMIT 1";

  /**
   * A job's payload: its sequence number, when it was enqueued (µs since the epoch), padding, and its
   * idempotency key when the producer retries ({@code PGJOBS_ENQUEUE_RETRY=idempotent}; absent otherwise).
   */
  public record BenchJob(
      long seq,
      long enqueuedAtMicros,
      String padding,
      @JsonInclude(JsonInclude.Include.NON_NULL) String key) {}

  private final Settings settings;
  private final PrintStream out;
  private final AtomicBoolean stopping = new AtomicBoolean();
  private final LongAdder enqueued = new LongAdder();
  private final LongAdder completed = new LongAdder();
  private final AtomicLong queueDepth = new AtomicLong();
  private final AtomicLong targetRate = new AtomicLong();
  private final AtomicLong seq = new AtomicLong();
  /** Makes this process's idempotency keys differ from those of a replica or of its own restart. */
  private final String processKey = UUID.randomUUID().toString();

  private final LongAdder enqueueRetries = new LongAdder();
  private final Recorder claimMicros = new Recorder(3);
  private final Recorder endToEndMicros = new Recorder(3);
  private final Recorder enqueueCallMicros = new Recorder(3);
  private final Recorder depthCallMicros = new Recorder(3);
  private final String padding;

  HarnessAdapterMain(Settings settings, PrintStream out) {
    this.settings = settings;
    this.out = out;
    // The JSON around the padding is ~96 bytes, as the pg-boss adapter counts it.
    this.padding = "x".repeat(Math.max(0, settings.payloadBytes() - 96));
    this.targetRate.set(settings.producerRate());
  }

  /** Entry point: runs until SIGTERM, then stops producing, lets the worker finish and exits 0. */
  public static void main(String[] args) throws Exception {
    Settings settings;
    try {
      settings = Settings.fromEnvironment(System.getenv());
    } catch (IllegalArgumentException e) {
      System.err.println("pgjobs harness adapter: " + e.getMessage());
      System.exit(2);
      return;
    }
    // Our own stream, flushed per line: stdout is the harness's telemetry channel.
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    new HarnessAdapterMain(settings, out).run();
  }

  void run() throws Exception {
    DatabaseUrl url = DatabaseUrl.parse(settings.databaseUrl());
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url.jdbcUrl());
    config.setDataSourceProperties(url.properties());
    // Handlers here do not use the database: the worker's own connections (see docs/operations.md)
    // plus the producer and the depth reader.
    config.setMaximumPoolSize(settings.workerCount() + 8);
    config.setPoolName("pgjobs-harness");
    HikariDataSource ds = new HikariDataSource(config);
    JobClient client = JobClient.builder(ds)
        .knownTypes(settings.idempotentRetry() ? KEYED_BENCH_JOB : BENCH_JOB)
        .build();
    client.migrate();
    Instant started = Instant.now();
    out.println(
        HarnessSamples.descriptor(settings.version(), schemaVersion(ds), url.database(), started));

    JobWorker worker = JobWorker.builder(ds)
        .register(BENCH_JOB, (context, job) -> {
          long startMicros = nowMicros();
          claimMicros.recordValue(Math.max(0, startMicros - job.enqueuedAtMicros()));
          if (settings.workMs() > 0) {
            Thread.sleep(settings.workMs());
          }
          endToEndMicros.recordValue(Math.max(0, nowMicros() - job.enqueuedAtMicros()));
          completed.increment();
          return null;
        })
        .queue(JobType.DEFAULT_QUEUE, settings.workerCount())
        .build()
        .start();

    Thread producer =
        Thread.ofPlatform().name("harness-producer").daemon().start(() -> produce(client));
    Thread depthReader = null;
    if (!settings.depthTarget() && settings.observer()) {
      depthReader =
          Thread.ofPlatform().name("harness-depth").daemon().start(() -> readDepth(client));
    }
    Thread sampler = Thread.ofPlatform().name("harness-sampler").daemon().start(this::sample);

    Thread readers = depthReader;
    Runtime.getRuntime()
        .addShutdownHook(new Thread(
            () -> {
              // SIGTERM: the contract gives 5 s. Stop producing, then let the worker finish what it
              // holds.
              stopping.set(true);
              sampler.interrupt();
              join(producer, 2_000);
              if (readers != null) {
                join(readers, 500);
              }
              worker.close();
              ds.close();
              out.flush();
            },
            "harness-shutdown"));
    producer.join();
  }

  // ---------------------------------------------------------------- producer

  private void produce(JobClient client) {
    BufferedReader tokens = settings.harnessPacing()
        ? new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
        : null;
    long lastCredit = System.nanoTime();
    double credit = 0;
    long rateReadAt = 0;
    while (!stopping.get()) {
      try {
        int count;
        if (settings.depthTarget()) {
          long depth = readDepthOnce(client);
          count = (int) Math.max(0, Math.min(settings.batchMax(), settings.targetDepth() - depth));
        } else if (tokens != null) {
          String line = tokens.readLine();
          if (line == null) {
            return; // the harness closed stdin: it is ending the run
          }
          count = parseToken(line);
        } else {
          long now = System.nanoTime();
          if (now - rateReadAt > TimeUnit.SECONDS.toNanos(1)) {
            targetRate.set(controlledRate());
            rateReadAt = now;
          }
          // Credit on real elapsed time, so a slow call does not lower the offered rate.
          credit += targetRate.get() * ((now - lastCredit) / 1e9);
          lastCredit = now;
          count = (int) Math.min(settings.batchMax(), Math.floor(credit));
          credit -= count;
        }
        if (count <= 0) {
          Thread.sleep(settings.batchMs());
          continue;
        }
        enqueue(client, count);
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) {
        // Keep producing through a database restart or a killed backend, as the harness's chaos
        // phases expect.
        System.err.println("pgjobs harness adapter: producer: " + e);
        sleepQuietly(200);
      }
    }
  }

  private void enqueue(JobClient client, int count) throws InterruptedException {
    List<BenchJob> jobs = new ArrayList<>(count);
    long stamp = nowMicros();
    boolean keyed = settings.idempotentRetry();
    for (int i = 0; i < count; i++) {
      long n = seq.incrementAndGet();
      jobs.add(new BenchJob(n, stamp, padding, keyed ? processKey + ":" + n : null));
    }
    long t0 = System.nanoTime();
    if (keyed) {
      // The documented safe retry: the same jobs, so the same keys, until the database answers.
      // Once an outcome was unknown, a later plain failure does not settle it (the first call may
      // have stored the jobs): that is sent again too.
      boolean unknown = false;
      while (true) {
        try {
          client.enqueueAll(KEYED_BENCH_JOB, jobs, EnqueueOptions.DEFAULTS);
          break;
        } catch (PgJobsException e) {
          if (!unknown && !(e instanceof EnqueueOutcomeUnknownException)) {
            throw e; // nothing was stored: the batch is dropped, as without keys
          }
          unknown = true;
          enqueueRetries.increment();
          System.err.println("pgjobs harness adapter: producer: outcome unknown, sending the batch"
              + " of " + count + " again with the same keys: " + e.getMessage());
          if (stopping.get()) {
            return;
          }
          Thread.sleep(200);
        }
      }
    } else {
      client.enqueueAll(BENCH_JOB, jobs, EnqueueOptions.DEFAULTS);
    }
    long callMicros = (System.nanoTime() - t0) / 1_000;
    // Per job, as the pg-boss adapter reports its producer latency.
    enqueueCallMicros.recordValue(callMicros / count);
    enqueued.add(count);
  }

  static int parseToken(String line) {
    String[] parts = line.trim().split("\\s+");
    if (parts.length == 2 && parts[0].equals("ENQUEUE")) {
      try {
        return Math.max(0, Integer.parseInt(parts[1]));
      } catch (NumberFormatException e) {
        // fall through: not a token
      }
    }
    System.err.println(
        "pgjobs harness adapter: ignored stdin line '" + line + "' (expected 'ENQUEUE <n>')");
    return 0;
  }

  private long controlledRate() {
    if (settings.rateControlFile() == null) {
      return settings.producerRate();
    }
    try {
      return Math.round(Double.parseDouble(
          Files.readString(Path.of(settings.rateControlFile())).trim()));
    } catch (Exception e) {
      return settings.producerRate();
    }
  }

  // ---------------------------------------------------------------- depth

  private long readDepthOnce(JobClient client) {
    long t0 = System.nanoTime();
    Map<String, Long> depths = client.queueDepth();
    depthCallMicros.recordValue((System.nanoTime() - t0) / 1_000);
    long depth = depths.getOrDefault(JobType.DEFAULT_QUEUE, 0L);
    queueDepth.set(depth);
    return depth;
  }

  private void readDepth(JobClient client) {
    while (!stopping.get()) {
      try {
        readDepthOnce(client);
      } catch (Exception e) {
        System.err.println("pgjobs harness adapter: depth: " + e);
      }
      sleepQuietly(250);
    }
  }

  // ---------------------------------------------------------------- samples

  private void sample() {
    int every = settings.sampleEverySeconds();
    int windowTicks = (HarnessSamples.LATENCY_WINDOW_S + every - 1) / every;
    HarnessSamples.RollingLatency claim = new HarnessSamples.RollingLatency(windowTicks);
    HarnessSamples.RollingLatency endToEnd = new HarnessSamples.RollingLatency(windowTicks);
    HarnessSamples.RollingLatency enqueueCall = new HarnessSamples.RollingLatency(windowTicks);
    HarnessSamples.RollingLatency depthCall = new HarnessSamples.RollingLatency(windowTicks);
    // Ticks on wall-clock multiples of SAMPLE_EVERY_S, so every adapter's samples line up.
    long periodMs = every * 1_000L;
    long nextTick = (System.currentTimeMillis() / periodMs + 1) * periodMs;
    long lastEnqueued = enqueued.sum();
    long lastCompleted = completed.sum();
    long lastNanos = System.nanoTime();
    try {
      while (!stopping.get()) {
        Thread.sleep(Math.max(0, nextTick - System.currentTimeMillis()));
        Instant t = Instant.ofEpochMilli(nextTick);
        nextTick += periodMs;
        long nowNanos = System.nanoTime();
        double seconds = (nowNanos - lastNanos) / 1e9;
        lastNanos = nowNanos;
        long enq = enqueued.sum();
        long done = completed.sum();
        claim.add(claimMicros.getIntervalHistogram());
        endToEnd.add(endToEndMicros.getIntervalHistogram());
        enqueueCall.add(enqueueCallMicros.getIntervalHistogram());
        depthCall.add(depthCallMicros.getIntervalHistogram());
        int w = HarnessSamples.LATENCY_WINDOW_S;
        emit(t, "claim_p50_ms", claim.percentileMs(50), w);
        emit(t, "claim_p95_ms", claim.percentileMs(95), w);
        emit(t, "claim_p99_ms", claim.percentileMs(99), w);
        emit(t, "end_to_end_p50_ms", endToEnd.percentileMs(50), w);
        emit(t, "end_to_end_p95_ms", endToEnd.percentileMs(95), w);
        emit(t, "end_to_end_p99_ms", endToEnd.percentileMs(99), w);
        emit(t, "producer_p50_ms", enqueueCall.percentileMs(50), w);
        emit(t, "producer_p95_ms", enqueueCall.percentileMs(95), w);
        emit(t, "producer_p99_ms", enqueueCall.percentileMs(99), w);
        emit(t, "enqueue_rate", (enq - lastEnqueued) / seconds, every);
        emit(t, "completion_rate", (done - lastCompleted) / seconds, every);
        if (settings.idempotentRetry()) {
          // Cumulative: batches sent again after an unknown outcome
          // (PGJOBS_ENQUEUE_RETRY=idempotent).
          emit(t, "enqueue_outcome_unknown_retries", enqueueRetries.sum(), 0);
        }
        if (settings.observer()) {
          // Global observations: only instance 0 reports them, as the other adapters do.
          emit(t, "queue_depth", queueDepth.get(), 0);
          emit(t, "queue_depth_call_p50_ms", depthCall.percentileMs(50), w);
          emit(t, "queue_depth_call_p99_ms", depthCall.percentileMs(99), w);
          if (!settings.depthTarget()) {
            emit(t, "producer_target_rate", targetRate.get(), 0);
          }
        }
        lastEnqueued = enq;
        lastCompleted = done;
      }
    } catch (InterruptedException e) {
      // shutting down
    }
  }

  private void emit(Instant t, String metric, double value, int windowS) {
    out.println(HarnessSamples.sample(t, metric, value, windowS, settings.instanceId()));
  }

  // ---------------------------------------------------------------- helpers

  private static String schemaVersion(HikariDataSource ds) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(SCHEMA_VERSION_SQL)) {
      return rs.next() ? rs.getString(1) : null;
    } catch (Exception e) {
      return null;
    }
  }

  private static long nowMicros() {
    return ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void join(Thread thread, long ms) {
    try {
      thread.join(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** What the harness sets in the environment, with the contract's defaults. */
  record Settings(
      String databaseUrl,
      boolean depthTarget,
      long producerRate,
      int batchMax,
      int batchMs,
      long targetDepth,
      int workerCount,
      int payloadBytes,
      int workMs,
      int sampleEverySeconds,
      int instanceId,
      boolean harnessPacing,
      String rateControlFile,
      String version,
      boolean idempotentRetry) {

    boolean observer() {
      return instanceId == 0;
    }

    static Settings fromEnvironment(Map<String, String> env) {
      String url = env.get("DATABASE_URL");
      if (url == null || url.isBlank()) {
        throw new IllegalArgumentException(
            "DATABASE_URL must be set (postgres://user:password@host:port/db)");
      }
      String scenario = env.getOrDefault("SCENARIO", "long_horizon");
      if (!scenario.equals("long_horizon")) {
        throw new IllegalArgumentException(
            "SCENARIO '" + scenario + "' is not supported; allowed: long_horizon");
      }
      String mode = env.getOrDefault("PRODUCER_MODE", "fixed");
      if (!mode.equals("fixed") && !mode.equals("depth-target")) {
        throw new IllegalArgumentException(
            "PRODUCER_MODE '" + mode + "' is not supported; allowed: fixed, depth-target");
      }
      String retry = env.getOrDefault("PGJOBS_ENQUEUE_RETRY", "none");
      if (!retry.equals("none") && !retry.equals("idempotent")) {
        throw new IllegalArgumentException(
            "PGJOBS_ENQUEUE_RETRY '" + retry + "' is not supported; allowed: none, idempotent");
      }
      String pacing = env.getOrDefault("PRODUCER_PACING", "adapter");
      if (!pacing.equals("harness") && !pacing.equals("adapter")) {
        throw new IllegalArgumentException(
            "PRODUCER_PACING '" + pacing + "' is not supported; allowed: harness, adapter");
      }
      return new Settings(
          url,
          mode.equals("depth-target"),
          number(env, "PRODUCER_RATE", 800, 1, 10_000_000),
          (int) number(env, "PRODUCER_BATCH_MAX", 128, 1, 100_000),
          (int) number(env, "PRODUCER_BATCH_MS", 10, 1, 60_000),
          number(env, "TARGET_DEPTH", 1000, 1, 100_000_000),
          (int) number(env, "WORKER_COUNT", 32, 1, 10_000),
          (int) number(env, "JOB_PAYLOAD_BYTES", 256, 0, 10_000_000),
          (int) number(env, "JOB_WORK_MS", 1, 0, 3_600_000),
          (int) number(env, "SAMPLE_EVERY_S", 5, 1, 3_600),
          (int) number(env, "BENCH_INSTANCE_ID", 0, 0, 10_000),
          pacing.equals("harness") && mode.equals("fixed"),
          env.get("PRODUCER_RATE_CONTROL_FILE"),
          env.getOrDefault("PGJOBS_VERSION", "unknown"),
          retry.equals("idempotent"));
    }

    private static long number(
        Map<String, String> env, String name, long fallback, long min, long max) {
      String text = env.get(name);
      if (text == null || text.isBlank()) {
        return fallback;
      }
      long value;
      try {
        // The harness writes some of these as floats ("800.0").
        value = (long) Double.parseDouble(text.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            name + " '" + text + "' is not a number; allowed: " + min + " to " + max);
      }
      if (value < min || value > max) {
        throw new IllegalArgumentException(
            name + " " + value + " is out of range; allowed: " + min + " to " + max);
      }
      return value;
    }
  }
}
