package io.pgjobs.metrics;

/**
 * Every metric pgjobs records. The first three are the names of seed 003 so existing dashboards work.
 *
 * <table>
 *   <caption>Metrics</caption>
 *   <tr><th>name</th><th>kind</th><th>tags</th><th>meaning</th></tr>
 *   <tr><td>{@value #JOBS_STARTED}</td><td>counter</td><td>kind</td><td>attempts started</td></tr>
 *   <tr><td>{@value #JOBS_COMPLETED}</td><td>counter</td><td>kind, outcome</td>
 *       <td>attempts ended; outcome is succeeded, retrying, failed, discarded, snoozed, cancelled,
 *       released (given back at shutdown), not_recorded (the job was no longer this attempt's, e.g. rescued
 *       meanwhile: its outcome write matched nothing), error (the outcome could not be written)</td></tr>
 *   <tr><td>{@value #JOB_DURATION}</td><td>histogram (seconds)</td><td>kind, outcome</td>
 *       <td>handler run time</td></tr>
 *   <tr><td>{@value #JOBS_ENQUEUED}</td><td>counter</td><td>kind</td><td>jobs enqueued by this process</td></tr>
 *   <tr><td>{@value #QUEUE_DEPTH}</td><td>gauge</td><td>queue</td><td>jobs due and waiting</td></tr>
 *   <tr><td>{@value #QUEUE_BLOCKED}</td><td>gauge</td><td>queue</td>
 *       <td>jobs of graphs waiting for the jobs they depend on (the API server's /metrics)</td></tr>
 *   <tr><td>{@value #LIMITED_RUNNING}</td><td>gauge</td><td>queue</td>
 *       <td>a limited queue's running jobs (what its global concurrency counts)</td></tr>
 *   <tr><td>{@value #LIMITED_WAITING}</td><td>gauge</td><td>queue, waiting_for</td>
 *       <td>a limited queue's due jobs, under the limit that holds them back: at_global_limit, rate_limited,
 *       partitions_busy, or none (they wait for a lane)</td></tr>
 * </table>
 *
 * Micrometer appends {@code _total} to counters in Prometheus output; the counter names below are
 * given without it.
 */
public final class MetricNames {
  /** Counter: attempts started, tag {@code kind}. Prometheus: {@code worker_jobs_started_total}. */
  public static final String JOBS_STARTED = "worker_jobs_started";
  /** Counter: attempts ended, tags {@code kind}, {@code outcome}. Prometheus: {@code worker_jobs_completed_total}. */
  public static final String JOBS_COMPLETED = "worker_jobs_completed";
  /** Histogram of handler run time in seconds, tags {@code kind}, {@code outcome}. */
  public static final String JOB_DURATION = "worker_job_duration";
  /** Counter: jobs enqueued, tag {@code kind}. Prometheus: {@code pgjobs_jobs_enqueued_total}. */
  public static final String JOBS_ENQUEUED = "pgjobs_jobs_enqueued";
  /** Gauge: due jobs waiting, tag {@code queue}. */
  public static final String QUEUE_DEPTH = "pgjobs_queue_depth";
  /** Gauge: blocked jobs of graphs (waiting for the jobs they depend on), tag {@code queue}. */
  public static final String QUEUE_BLOCKED = "pgjobs_queue_blocked";
  /**
   * Gauge: lanes held by handlers the worker had to let go (they ignored their timeout, cancellation or
   * shutdown), tag {@code worker}.
   */
  public static final String STUCK_LANES = "pgjobs_worker_stuck_lanes";

  /**
   * Counter: times the worker fenced itself (no heartbeat for the fence time: it stopped claiming and
   * interrupted its handlers, whose jobs run again), tag {@code worker}. Any increase deserves a look.
   */
  public static final String WORKER_FENCES = "pgjobs_worker_fences";

  /**
   * Counter: graph children the worker started by hand-off (in the statement that recorded their last
   * parent's success, without a claim), tag {@code worker}.
   */
  public static final String WORKER_HAND_OFFS = "pgjobs_worker_hand_offs";

  /** Gauge: a limited queue's running jobs, tag {@code queue}. */
  public static final String LIMITED_RUNNING = "pgjobs_queue_limit_running";
  /**
   * Gauge: a limited queue's due jobs by the limit that holds them back, tags {@code queue},
   * {@code waiting_for} (at_global_limit, rate_limited, partitions_busy, none); the jobs count under one
   * value at a time, the others read 0.
   */
  public static final String LIMITED_WAITING = "pgjobs_queue_limit_waiting";

  private MetricNames() {}
}
