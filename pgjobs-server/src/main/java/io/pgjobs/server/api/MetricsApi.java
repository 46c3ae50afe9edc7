package io.pgjobs.server.api;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgjobs.JobClient;
import io.pgjobs.metrics.MetricNames;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code /metrics}: the registry in Prometheus text format. The registry may be shared with workers in
 * the same process, whose {@code worker_*} metrics then appear here too. Before each scrape the queue
 * depth gauge ({@value MetricNames#QUEUE_DEPTH}) and the blocked jobs gauge
 * ({@value MetricNames#QUEUE_BLOCKED}) are refreshed from the database, at most once a second.
 */
public final class MetricsApi {
  /** Content type of the Prometheus text format 0.0.4. */
  public static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

  private static final Logger log = LoggerFactory.getLogger(MetricsApi.class);
  private static final long DEPTH_REFRESH_NANOS = 1_000_000_000L;

  private final PrometheusMeterRegistry registry;
  private final JobClient client;
  private final Map<String, Long> depth = new ConcurrentHashMap<>();
  private final Map<String, Long> blocked = new ConcurrentHashMap<>();
  private volatile long depthReadAt = System.nanoTime() - DEPTH_REFRESH_NANOS;

  /** Scrapes {@code registry}; reads queue depth through {@code client}. */
  public MetricsApi(PrometheusMeterRegistry registry, JobClient client) {
    this.registry = registry;
    this.client = client;
  }

  /** Registers the route. */
  public void register(Routes routes) {
    routes.get("/metrics", ctx -> {
      refreshDepth();
      return Reply.text(PROMETHEUS_TEXT, registry.scrape());
    });
  }

  private void refreshDepth() {
    long now = System.nanoTime();
    if (now - depthReadAt < DEPTH_REFRESH_NANOS) {
      return;
    }
    depthReadAt = now;
    Map<String, Long> fresh;
    try {
      fresh = client.queueDepth();
    } catch (RuntimeException e) {
      log.warn("queue depth not refreshed: {}", e.getMessage());
      return;
    }
    publish(depth, fresh, MetricNames.QUEUE_DEPTH, "Due jobs waiting to be claimed");
    Map<String, Long> freshBlocked;
    try {
      freshBlocked = client.blockedByQueue();
    } catch (RuntimeException e) {
      log.warn("blocked jobs not refreshed: {}", e.getMessage());
      return;
    }
    publish(
        blocked,
        freshBlocked,
        MetricNames.QUEUE_BLOCKED,
        "Jobs of graphs waiting for the jobs they depend on");
  }

  /**
   * Puts {@code fresh} counts per queue into {@code gauges}, a queue absent from them at 0, and registers
   * gauge {@code name} for each queue seen the first time.
   */
  private void publish(
      Map<String, Long> gauges, Map<String, Long> fresh, String name, String description) {
    gauges.replaceAll((queue, old) -> 0L);
    fresh.forEach((queue, n) -> {
      if (gauges.put(queue, n) == null) {
        Gauge.builder(name, gauges, m -> m.getOrDefault(queue, 0L))
            .description(description)
            .tag("queue", queue)
            .register(registry);
      }
    });
  }
}
