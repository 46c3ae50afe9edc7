package io.pgjobs.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Records pgjobs' metrics ({@link MetricNames}) in a Micrometer registry.
 *
 * <pre>{@code JobWorker.builder(dataSource).metrics(new MicrometerJobMetrics(registry))}</pre>
 */
public final class MicrometerJobMetrics implements JobMetrics {
  private static final long DEPTH_CACHE_NANOS = Duration.ofSeconds(5).toNanos();

  private final MeterRegistry registry;
  private final Set<String> depthQueues = ConcurrentHashMap.newKeySet();
  private volatile Supplier<Map<String, Long>> depthSource;
  private volatile Map<String, Long> depthCache = Map.of();
  private volatile long depthReadAt;
  private final Set<String> limitedQueues = ConcurrentHashMap.newKeySet();
  private volatile Supplier<java.util.List<io.pgjobs.QueueLimitsStatus>> limitsSource;
  private volatile Map<String, io.pgjobs.QueueLimitsStatus> limitsCache = Map.of();
  private volatile long limitsReadAt;

  /** The values of {@link MetricNames#LIMITED_WAITING}'s {@code waiting_for} tag. */
  private static final java.util.List<String> WAITING_FOR = java.util.List.of(
      io.pgjobs.QueueLimitsStatus.AT_GLOBAL_LIMIT,
      io.pgjobs.QueueLimitsStatus.RATE_LIMITED,
      io.pgjobs.QueueLimitsStatus.PARTITIONS_BUSY,
      "none");

  /** Records into {@code registry}. */
  public MicrometerJobMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public void enqueued(String type, int count) {
    Counter.builder(MetricNames.JOBS_ENQUEUED)
        .description("Jobs enqueued")
        .tag("kind", type)
        .register(registry)
        .increment(count);
  }

  @Override
  public void started(String type) {
    Counter.builder(MetricNames.JOBS_STARTED)
        .description("Job attempts started")
        .tag("kind", type)
        .register(registry)
        .increment();
  }

  @Override
  public void completed(String type, String outcome, Duration duration) {
    Counter.builder(MetricNames.JOBS_COMPLETED)
        .description("Job attempts ended, by outcome")
        .tag("kind", type)
        .tag("outcome", outcome)
        .register(registry)
        .increment();
    Timer.builder(MetricNames.JOB_DURATION)
        .description("Handler run time")
        .tag("kind", type)
        .tag("outcome", outcome)
        .publishPercentileHistogram()
        .register(registry)
        .record(duration);
  }

  @Override
  public void queueDepth(Supplier<Map<String, Long>> depthByQueue) {
    this.depthSource = depthByQueue;
    refreshDepth();
  }

  @Override
  public void queueLimits(Supplier<java.util.List<io.pgjobs.QueueLimitsStatus>> statuses) {
    this.limitsSource = statuses;
    refreshLimits();
  }

  private void watchLimited(String queue) {
    if (!limitedQueues.add(queue)) {
      return;
    }
    Gauge.builder(MetricNames.LIMITED_RUNNING, () -> limited(queue, null))
        .description("A limited queue's running jobs")
        .tag("queue", queue)
        .register(registry);
    for (String why : WAITING_FOR) {
      Gauge.builder(MetricNames.LIMITED_WAITING, () -> limited(queue, why))
          .description("A limited queue's due jobs, by the limit that holds them back")
          .tag("queue", queue)
          .tag("waiting_for", why)
          .register(registry);
    }
  }

  /** Running jobs ({@code why} null), or the due jobs held back for {@code why}. */
  private double limited(String queue, String why) {
    if (System.nanoTime() - limitsReadAt > DEPTH_CACHE_NANOS) {
      refreshLimits();
    }
    io.pgjobs.QueueLimitsStatus status = limitsCache.get(queue);
    if (status == null) {
      return 0;
    }
    if (why == null) {
      return status.running();
    }
    String actual = status.waitingFor() == null ? "none" : status.waitingFor();
    return actual.equals(why) ? status.waiting() : 0;
  }

  private void refreshLimits() {
    Supplier<java.util.List<io.pgjobs.QueueLimitsStatus>> source = limitsSource;
    if (source == null) {
      return;
    }
    limitsReadAt = System.nanoTime();
    try {
      Map<String, io.pgjobs.QueueLimitsStatus> fresh = new java.util.HashMap<>();
      source.get().forEach(s -> fresh.put(s.queue(), s));
      limitsCache = fresh;
      fresh.keySet().forEach(this::watchLimited);
    } catch (RuntimeException e) {
      // The database may be away; keep the last values rather than failing a scrape.
    }
  }

  @Override
  public void stuckLanes(String workerId, java.util.function.IntSupplier stuckLanes) {
    Gauge.builder(MetricNames.STUCK_LANES, stuckLanes::getAsInt)
        .description("Lanes held by handlers that ignored their stop and were let go")
        .tag("worker", workerId)
        .register(registry);
  }

  @Override
  public void fences(String workerId, java.util.function.LongSupplier fences) {
    workerCounter(
        MetricNames.WORKER_FENCES,
        "Times the worker fenced itself: no heartbeat for the fence time, so it stopped claiming and"
            + " interrupted its handlers",
        workerId,
        fences);
  }

  @Override
  public void handOffs(String workerId, java.util.function.LongSupplier handOffs) {
    workerCounter(
        MetricNames.WORKER_HAND_OFFS,
        "Graph children the worker started by hand-off, in the statement that recorded their last"
            + " parent's success",
        workerId,
        handOffs);
  }

  /** A counter of one worker (tag {@code worker}) read from {@code count}. */
  private void workerCounter(
      String name, String description, String workerId, java.util.function.LongSupplier count) {
    io.micrometer.core.instrument.FunctionCounter.builder(name, count, c -> c.getAsLong())
        .description(description)
        .tag("worker", workerId)
        .register(registry);
  }

  @Override
  public void watchQueue(String queue) {
    if (depthQueues.add(queue)) {
      Gauge.builder(MetricNames.QUEUE_DEPTH, () -> depth(queue))
          .description("Due jobs waiting to be claimed")
          .tag("queue", queue)
          .register(registry);
    }
  }

  private double depth(String queue) {
    if (System.nanoTime() - depthReadAt > DEPTH_CACHE_NANOS) {
      refreshDepth();
    }
    return depthCache.getOrDefault(queue, 0L);
  }

  private void refreshDepth() {
    Supplier<Map<String, Long>> source = depthSource;
    if (source == null) {
      return;
    }
    depthReadAt = System.nanoTime();
    try {
      Map<String, Long> fresh = source.get();
      depthCache = fresh;
      fresh.keySet().forEach(this::watchQueue);
    } catch (RuntimeException e) {
      // The database may be away; keep the last value rather than failing a scrape.
    }
  }
}
