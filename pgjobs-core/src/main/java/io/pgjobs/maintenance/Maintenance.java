package io.pgjobs.maintenance;

import io.pgjobs.JobClient;
import io.pgjobs.config.PgJobsSettings;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.service.BackgroundService;
import io.pgjobs.store.WorkerStore;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Maintenance for one pgjobs schema, done by whichever node holds the maintenance lease: rescue of jobs
 * whose worker died or went silent, removal of dead workers, pruning of finished jobs past retention,
 * recurring schedules, and a vacuum of the hot table when its dead row versions pile up. Start one
 * in every process that should be able to take over; only the leader acts.
 *
 * <pre>{@code
 * Maintenance maintenance = Maintenance.builder(dataSource).staleThreshold(Duration.ofMinutes(10)).build().start();
 * }</pre>
 *
 * {@code JobWorker} starts one of its own unless told not to.
 */
public final class Maintenance implements BackgroundService, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Maintenance.class);

  // The defaults are declared in PgJobsSettings, with their ranges; these name them for callers.

  /** A running job with no heartbeat for this long is rescued ({@link PgJobsSettings#STALE_THRESHOLD}). */
  public static final Duration DEFAULT_STALE_THRESHOLD =
      PgJobsSettings.STALE_THRESHOLD.defaultValue();
  /** Finished jobs are kept this long ({@link PgJobsSettings#RETENTION}). */
  public static final Duration DEFAULT_RETENTION = PgJobsSettings.RETENTION.defaultValue();
  /** The maintenance lease lasts this long unless renewed ({@link PgJobsSettings#LEASE_TTL}). */
  public static final Duration DEFAULT_LEASE_TTL = PgJobsSettings.LEASE_TTL.defaultValue();
  /**
   * A worker whose own row has not been renewed for this long is presumed dead and every job it holds
   * goes back to the queue ({@link PgJobsSettings#WORKER_DEAD_AFTER}). Workers renew it every few seconds
   * (see JobWorker's heartbeat interval) and stop their own handlers before this passes without a renewal.
   */
  public static final Duration DEFAULT_WORKER_DEAD_AFTER =
      PgJobsSettings.WORKER_DEAD_AFTER.defaultValue();
  /** How often the leader fires recurring schedules' due slots ({@link PgJobsSettings#RECURRING_INTERVAL}). */
  public static final Duration DEFAULT_RECURRING_INTERVAL =
      PgJobsSettings.RECURRING_INTERVAL.defaultValue();
  /**
   * A recurring slot older than this when looked at was missed, with the default lease TTL and recurring
   * interval. Unless set ({@link Builder#recurringMissedAfter}), it is the time a leader change may take:
   * twice the lease TTL and twice the recurring interval.
   */
  public static final Duration DEFAULT_RECURRING_MISSED_AFTER =
      PgJobsSettings.defaultRecurringMissedAfter(DEFAULT_LEASE_TTL, DEFAULT_RECURRING_INTERVAL);
  /** How often the pruner runs ({@link PgJobsSettings#PRUNE_INTERVAL}). */
  public static final Duration DEFAULT_PRUNE_INTERVAL =
      PgJobsSettings.PRUNE_INTERVAL.defaultValue();
  /**
   * A due job whose type no live worker serving its queue runs is failed once it is this old
   * ({@link PgJobsSettings#UNKNOWN_TYPE_GRACE}; see {@link Builder#unknownTypeGrace}).
   */
  public static final Duration DEFAULT_UNKNOWN_TYPE_GRACE =
      PgJobsSettings.UNKNOWN_TYPE_GRACE.defaultValue();
  /**
   * How often the leader looks at the hot table's dead row versions, and vacuums it if needed
   * ({@link PgJobsSettings#VACUUM_INTERVAL}).
   */
  public static final Duration DEFAULT_VACUUM_INTERVAL =
      PgJobsSettings.VACUUM_INTERVAL.defaultValue();

  private final LeaderElector elector;
  private final List<MaintenanceTask> tasks;
  private final long[] nextRun;
  private final Semaphore wake = new Semaphore(0);
  private final AtomicLong passes = new AtomicLong();
  private volatile boolean stopping;
  private Thread thread;

  private Maintenance(Builder b) {
    WorkerStore store =
        new WorkerStore(b.dataSource, b.schema, new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
    Duration rescueInterval = b.rescueInterval != null
        ? b.rescueInterval
        : PgJobsSettings.defaultRescueInterval(b.staleThreshold, b.workerDeadAfter);
    this.elector = new LeaderElector(store, b.holderId, b.leaseTtl);
    List<MaintenanceTask> all = new java.util.ArrayList<>(List.of(
        new JobRescuer(store, b.workerDeadAfter, b.staleThreshold, rescueInterval),
        new DeadWorkerRemover(store, b.staleThreshold, rescueInterval),
        new FinishedJobPruner(store, b.retention, b.pruneInterval),
        new RecurringFirer(
            b.client != null
                ? new io.pgjobs.recurring.RecurringStore(b.dataSource, b.schema, b.client)
                : new io.pgjobs.recurring.RecurringStore(b.dataSource, b.schema),
            b.recurringInterval,
            b.recurringMissedAfter != null
                ? b.recurringMissedAfter
                : PgJobsSettings.defaultRecurringMissedAfter(b.leaseTtl, b.recurringInterval))));
    all.add(new UnknownTypeFailer(store, b.unknownTypeGrace, b.holderId));
    all.add(new PartitionKeyer(new io.pgjobs.store.LimitsStore(b.dataSource, b.schema)));
    if (b.vacuumInterval != null) {
      all.add(new HotTableVacuum(store, b.vacuumInterval, b.shrinkInterval));
    }
    this.tasks = List.copyOf(all);
    this.nextRun = new long[tasks.size()];
  }

  /** A builder over {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** Starts competing for the lease and, when leading, running the tasks. */
  @Override
  public synchronized Maintenance start() {
    if (thread == null && !stopping) {
      thread = Thread.ofPlatform().daemon().name("pgjobs-maintenance").start(this::run);
    }
    return this;
  }

  /** True while this node holds the maintenance lease. */
  public boolean isLeader() {
    return elector.isLeader();
  }

  /** How many rounds of tasks this node has run as leader (a test hook: await it instead of sleeping). */
  public long passes() {
    return passes.get();
  }

  private void run() {
    long nextRenew = System.nanoTime(); // nanoTime may be negative: never compare it with 0
    while (!stopping) {
      long now = System.nanoTime();
      if (now - nextRenew >= 0) {
        boolean leading = elector.renew();
        nextRenew = now + elector.renewInterval().toNanos();
        if (!leading) {
          java.util.Arrays.fill(nextRun, 0L);
        }
      }
      if (elector.isLeader()) {
        boolean ran = false;
        for (int i = 0; i < tasks.size(); i++) {
          MaintenanceTask task = tasks.get(i);
          if (nextRun[i] == 0L || now - nextRun[i] >= 0) {
            try {
              task.run();
            } catch (Exception e) {
              log.warn("maintenance task {} failed: {}", task.name(), e.getMessage());
            }
            nextRun[i] = System.nanoTime() + task.interval().toNanos();
            ran = true;
          }
        }
        if (ran) {
          passes.incrementAndGet();
        }
      }
      long sleepNanos = nextRenew - System.nanoTime();
      if (elector.isLeader()) {
        for (long next : nextRun) {
          sleepNanos = Math.min(sleepNanos, next - System.nanoTime());
        }
      }
      try {
        if (sleepNanos > 0 && wake.tryAcquire(sleepNanos, TimeUnit.NANOSECONDS)) {
          wake.drainPermits();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    elector.resign();
  }

  /** Asks the loop to end; it gives the lease up as it ends. */
  @Override
  public void stop() {
    synchronized (this) {
      stopping = true;
    }
    wake.release();
  }

  /** Waits for the loop to end (the task running now finishes first) and the lease to be given up. */
  @Override
  public boolean awaitStopped(Duration timeout) {
    Thread t;
    synchronized (this) {
      t = thread;
    }
    return BackgroundService.join(t, timeout);
  }

  /** Stops, and gives the lease up so another node takes over at once: waits up to 10 s. */
  @Override
  public void close() {
    stopAndAwait(Duration.ofSeconds(10));
  }

  /** Builder of {@link Maintenance}; {@link #build()} validates every setting. */
  public static final class Builder {
    private final DataSource dataSource;
    private String schema = JobClient.DEFAULT_SCHEMA;
    private String holderId = "maintenance-" + ProcessHandle.current().pid() + "-"
        + UUID.randomUUID().toString().substring(0, 8);
    private Duration staleThreshold = DEFAULT_STALE_THRESHOLD;
    private Duration workerDeadAfter = DEFAULT_WORKER_DEAD_AFTER;
    private Duration rescueInterval;
    private Duration retention = DEFAULT_RETENTION;
    private Duration pruneInterval = DEFAULT_PRUNE_INTERVAL;
    private Duration leaseTtl = DEFAULT_LEASE_TTL;
    private Duration recurringInterval = DEFAULT_RECURRING_INTERVAL;
    private Duration recurringMissedAfter;
    private JobClient client;
    private Duration vacuumInterval = DEFAULT_VACUUM_INTERVAL;
    private Duration shrinkInterval = HotTableVacuum.SHRINK_INTERVAL;
    private Duration unknownTypeGrace = DEFAULT_UNKNOWN_TYPE_GRACE;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * The client recurring schedules' slots are enqueued through (default: one of its own over the
     * maintenance's data source and schema); the composition root ({@code PgJobs}) passes its own.
     */
    public Builder client(JobClient client) {
      this.client = Objects.requireNonNull(client, "client");
      return this;
    }

    /** The pgjobs schema. */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The name this node holds the lease under (default {@code maintenance-<pid>-<random>}). */
    public Builder holderId(String holderId) {
      if (holderId == null || holderId.isBlank() || holderId.length() > 255) {
        throw new IllegalArgumentException(
            "holder id must be 1 to 255 characters, was '" + holderId + "'");
      }
      this.holderId = holderId;
      return this;
    }

    /** Running jobs silent this long are rescued ({@link PgJobsSettings#STALE_THRESHOLD}). Use one value on every node. */
    public Builder staleThreshold(Duration staleThreshold) {
      this.staleThreshold = PgJobsSettings.STALE_THRESHOLD.require(staleThreshold);
      return this;
    }

    /**
     * A worker whose own heartbeat row is older than this is presumed dead, and its jobs go back to the
     * queue at once ({@link PgJobsSettings#WORKER_DEAD_AFTER}). Use one value on every node, and several of the workers'
     * heartbeat intervals.
     */
    public Builder workerDeadAfter(Duration workerDeadAfter) {
      this.workerDeadAfter = PgJobsSettings.WORKER_DEAD_AFTER.require(workerDeadAfter);
      return this;
    }

    /**
     * How often the leader looks for jobs to rescue (default the least of half the stale threshold, a
     * quarter of the worker dead-after threshold, and 30 s; {@link PgJobsSettings#RESCUE_INTERVAL}).
     */
    public Builder rescueInterval(Duration rescueInterval) {
      this.rescueInterval = PgJobsSettings.RESCUE_INTERVAL.require(rescueInterval);
      return this;
    }

    /** Finished jobs older than this are deleted ({@link PgJobsSettings#RETENTION}). */
    public Builder retention(Duration retention) {
      this.retention = PgJobsSettings.RETENTION.require(retention);
      return this;
    }

    /** How often the pruner runs ({@link PgJobsSettings#PRUNE_INTERVAL}). */
    public Builder pruneInterval(Duration pruneInterval) {
      this.pruneInterval = PgJobsSettings.PRUNE_INTERVAL.require(pruneInterval);
      return this;
    }

    /** How long the maintenance lease lasts unless renewed ({@link PgJobsSettings#LEASE_TTL}). */
    public Builder leaseTtl(Duration leaseTtl) {
      this.leaseTtl = PgJobsSettings.LEASE_TTL.require(leaseTtl);
      return this;
    }

    /** How often the leader fires the due slots of recurring schedules ({@link PgJobsSettings#RECURRING_INTERVAL}). */
    public Builder recurringInterval(Duration interval) {
      this.recurringInterval = PgJobsSettings.RECURRING_INTERVAL.require(interval);
      return this;
    }

    /**
     * A recurring slot older than this when the leader looks at it was missed (nothing fired it: every
     * worker was stopped, or the schedule paused), and follows its schedule's missed-slots policy; while
     * none is missed, every due slot fires (a per-second schedule keeps each slot across the leader's
     * jitter and a leader change). Default: the time a leader change may take, twice the lease TTL and twice
     * the recurring interval ({@link PgJobsSettings#RECURRING_MISSED_AFTER}).
     */
    public Builder recurringMissedAfter(Duration missedAfter) {
      this.recurringMissedAfter = PgJobsSettings.RECURRING_MISSED_AFTER.require(missedAfter);
      return this;
    }

    /**
     * How often the leader looks at the hot table's dead row versions and vacuums it when they number
     * 10,000 or more, or 1,000 or more and twice its live rows (a small table mostly dead, whose next
     * claims would step over them) ({@link PgJobsSettings#VACUUM_INTERVAL}). At thousands of jobs a second they outrun autovacuum
     * (at most once a minute per database by default), and claims slow down as they pile up. The database
     * user must own the table; if it does not, the leader says so once and leaves the table to autovacuum.
     */
    public Builder vacuumInterval(Duration interval) {
      this.vacuumInterval = PgJobsSettings.VACUUM_INTERVAL.require(interval);
      return this;
    }

    /**
     * The shortest time between two vacuums that give the emptied hot table's pages back (one minute;
     * not a setting: package-private for the test that watches several cuts in a row).
     */
    Builder shrinkInterval(Duration interval) {
      this.shrinkInterval = java.util.Objects.requireNonNull(interval, "interval");
      return this;
    }

    /**
     * Whether the leader vacuums the hot table itself (default true; see {@link #vacuumInterval}). Turn it
     * off when the table's own autovacuum settings, or a schedule of yours, keep it small.
     */
    public Builder hotTableVacuum(boolean on) {
      this.vacuumInterval =
          on ? (vacuumInterval != null ? vacuumInterval : DEFAULT_VACUUM_INTERVAL) : null;
      return this;
    }

    /**
     * A due job whose type none of the live workers serving its queue has a handler for is failed
     * ({@code unknown_type}) once it was created this long ago ({@link PgJobsSettings#UNKNOWN_TYPE_GRACE}). Workers claim
     * only the types they run, so such a job would otherwise wait for ever; a queue no live worker serves
     * is left alone. Use one value on every node.
     */
    public Builder unknownTypeGrace(Duration grace) {
      this.unknownTypeGrace = PgJobsSettings.UNKNOWN_TYPE_GRACE.require(grace);
      return this;
    }

    /** Validates and builds. */
    public Maintenance build() {
      return new Maintenance(this);
    }
  }
}
