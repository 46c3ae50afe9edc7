package io.pgjobs.worker;

import io.pgjobs.JobClient;
import io.pgjobs.JobHandler;
import io.pgjobs.JobType;
import io.pgjobs.config.DurationText;
import io.pgjobs.config.PgJobsSettings;
import io.pgjobs.config.Setting;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.maintenance.Maintenance;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.notify.JobNotificationListener;
import io.pgjobs.service.BackgroundService;
import io.pgjobs.service.ServiceGroup;
import io.pgjobs.store.AdminStore;
import io.pgjobs.store.Channels;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.store.WorkerStore;
import java.net.InetAddress;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.random.RandomGenerator;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.json.JsonMapper;

/**
 * Runs jobs: claims them from the queues it serves, runs their handlers on virtual threads and records
 * the outcomes. Any number of workers, in any number of processes, can share one database.
 *
 * <pre>{@code
 * JobWorker worker = JobWorker.builder(dataSource)
 *     .register(SEND_EMAIL, (ctx, email) -> { mailer.send(email); return null; })
 *     .queue("default", 10)
 *     .build();
 * worker.start();
 * ...
 * worker.close();   // stop claiming, let running jobs finish within the shutdown grace
 * }</pre>
 *
 * Unless queues are named, the worker serves the default queue of every registered type, each with
 * {@link #DEFAULT_CONCURRENCY} concurrent jobs. Every setting's default and range: {@link PgJobsSettings}.
 */
public final class JobWorker implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(JobWorker.class);

  // The defaults are declared in PgJobsSettings, with their ranges; these name them for callers.

  /** Concurrent jobs per queue unless said otherwise ({@link PgJobsSettings#CONCURRENCY}). */
  public static final int DEFAULT_CONCURRENCY = PgJobsSettings.CONCURRENCY.defaultValue();
  /**
   * Most jobs claimed per statement unless said otherwise ({@link PgJobsSettings#CLAIM_BATCH}). A claim
   * takes the free slots plus a prefetch sized by the speed of the queue's lanes (see QueuePoller), so this
   * is a ceiling that only fast jobs reach.
   */
  public static final int DEFAULT_CLAIM_BATCH = PgJobsSettings.CLAIM_BATCH.defaultValue();
  /** How often an idle queue is polled when no notification arrives ({@link PgJobsSettings#POLL_INTERVAL}). */
  public static final Duration DEFAULT_POLL_INTERVAL = PgJobsSettings.POLL_INTERVAL.defaultValue();
  /** How long running jobs get to finish on {@link #close()} ({@link PgJobsSettings#SHUTDOWN_GRACE}). */
  public static final Duration DEFAULT_SHUTDOWN_GRACE =
      PgJobsSettings.SHUTDOWN_GRACE.defaultValue();
  /**
   * How long a due job of a type no live worker serving its queue runs waits before it is failed
   * ({@link PgJobsSettings#UNKNOWN_TYPE_GRACE}).
   */
  public static final Duration DEFAULT_UNKNOWN_TYPE_GRACE =
      PgJobsSettings.UNKNOWN_TYPE_GRACE.defaultValue();
  /** Least time between two persisted progress updates of one job ({@link PgJobsSettings#PROGRESS_THROTTLE}). */
  public static final Duration DEFAULT_PROGRESS_THROTTLE =
      PgJobsSettings.PROGRESS_THROTTLE.defaultValue();
  /** How long a handler asked to stop may go on before it is let go ({@link PgJobsSettings#STUCK_HANDLER_GRACE}). */
  public static final Duration DEFAULT_STUCK_HANDLER_GRACE =
      PgJobsSettings.STUCK_HANDLER_GRACE.defaultValue();
  /**
   * How long a job claimed ahead may wait for a lane before it goes back to the queue
   * ({@link PgJobsSettings#PREFETCH_HOLD}).
   */
  public static final Duration DEFAULT_PREFETCH_HOLD = PgJobsSettings.PREFETCH_HOLD.defaultValue();
  /** Connect timeout of handlers' HTTP, {@code ctx.http()} ({@link PgJobsSettings#HTTP_CONNECT_TIMEOUT}). */
  public static final Duration DEFAULT_HTTP_CONNECT_TIMEOUT =
      PgJobsSettings.HTTP_CONNECT_TIMEOUT.defaultValue();
  /** Request timeout of handlers' HTTP, {@code ctx.http()} ({@link PgJobsSettings#HTTP_REQUEST_TIMEOUT}). */
  public static final Duration DEFAULT_HTTP_REQUEST_TIMEOUT =
      PgJobsSettings.HTTP_REQUEST_TIMEOUT.defaultValue();
  /** Most successes written per statement ({@link PgJobsSettings#COMPLETION_BATCH}). */
  public static final int DEFAULT_COMPLETION_BATCH = PgJobsSettings.COMPLETION_BATCH.defaultValue();

  private enum Phase {
    NEW,
    RUNNING,
    STOPPED
  }

  private final String workerId;
  private final AdminStore store;
  private final Duration shutdownGrace;
  private final boolean listen;
  private final boolean separateListenSource;
  private final Duration pollInterval;
  private final JobMetrics metrics;
  private final List<QueuePoller> pollers = new ArrayList<>();
  private final Map<String, QueuePoller> pollersByQueue = new LinkedHashMap<>();
  private final HeldJobs held = new HeldJobs();
  private final JobCompleter completions;
  private final JobRunner runner;
  private final ExecutorService handlerThreads;
  private final HttpSupport http;
  private final ScheduledExecutorService timers;
  private final JobNotificationListener listener;
  private final WorkerHeartbeat heartbeat;
  private final Maintenance maintenance;
  private Phase phase = Phase.NEW;
  private final JobClient client;
  private final ServiceGroup services = new ServiceGroup();
  private volatile long closeStartedNanos;
  private final List<io.pgjobs.recurring.Recurring> recurring;
  /** The queue limits this worker declares in code, applied at start unless set at run time. */
  private final Map<String, io.pgjobs.QueueLimits> declaredLimits;

  private final io.pgjobs.store.LimitsStore limitsStore;
  /** Which queues have limits, read at start and every 500 ms by the timer thread. */
  private final LimitedQueues limitedQueues;

  private final io.pgjobs.recurring.RecurringStore recurringStore;
  /** The worker's data source, for the replication check at start. */
  private final javax.sql.DataSource replicationCheckSource;

  /**
   * Assembles the worker's own loops from the parts {@code root} built once (client, codec, stores,
   * tracing): the worker builds no client and no store of its own.
   */
  private JobWorker(Builder b, PgJobs root) {
    this.replicationCheckSource = root.dataSource();
    this.workerId = b.workerId != null ? b.workerId : defaultWorkerId();
    this.recurring = List.copyOf(b.recurring.values());
    // Limits declared by registered types (JobType.withLimits), then the builder's own, which win.
    Map<String, io.pgjobs.QueueLimits> declared = new LinkedHashMap<>();
    b.handlers
        .values()
        .forEach(r -> r.type().limits().ifPresent(l -> declared.put(r.type().queue(), l)));
    declared.putAll(b.limits);
    this.declaredLimits = Map.copyOf(declared);
    this.limitsStore = new io.pgjobs.store.LimitsStore(root.dataSource(), root.schema());
    this.recurringStore = root.recurringStore();
    this.store = root.adminStore();
    // Claims only the types registered here: a job of another type is left to a worker that runs
    // it.
    ExecutionStore execution = root.executionStore(b.capabilities, b.handlers.keySet());
    // Runs are traced as the builder says; jobs the handlers enqueue as the root's client does (the
    // same unless a worker builder of a root was given an OpenTelemetry of its own).
    io.pgjobs.tracing.JobTracing tracing = b.tracing != null ? b.tracing : root.tracing();
    this.shutdownGrace = b.shutdownGrace;
    this.listen = b.listen;
    this.separateListenSource = b.listenDataSource != null;
    this.pollInterval = b.pollInterval;
    this.metrics = b.metrics;
    this.completions = new JobCompleter(
        execution, held, metrics, b.completionBatch, Math.max(10_000, b.completionBatch * 10));
    this.http = new HttpSupport(b.httpConnectTimeout, b.httpRequestTimeout);
    this.handlerThreads = Executors.newThreadPerTaskExecutor(
        Thread.ofVirtual().name("pgjobs-job-", 0).factory());
    ScheduledThreadPoolExecutor timerPool = new ScheduledThreadPoolExecutor(
        1, r -> Thread.ofPlatform().daemon().name("pgjobs-timers-" + workerId).unstarted(r));
    this.timers = timerPool;
    this.runner = new JobRunner(
        execution,
        Map.copyOf(b.handlers),
        completions,
        held,
        timers,
        metrics,
        workerId,
        b.unknownTypeGrace,
        b.progressThrottle,
        b.stuckHandlerGrace,
        b.random,
        http,
        root.client(),
        tracing);
    this.limitedQueues = new LimitedQueues(limitsStore);
    Map<String, Integer> queues = new LinkedHashMap<>(b.queues);
    if (queues.isEmpty()) {
      b.handlers.values().forEach(r -> queues.putIfAbsent(r.type().queue(), DEFAULT_CONCURRENCY));
    }
    queues.forEach((queue, concurrency) -> {
      QueuePoller poller = new QueuePoller(
          queue,
          concurrency,
          b.claimBatch,
          b.pollInterval,
          execution,
          runner,
          completions,
          held,
          handlerThreads,
          workerId,
          b.prefetchHold);
      poller.pickupListener(b.pickupListener);
      poller.limitedQueues(limitedQueues);
      // A poller stops claiming while the completer is backlogged; the backlog's end wakes it at
      // once (waiting out its poll interval left every lane idle for up to a second, W3G's fan-in).
      completions.onBacklogCleared(poller::wake);
      pollers.add(poller);
      pollersByQueue.put(queue, poller);
    });
    // A success that unblocks a graph's child hands it to this worker's poller of its queue at once
    // (ExecutionSql.SUCCEED_BATCH_HANDING_OFF): no claim between a chain's links.
    if (b.handOff) {
      completions.handOffTo(pollersByQueue);
    }
    PickupListener pickup = b.pickupListener;
    this.listener = new JobNotificationListener(
        // Behind a transaction-pooling PgBouncer, LISTEN needs a session of its own: a direct
        // connection.
        b.listenDataSource != null ? b.listenDataSource : root.dataSource(),
        this::readyListenerConnection,
        this::listenerConnected,
        Map.of(
            Channels.ready(root.schema()),
            (queue, connection) -> {
              if (pickup != null) {
                pickup.notified(System.nanoTime());
              }
              QueuePoller poller = pollersByQueue.get(queue);
              if (poller != null) {
                poller.notified(connection);
              }
            },
            Channels.cancel(root.schema()),
            (jobId, connection) -> {
              try {
                runner.cancel(UUID.fromString(jobId));
              } catch (IllegalArgumentException e) {
                log.warn("ignoring cancel notification with payload '{}'", jobId);
              }
            }));
    WorkerStore workerStore = root.workerStore();
    WorkerStore.Registration registration = new WorkerStore.Registration(
        workerId,
        hostName(),
        ProcessHandle.current().pid(),
        Map.copyOf(queues),
        List.copyOf(b.handlers.keySet()),
        execution.capabilities(),
        b.workerDeadAfter);
    Duration heartbeatInterval = b.heartbeatInterval != null
        ? b.heartbeatInterval
        : PgJobsSettings.defaultHeartbeatInterval(b.staleThreshold, b.workerDeadAfter);
    if (heartbeatInterval.compareTo(b.staleThreshold) >= 0) {
      throw new IllegalArgumentException("heartbeat interval (" + heartbeatInterval
          + ") must be shorter than the stale threshold (" + b.staleThreshold
          + "), or live jobs would be rescued");
    }
    if (heartbeatInterval.multipliedBy(3).compareTo(b.workerDeadAfter) > 0) {
      throw new IllegalArgumentException("heartbeat interval (" + heartbeatInterval
          + ") must be at most a third of the worker dead-after" + " threshold ("
          + b.workerDeadAfter + "), or a live worker could be presumed dead after one late beat");
    }
    this.heartbeat = new WorkerHeartbeat(
        root.dataSource(),
        workerStore,
        registration,
        runner,
        held,
        heartbeatInterval,
        // Fenced before either rescue can take its jobs: the dead-worker route or the stale route.
        (b.workerDeadAfter.compareTo(b.staleThreshold) <= 0 ? b.workerDeadAfter : b.staleThreshold)
            .minus(heartbeatInterval),
        new WorkerHeartbeat.Fence() {
          @Override
          public void suspend() {
            pollers.forEach(p -> p.suspend(true));
            runner.stopAll(StopReason.LOST);
          }

          @Override
          public void resume() {
            runner.resume();
            // Jobs claimed before the fence and never started may have been rescued meanwhile (and
            // claimed elsewhere): give them all back (the claim token fences off those no longer
            // ours) and claim afresh. Off the heartbeat's thread, which holds the beat lock.
            timers.execute(() -> {
              releasePrefetched();
              if (!JobWorker.this.heartbeat.isFenced()) {
                pollers.forEach(p -> p.suspend(false));
              }
            });
          }
        });
    this.maintenance = b.maintenance
        ? root.maintenanceBuilder()
            .holderId(workerId)
            .staleThreshold(b.staleThreshold)
            .workerDeadAfter(b.workerDeadAfter)
            .retention(b.retention)
            .leaseTtl(b.leaseTtl)
            .unknownTypeGrace(b.unknownTypeGrace)
            .build()
        : null;
    this.client = root.client();
    // Started in this order, stopped in reverse (ServiceGroup): the heartbeat first and last (the
    // worker is registered before it claims and deregistered after its last outcome is written),
    // the completer inside it (outcomes are written while handlers drain), the pollers last and
    // first (claiming stops before anything else).
    services.add("heartbeat", heartbeat, Duration.ofSeconds(5));
    services.add("completer", new CompleterService(), Duration.ofSeconds(10));
    if (maintenance != null) {
      services.add("maintenance", maintenance, Duration.ofSeconds(10));
    }
    if (listen) {
      services.add("listener", listener, Duration.ofSeconds(5));
    }
    // The lanes' budget is the grace, 10 s for those that ignore the interrupt, 10 s for let-go
    // writes.
    services.add("lanes", new LanesService(), shutdownGrace.plusSeconds(21));
    services.add("pollers", new PollersService(), Duration.ofSeconds(10));
  }

  /**
   * The completer's writer thread as a {@link BackgroundService}. JobCompleter keeps its own methods
   * ({@code start(workerId)}, {@code close(Duration)}); this adapts them to the contract.
   */
  private final class CompleterService implements BackgroundService {
    @Override
    public BackgroundService start() {
      completions.start(workerId);
      return this;
    }

    @Override
    public void stop() {
      // JobCompleter.close both stops and waits: it runs in awaitStopped.
    }

    /** Writes what is queued, trying for at most {@code timeout} if the database fails, then stops. */
    @Override
    public boolean awaitStopped(Duration timeout) {
      completions.close(timeout);
      return true;
    }
  }

  /**
   * The handler lanes (the virtual threads running jobs, and the runner's watchdog) as a {@link
   * BackgroundService}: stopping lets running jobs finish within the shutdown grace, then interrupts the
   * rest and gives their jobs back; once they have ended, the jobs claimed ahead go back too.
   */
  private final class LanesService implements BackgroundService {
    @Override
    public BackgroundService start() {
      runner.startWatchdog();
      return this;
    }

    @Override
    public void stop() {
      // Outcome writes get the grace and 10 s more: if the database is gone, lanes must still end.
      completions.stopRetryingAfter(
          closeStartedNanos + shutdownGrace.plusSeconds(10).toNanos());
      handlerThreads.shutdown();
    }

    @Override
    public boolean awaitStopped(Duration timeout) {
      boolean ended = true;
      try {
        if (!handlerThreads.awaitTermination(shutdownGrace.toMillis(), TimeUnit.MILLISECONDS)) {
          log.warn(
              "worker {}: {} jobs still running after the grace period; interrupting them",
              workerId,
              runner.running().size());
          runner.stopAll(StopReason.SHUTDOWN);
          if (!handlerThreads.awaitTermination(10, TimeUnit.SECONDS)) {
            ended = false;
            log.error(
                "worker {}: jobs ignored the interrupt; they stay running and will be rescued",
                workerId);
          }
        }
        // Handlers that ignored their stop were let go: their outcomes (release) are written on
        // threads of their own, which must finish before the completer closes and the process may
        // exit.
        runner.awaitLetGoWrites(System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      releasePrefetched();
      return ended;
    }
  }

  /** The queues' pollers as one {@link BackgroundService}: all stop claiming at once, then each is awaited. */
  private final class PollersService implements BackgroundService {
    @Override
    public BackgroundService start() {
      pollers.forEach(QueuePoller::start);
      return this;
    }

    @Override
    public void stop() {
      pollers.forEach(QueuePoller::stop);
    }

    @Override
    public boolean awaitStopped(Duration timeout) {
      long deadline = System.nanoTime() + timeout.toNanos();
      boolean all = true;
      for (QueuePoller poller : pollers) {
        Duration left = Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
        all &= poller.awaitStopped(left);
      }
      return all;
    }
  }

  /**
   * The listener has (re)connected: notifications sent while it was away are lost. Look for work at
   * once, and heartbeat at once: the heartbeat's reply carries the cancel flags a lost notification
   * would have announced.
   */
  private void listenerConnected() {
    pollers.forEach(QueuePoller::wake);
    if (heartbeat != null) {
      heartbeat.beatSoon();
    }
  }

  /**
   * The listener claims on its connection when a notification finds its queue's poller idle: ready those
   * claims on each new listener connection, before it listens, not during the first jobs (see
   * ExecutionStore.prepareClaims); once per claim size, as the statements of one size serve every queue.
   */
  private void readyListenerConnection(Connection listenerConnection) {
    java.util.Set<Integer> readied = new java.util.HashSet<>();
    for (QueuePoller poller : pollers) {
      if (readied.add(poller.idleClaimSize())) {
        poller.prepareClaims(listenerConnection);
      }
    }
  }

  /** Gives the claimed jobs that never started back to their queues (after the pollers stopped). */
  private void releasePrefetched() {
    for (QueuePoller poller : pollers) {
      List<ClaimedJob> left = poller.drainBuffer();
      if (left.isEmpty()) {
        continue;
      }
      int back = completions.unclaim(left);
      log.info(
          "worker {}: gave {} of {} prefetched jobs of queue '{}' back",
          workerId,
          back,
          left.size(),
          poller.queue());
    }
  }

  /** A builder over {@code dataSource}. Size its pool for the total concurrency plus a few. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** Starts claiming. Calling it twice does nothing; a closed worker cannot restart. */
  public synchronized JobWorker start() {
    if (phase != Phase.NEW) {
      return this;
    }
    phase = Phase.RUNNING;
    pollersByQueue.keySet().forEach(metrics::watchQueue);
    metrics.stuckLanes(workerId, runner::stuckLanes);
    metrics.fences(workerId, heartbeat::fences);
    metrics.handOffs(workerId, completions::handOffs);
    metrics.queueDepth(() -> {
      try {
        return store.readyDepth();
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    });
    if (!recurring.isEmpty()) {
      declareRecurring();
    }
    declaredLimits.forEach(this::declareLimits);
    limitedQueues.refresh();
    long refreshMs = LimitedQueues.REFRESH_INTERVAL.toMillis();
    timers.scheduleWithFixedDelay(
        limitedQueues::refresh, refreshMs, refreshMs, java.util.concurrent.TimeUnit.MILLISECONDS);
    metrics.queueLimits(() -> {
      try {
        return limitsStore.statuses();
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    });
    // What a lane needs the first time, made now rather than in the first job's pickup: each
    // payload type's reader, and the scheduler of the lanes' virtual threads (created with the
    // JVM's first one). W4's first job after a start: 27-45 ms before, ~14 ms after (the rest ~1.4
    // ms).
    runner.prepareHandlers();
    handlerThreads.execute(() -> {});
    if (listen) {
      log.info(
          "worker {}: LISTEN for new jobs and cancellations on {}; polling every {} as the fallback",
          workerId,
          separateListenSource
              ? "the listen data source (a direct connection)"
              : "the worker's data source",
          DurationText.format(pollInterval));
    } else {
      log.info(
          "worker {}: polling only, every {}: LISTEN is off (listen(false)); cancellations of running jobs"
              + " arrive with the heartbeat",
          workerId,
          DurationText.format(pollInterval));
    }
    // Off the caller's thread: a database that is away must not delay the start (the heartbeat
    // reports it).
    timers.execute(() ->
        io.pgjobs.replication.ReplicationCheck.warnIfCommitsCanBeLost(replicationCheckSource));
    // heartbeat, completer, maintenance, listener, lanes, pollers (see the constructor).
    services.start();
    log.info("worker {} started: queues {}", workerId, pollersByQueue.keySet());
    return this;
  }

  /**
   * Applies the limits declared in code for {@code queue}, unless limits set at run time (API, CLI) stand:
   * those win until cleared.
   */
  private void declareLimits(String queue, io.pgjobs.QueueLimits limits) {
    try {
      if (limitsStore.set(queue, limits, io.pgjobs.store.LimitsStore.SOURCE_CODE)) {
        log.info("worker {}: limits of queue '{}' declared: {}", workerId, queue, limits);
      } else {
        log.info(
            "worker {}: queue '{}' keeps the limits set at run time; its declared limits {} wait until"
                + " those are cleared",
            workerId,
            queue,
            limits);
      }
    } catch (SQLException e) {
      throw new io.pgjobs.PgJobsException(
          "declaring the limits of queue '" + queue + "' failed: " + e.getMessage(), e);
    }
  }

  private void declareRecurring() {
    try {
      List<String> disabled = recurringStore.declare(recurring, runner.handlerTypes());
      log.info(
          "worker {}: recurring schedules declared: {}",
          workerId,
          recurring.stream().map(io.pgjobs.recurring.Recurring::name).toList());
      if (!disabled.isEmpty()) {
        log.warn(
            "worker {}: recurring schedules of its job types that its code no longer declares were disabled: {}",
            workerId,
            disabled);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(
          "could not store the recurring schedules: " + e.getMessage(), e);
    }
  }

  /** The client this worker's handlers enqueue through: its composition root's ({@link PgJobs#client()}). */
  public JobClient client() {
    return client;
  }

  /** The names of this worker's started services in the order {@link #close()} stops them (a test hook). */
  List<String> stopOrder() {
    return services.stopOrder();
  }

  /** This worker's id, as written to {@code locked_by}. */
  public String workerId() {
    return workerId;
  }

  /** The queues this worker serves. */
  public List<String> queues() {
    return List.copyOf(pollersByQueue.keySet());
  }

  /** Jobs running in this worker now. */
  public int runningJobs() {
    return runner.running().size();
  }

  /** True while the LISTEN connection is up (false when listening is off or the database is away). */
  public boolean isListening() {
    return listener.isListening();
  }

  /**
   * Graceful shutdown: stops claiming at once, lets running jobs finish within the shutdown grace,
   * then interrupts the rest and gives their jobs back to the queue (due at once, never failed because
   * of the shutdown), writes pending successes and returns. Idempotent.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (phase == Phase.STOPPED) {
        return;
      }
      closeStartedNanos = System.nanoTime();
      boolean wasRunning = phase == Phase.RUNNING;
      phase = Phase.STOPPED;
      if (!wasRunning) {
        handlerThreads.shutdownNow();
        timers.shutdownNow();
        return;
      }
    }
    log.info(
        "worker {} stopping: {} jobs running, grace {}",
        workerId,
        runner.running().size(),
        shutdownGrace);
    // Stops in reverse order of start, each awaited within its budget before the next: the pollers
    // (claiming ends), the lanes (running jobs drain within the grace; prefetched jobs go back),
    // the listener, maintenance, the completer (pending outcomes written), the heartbeat
    // (deregistered).
    services.stop();
    timers.shutdownNow();
    http.close();
    log.info("worker {} stopped", workerId);
  }

  /**
   * Closes this worker when the JVM shuts down (SIGTERM, SIGINT, {@code System.exit}): the graceful
   * shutdown of {@link #close()} then runs before the process exits.
   */
  public JobWorker closeOnShutdown() {
    Runtime.getRuntime().addShutdownHook(new Thread(this::close, "pgjobs-shutdown-" + workerId));
    return this;
  }

  /** True while this worker's embedded maintenance holds the maintenance lease. */
  public boolean isMaintenanceLeader() {
    return maintenance != null && maintenance.isLeader();
  }

  /**
   * Lanes whose handler ignored a stop (timeout, cancellation, shutdown) and was let go: its job's
   * outcome was recorded without it, and the lane stays occupied until the handler returns.
   */
  public int stuckLanes() {
    return runner.stuckLanes();
  }

  /** Jobs this worker holds in the database now: running, waiting for a lane, or for their outcome write. */
  public int heldJobs() {
    return held.size();
  }

  /** True while the worker has stopped itself because it could not heartbeat for too long. */
  public boolean isFenced() {
    return heartbeat.isFenced();
  }

  /**
   * Times this worker has fenced itself since it started: it could not heartbeat for the fence time, so it
   * stopped claiming and interrupted its handlers (their jobs run again). Also the counter
   * {@code pgjobs_worker_fences}.
   */
  public long fences() {
    return heartbeat.fences();
  }

  /**
   * Graph children this worker has started by hand-off since it started: each went from {@code blocked}
   * to {@code running} in the statement that recorded its last parent's success here
   * ({@link Builder#handOff}). Also the counter {@code pgjobs_worker_hand_offs}.
   */
  public long handOffs() {
    return completions.handOffs();
  }

  /** Heartbeats written so far (for tests: await a heartbeat instead of sleeping). */
  public long heartbeats() {
    return heartbeat.beats();
  }

  private static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      return "unknown-host";
    }
  }

  private static String defaultWorkerId() {
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    return hostName() + ":" + ProcessHandle.current().pid() + ":" + suffix;
  }

  /** Builder of {@link JobWorker}: every setting has a default; {@link #build()} validates all. */
  public static final class Builder {
    private final DataSource dataSource;
    private String schema = JobClient.DEFAULT_SCHEMA;
    private JsonMapper mapper = PayloadCodec.DEFAULT_MAPPER;
    private JobMetrics metrics = JobMetrics.NONE;
    private final Map<String, HandlerRegistration<?>> handlers = new LinkedHashMap<>();
    private final Map<String, Integer> queues = new LinkedHashMap<>();
    private final Map<String, io.pgjobs.QueueLimits> limits = new LinkedHashMap<>();
    private final Map<String, io.pgjobs.recurring.Recurring> recurring = new LinkedHashMap<>();
    private String workerId;
    private List<String> capabilities = List.of();
    private int claimBatch = DEFAULT_CLAIM_BATCH;
    private int completionBatch = DEFAULT_COMPLETION_BATCH;
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private Duration shutdownGrace = DEFAULT_SHUTDOWN_GRACE;
    private Duration unknownTypeGrace = DEFAULT_UNKNOWN_TYPE_GRACE;
    private Duration progressThrottle = DEFAULT_PROGRESS_THROTTLE;
    private boolean listen = PgJobsSettings.LISTEN.defaultValue();
    private boolean handOff = PgJobsSettings.HAND_OFF.defaultValue();
    private DataSource listenDataSource;
    private RandomGenerator random = new Random();
    private Duration staleThreshold = Maintenance.DEFAULT_STALE_THRESHOLD;
    private Duration heartbeatInterval;
    private Duration workerDeadAfter = Maintenance.DEFAULT_WORKER_DEAD_AFTER;
    private Duration stuckHandlerGrace = DEFAULT_STUCK_HANDLER_GRACE;
    private Duration httpConnectTimeout = DEFAULT_HTTP_CONNECT_TIMEOUT;
    private Duration prefetchHold = DEFAULT_PREFETCH_HOLD;
    private PickupListener pickupListener;
    private Duration httpRequestTimeout = DEFAULT_HTTP_REQUEST_TIMEOUT;
    private boolean maintenance = PgJobsSettings.MAINTENANCE.defaultValue();
    private Duration retention = Maintenance.DEFAULT_RETENTION;
    private Duration leaseTtl = Maintenance.DEFAULT_LEASE_TTL;
    private io.pgjobs.tracing.JobTracing tracing;
    /** The composition root this builder came from ({@link PgJobs#workerBuilder()}), or null. */
    private final PgJobs root;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.root = null;
    }

    /**
     * A builder over {@code root}'s shared parts: its schema and mapper are the root's; runs are traced
     * with the root's tracing unless {@link #openTelemetry} says otherwise.
     */
    Builder(PgJobs root) {
      this.root = root;
      this.dataSource = root.dataSource();
      this.schema = root.schema();
      this.mapper = root.mapper();
    }

    /** The pgjobs schema ({@link PgJobsSettings#SCHEMA}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** Jackson mapper for payloads and outputs. */
    public Builder jsonMapper(JsonMapper mapper) {
      this.mapper = Objects.requireNonNull(mapper, "mapper");
      return this;
    }

    /** Where to record metrics, e.g. {@code new MicrometerJobMetrics(registry)}. */
    public Builder metrics(JobMetrics metrics) {
      this.metrics = Objects.requireNonNull(metrics, "metrics");
      return this;
    }

    /**
     * Traces job runs with {@code openTelemetry}: each attempt is a CONSUMER span, a child of (and
     * linked to) the enqueue's PRODUCER span, current on the handler's thread while the handler runs, so
     * the handler's own spans nest under it (docs/operations.md, "Tracing"). Jobs the handlers enqueue
     * are traced with it too. Default: {@code GlobalOpenTelemetry} when the OpenTelemetry API is on the
     * class path (the Java agent's, or an SDK registered globally; nothing is traced until one is), else
     * none. Pass {@code OpenTelemetry.noop()} to turn tracing off.
     */
    public Builder openTelemetry(io.opentelemetry.api.OpenTelemetry openTelemetry) {
      this.tracing = io.pgjobs.tracing.JobTracing.of(openTelemetry);
      return this;
    }

    /**
     * Runs the runs of workflow {@code type} with {@code workflow} (package {@code io.pgjobs.workflow}): its steps
     * are recorded as they end and returned, not run again, when a run resumes. Registers the workflow's
     * job type ({@link io.pgjobs.workflow.WorkflowType#jobType()}); start a run by enqueueing it.
     */
    public <I> Builder workflow(
        io.pgjobs.workflow.WorkflowType<I> type, io.pgjobs.workflow.Workflow<I, ?> workflow) {
      Objects.requireNonNull(type, "type");
      Objects.requireNonNull(workflow, "workflow");
      return register(
          type.jobType(),
          new io.pgjobs.workflow.WorkflowRunner<>(
              workflow, type.version(), type.deadline().orElse(null), () -> schema, () -> mapper));
    }

    /** Runs jobs of {@code type} with {@code handler}. One handler per type name. */
    public <P> Builder register(JobType<P> type, JobHandler<? super P> handler) {
      Objects.requireNonNull(type, "type");
      Objects.requireNonNull(handler, "handler");
      if (handlers.putIfAbsent(type.name(), new HandlerRegistration<>(type, handler)) != null) {
        throw new IllegalArgumentException("job type '" + type.name() + "' is already registered");
      }
      return this;
    }

    /**
     * Declares a recurring schedule (see {@link io.pgjobs.recurring.Recurring}): stored at {@link #start()}
     * (inserted, or its definition updated), fired by the maintenance leader of any node, once per slot. A
     * worker that declares schedules owns the code-declared schedules of its registered job types: one of
     * them it no longer declares is disabled at its start (and reported in the log).
     */
    public Builder recurring(io.pgjobs.recurring.Recurring schedule) {
      Objects.requireNonNull(schedule, "schedule");
      if (recurring.putIfAbsent(schedule.name(), schedule) != null) {
        throw new IllegalArgumentException(
            "recurring schedule '" + schedule.name() + "' is declared twice");
      }
      return this;
    }

    /** Serves {@code queue} with at most {@code concurrency} jobs at once ({@link PgJobsSettings#CONCURRENCY}). */
    public Builder queue(String queue, int concurrency) {
      requireQueueName(queue);
      Setting<Integer> range = PgJobsSettings.CONCURRENCY;
      if (concurrency < range.min() || concurrency > range.max()) {
        throw new IllegalArgumentException("concurrency of queue '" + queue + "' must be between "
            + range.min() + " and " + range.max() + ", was " + concurrency);
      }
      queues.put(queue, concurrency);
      return this;
    }

    /**
     * Declares {@code queue}'s limits across the fleet ({@link io.pgjobs.QueueLimits}), applied when the
     * worker starts. Limits set at run time ({@code JobClient.setLimits}, the API, the CLI) win until they
     * are cleared; the last worker to start with a declaration sets it.
     */
    public Builder limits(String queue, io.pgjobs.QueueLimits limits) {
      requireQueueName(queue);
      this.limits.put(queue, java.util.Objects.requireNonNull(limits, "limits"));
      return this;
    }

    private static void requireQueueName(String queue) {
      if (queue == null || !queue.matches("[A-Za-z0-9_.:\\-/]{1,255}")) {
        throw new IllegalArgumentException("invalid queue name '" + queue
            + "'; allowed: 1 to 255 of letters, digits and _ . : - /");
      }
    }

    /** This worker's id (default {@code host:pid:random}); at most 255 characters. */
    public Builder workerId(String workerId) {
      if (workerId == null || workerId.isBlank() || workerId.length() > 255) {
        throw new IllegalArgumentException(
            "worker id must be 1 to 255 characters, was '" + workerId + "'");
      }
      this.workerId = workerId;
      return this;
    }

    /**
     * The capabilities this worker has ({@code "general", "media"}): besides jobs that need none, it claims
     * jobs that need one of them ({@link io.pgjobs.JobType#withCapability}), those first. None (the
     * default): it claims only jobs that need no capability, with the claim of a plain worker. Names: 1 to
     * {@value io.pgjobs.JobType#MAX_CAPABILITY_LENGTH} characters of letters, digits and {@code _ . -}.
     *
     * @throws io.pgjobs.InvalidJobException naming a capability that is not allowed
     */
    public Builder capabilities(String... capabilities) {
      return capabilities(List.of(capabilities));
    }

    /** Same, from a collection (replaces what was declared before). */
    public Builder capabilities(Collection<String> capabilities) {
      this.capabilities = capabilities.stream()
          .map(name -> io.pgjobs.JobType.requireCapability("capabilities", name))
          .distinct()
          .toList();
      return this;
    }

    /** Most jobs claimed per statement ({@link PgJobsSettings#CLAIM_BATCH}). */
    public Builder claimBatch(int claimBatch) {
      this.claimBatch = PgJobsSettings.CLAIM_BATCH.require(claimBatch);
      return this;
    }

    /** Most successes written per statement ({@link PgJobsSettings#COMPLETION_BATCH}). */
    public Builder completionBatch(int completionBatch) {
      this.completionBatch = PgJobsSettings.COMPLETION_BATCH.require(completionBatch);
      return this;
    }

    /** Poll interval of an idle queue ({@link PgJobsSettings#POLL_INTERVAL}). Notifications wake workers sooner. */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = PgJobsSettings.POLL_INTERVAL.require(pollInterval);
      return this;
    }

    /** Time running jobs get on {@link JobWorker#close()} ({@link PgJobsSettings#SHUTDOWN_GRACE}). */
    public Builder shutdownGrace(Duration shutdownGrace) {
      this.shutdownGrace = PgJobsSettings.SHUTDOWN_GRACE.require(shutdownGrace);
      return this;
    }

    /**
     * How long a due job of a type no live worker serving its queue has a handler for may wait for one
     * before this worker's maintenance (when it leads) fails it as {@code unknown_type}
     * ({@link PgJobsSettings#UNKNOWN_TYPE_GRACE}). This worker never claims such a job: it claims only the types registered here. Use one value
     * on every worker.
     */
    public Builder unknownTypeGrace(Duration grace) {
      this.unknownTypeGrace = PgJobsSettings.UNKNOWN_TYPE_GRACE.require(grace);
      return this;
    }

    /** Least time between two persisted progress updates of one job ({@link PgJobsSettings#PROGRESS_THROTTLE}). */
    public Builder progressThrottle(Duration throttle) {
      this.progressThrottle = PgJobsSettings.PROGRESS_THROTTLE.require(throttle);
      return this;
    }

    /** Whether to LISTEN for new jobs ({@link PgJobsSettings#LISTEN}). Without it the worker relies on polling alone. */
    public Builder listen(boolean listen) {
      this.listen = listen;
      return this;
    }

    /**
     * Whether a small batch of successes starts the graph children it unblocks on this worker at once
     * ({@link PgJobsSettings#HAND_OFF}; default true): a child whose last parent just succeeded here,
     * that this worker would claim itself (due, of a queue it serves, neither paused nor limited, with
     * room, of a type it runs, needing no capability), goes from {@code blocked} to {@code running} in
     * the statement that records the parent's success. A chain's links then wait for no claim; such a
     * child may start ahead of higher-priority jobs waiting in its queue. {@code false}: every child is
     * queued for the next claim.
     */
    public Builder handOff(boolean handOff) {
      this.handOff = handOff;
      return this;
    }

    /**
     * Where the LISTEN connection comes from (default: the worker's own data source). Behind PgBouncer in
     * transaction pooling mode LISTEN cannot work through the pooler (the session that listens is handed to
     * other clients after each transaction), so give a data source that connects to PostgreSQL directly;
     * the worker holds one connection of it for its lifetime (and claims on it when a notification
     * arrives). Without one, behind such a pooler, use {@code listen(false)}: polling only.
     */
    public Builder listenDataSource(DataSource listenDataSource) {
      this.listenDataSource = Objects.requireNonNull(listenDataSource, "listenDataSource");
      return this;
    }

    /**
     * A running job whose heartbeat is older than this is rescued ({@link PgJobsSettings#STALE_THRESHOLD}).
     * Use the same value on every node. Heartbeats run every tenth of it (at most every 30 s) unless
     * {@link #heartbeatInterval} says otherwise.
     */
    public Builder staleThreshold(Duration staleThreshold) {
      this.staleThreshold = PgJobsSettings.STALE_THRESHOLD.require(staleThreshold);
      return this;
    }

    /**
     * A worker whose own heartbeat row is older than this is presumed dead and its jobs go back to the
     * queue at once ({@link PgJobsSettings#WORKER_DEAD_AFTER}). Use the same value on every node. A worker that cannot
     * heartbeat for nearly this long stops claiming and stops its own handlers.
     */
    public Builder workerDeadAfter(Duration workerDeadAfter) {
      this.workerDeadAfter = PgJobsSettings.WORKER_DEAD_AFTER.require(workerDeadAfter);
      return this;
    }

    /**
     * How long a handler asked to stop (timeout, cancellation, shutdown) may go on before it is let go:
     * its outcome is recorded without it and its lane is reported stuck ({@link PgJobsSettings#STUCK_HANDLER_GRACE}).
     */
    public Builder stuckHandlerGrace(Duration grace) {
      this.stuckHandlerGrace = PgJobsSettings.STUCK_HANDLER_GRACE.require(grace);
      return this;
    }

    /**
     * How long a job claimed ahead may wait for a free lane before it goes back to the queue (another
     * worker may have lanes free; {@link PgJobsSettings#PREFETCH_HOLD}).
     */
    public Builder prefetchHold(Duration hold) {
      this.prefetchHold = PgJobsSettings.PREFETCH_HOLD.require(hold);
      return this;
    }

    /**
     * Told how this worker picks jobs up (notification, claim, lane), with nanosecond stamps, for a
     * latency breakdown; default none, which costs nothing. See {@link PickupListener}.
     */
    public Builder pickupListener(PickupListener listener) {
      this.pickupListener = listener;
      return this;
    }

    /** Connect timeout of handlers' HTTP, {@code ctx.http()} ({@link PgJobsSettings#HTTP_CONNECT_TIMEOUT}). */
    public Builder httpConnectTimeout(Duration timeout) {
      this.httpConnectTimeout = PgJobsSettings.HTTP_CONNECT_TIMEOUT.require(timeout);
      return this;
    }

    /**
     * Request timeout of handlers' HTTP ({@code ctx.http()}): from sending to the response's headers
     * ({@link PgJobsSettings#HTTP_REQUEST_TIMEOUT}).
     */
    public Builder httpRequestTimeout(Duration timeout) {
      this.httpRequestTimeout = PgJobsSettings.HTTP_REQUEST_TIMEOUT.require(timeout);
      return this;
    }

    /**
     * How often the worker heartbeats itself and the jobs it holds (default the least of a tenth of the
     * stale threshold, a quarter of the worker dead-after threshold, and 30 s: 5 s with the defaults;
     * {@link PgJobsSettings#HEARTBEAT_INTERVAL}).
     */
    public Builder heartbeatInterval(Duration heartbeatInterval) {
      this.heartbeatInterval = PgJobsSettings.HEARTBEAT_INTERVAL.require(heartbeatInterval);
      return this;
    }

    /** Whether this worker takes part in maintenance (rescue, pruning, dead worker removal; {@link PgJobsSettings#MAINTENANCE}). */
    public Builder maintenance(boolean maintenance) {
      this.maintenance = maintenance;
      return this;
    }

    /** How long finished jobs are kept, when this worker does maintenance ({@link PgJobsSettings#RETENTION}). */
    public Builder retention(Duration retention) {
      this.retention = PgJobsSettings.RETENTION.require(retention);
      return this;
    }

    /** Time to live of the maintenance lease ({@link PgJobsSettings#LEASE_TTL}): how fast a new leader takes over. */
    public Builder leaseTtl(Duration leaseTtl) {
      this.leaseTtl = PgJobsSettings.LEASE_TTL.require(leaseTtl);
      return this;
    }

    /** Source of retry jitter (default a new {@link Random}); tests pass a seeded one. */
    public Builder random(RandomGenerator random) {
      this.random = Objects.requireNonNull(random, "random");
      return this;
    }

    /** Registers every type-handler pair of {@code registrations}. */
    public Builder registerAll(Collection<? extends Registration<?>> registrations) {
      registrations.forEach(this::add);
      return this;
    }

    private <P> void add(Registration<P> registration) {
      register(registration.type(), registration.handler());
    }

    /**
     * Validates and builds.
     *
     * @throws IllegalArgumentException if no handler is registered, or a setting is invalid
     */
    public JobWorker build() {
      if (handlers.isEmpty()) {
        throw new IllegalArgumentException(
            "a worker needs at least one registered job type (register(type, handler))");
      }
      if (!listen && listenDataSource != null) {
        throw new IllegalArgumentException(
            "listen(false) and a listenDataSource contradict each other: drop one (polling only, or LISTEN on it)");
      }
      return new JobWorker(this, root != null ? sharedRoot() : ownRoot());
    }

    /** The front door {@code JobWorker.builder(dataSource)}: a root of its own from this builder's settings. */
    private PgJobs ownRoot() {
      return PgJobs.builder(dataSource)
          .schema(schema)
          .jsonMapper(mapper)
          .metrics(metrics)
          .tracing(tracing)
          .build();
    }

    /** The root this builder came from, refusing settings that would need a client of their own. */
    private PgJobs sharedRoot() {
      if (!Objects.equals(schema, root.schema())) {
        throw new IllegalArgumentException("schema '" + schema + "' differs from the schema '"
            + root.schema() + "' of the PgJobs this worker builder came from: set it there");
      }
      if (mapper != root.mapper()) {
        throw new IllegalArgumentException(
            "a worker built from PgJobs.workerBuilder() shares its client and codec:"
                + " set the JSON mapper on PgJobs.builder(...), not on the worker builder");
      }
      return root;
    }
  }

  /**
   * A job type with its handler, for registering many at once (for example handlers found with
   * {@link java.util.ServiceLoader}).
   *
   * @param type the job type
   * @param handler its handler
   */
  public record Registration<P>(JobType<P> type, JobHandler<? super P> handler) {}
}
