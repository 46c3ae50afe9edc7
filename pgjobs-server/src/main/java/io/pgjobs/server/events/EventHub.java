package io.pgjobs.server.events;

import io.javalin.http.sse.SseClient;
import io.pgjobs.events.JobEvent;
import io.pgjobs.events.JobEventBatch;
import io.pgjobs.events.JobEventListener;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.json.JsonMapper;

/**
 * Fans job events from one {@link JobEventListener} (one LISTEN connection per server) out to the
 * event stream subscribers, within {@link EventLimits}.
 *
 * <p>An idle subscription holds no queue and no thread: its queue exists while events wait for its
 * client, and a virtual thread writes them out and ends when the queue is empty, so a slow client never
 * holds up the listener or the others. A client that falls {@link EventLimits#queueCapacity()} events
 * behind is disconnected (it reconnects and gets a fresh snapshot).
 *
 * <p>Every subscriber first gets a {@code snapshot} event. After the listener reconnects (events may
 * have been lost while it was away), or when a statement changed more jobs than its notification lists
 * (at most 50, fewer with long names; the jobs left out are unknown), stream subscribers (by type or
 * queue) get a {@code resync} event followed by a fresh {@code snapshot}, while for subscribers of one
 * job the hub reads a fingerprint of every followed job in one query and resyncs only those whose job
 * changed since it last looked (it reads them in one query before their
 * snapshots, too).
 *
 * <p>A snapshot never comes before events it already shows: the subscriber drops every event from
 * when it asks for a snapshot until a mark it is waiting for comes back through the events channel
 * ({@link JobEventListener#sendMark}); those events were committed before the snapshot is read. One
 * mark serves every subscriber that asked while the previous one was being sent, so a burst of
 * subscriptions costs a few round trips, not one each. Events after the mark are sent even if the
 * snapshot happens to show them too. At most {@value #SNAPSHOT_READS} snapshots are read at once, so a
 * burst leaves the rest of the pool to the API. A comment line every ping interval detects closed
 * Server-Sent Events connections.
 */
public final class EventHub implements io.pgjobs.service.BackgroundService, AutoCloseable {
  /** How long a subscriber waits for its mark before its snapshot is read anyway. */
  static final Duration MARK_TIMEOUT = Duration.ofSeconds(2);
  /** Snapshots read at once: {@value}. */
  static final int SNAPSHOT_READS = 2;
  /** Job ids per fingerprint query: {@value}. */
  static final int FINGERPRINT_CHUNK = 1_000;

  private static final String TRUNCATED = "truncated";
  private static final String RECONNECTED = "reconnected";
  /** The fingerprint of a job that does not exist. */
  private static final String GONE = "gone";

  private static final Logger log = LoggerFactory.getLogger(EventHub.class);

  private final JobEventListener listener;
  private final JsonMapper json;
  private final Duration pingInterval;
  private final EventLimits limits;
  private final DataSource readSource;
  private final String fingerprintSql;
  private final Set<Subscription> subscriptions = ConcurrentHashMap.newKeySet();
  private boolean started;
  /** Subscriptions of one job, by job: an event reaches them with one lookup. */
  private final Map<UUID, Set<Subscription>> byJob = new ConcurrentHashMap<>();
  /** Subscriptions without a job id (by type and queue): every event is matched against each. */
  private final Set<Subscription> streams = ConcurrentHashMap.newKeySet();

  private final LinkedBlockingQueue<Subscription> markRequests = new LinkedBlockingQueue<>();
  private final Map<String, List<Subscription>> pendingMarks = new ConcurrentHashMap<>();
  private final String markPrefix = UUID.randomUUID() + ":";
  private final AtomicLong marksSent = new AtomicLong();
  private final AtomicInteger connects = new AtomicInteger();
  private final AtomicLong sequence = new AtomicLong();
  private final AtomicInteger fingerprintRequests = new AtomicInteger();
  /** Why the next fingerprint check runs ({@code reconnected} wins over {@code truncated}); null: truncated. */
  private final java.util.concurrent.atomic.AtomicReference<String> fingerprintReason =
      new java.util.concurrent.atomic.AtomicReference<>();

  private final AtomicLong fingerprintChecks = new AtomicLong();
  private final Semaphore snapshotReads = new Semaphore(SNAPSHOT_READS, true);
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
      r -> Thread.ofPlatform().daemon().name("pgjobs-sse-ping").unstarted(r));
  // Counts against the limits, all guarded by this lock (a subscribe is rare next to an event).
  private final Object accounting = new Object();
  private int connectionCount;
  private int subscriptionCount;
  private final Map<String, int[]> perToken = new HashMap<>();
  private Thread markSender;
  private volatile boolean closed;

  /** A hub with the default limits that re-reads every followed job after a truncated notification. */
  public EventHub(DataSource dataSource, String channel, JsonMapper json, Duration pingInterval) {
    this(dataSource, channel, json, pingInterval, EventLimits.DEFAULTS, null, null);
  }

  /**
   * @param listenSource where to LISTEN and send marks
   * @param channel the job events channel ({@code JobClient.eventsChannel()})
   * @param json writes event data
   * @param pingInterval how often idle Server-Sent Events connections get a comment line
   * @param limits connections, subscriptions and backlog allowed
   * @param readSource where to read job fingerprints (the jobs' database), or null to resync every
   *     follower of one job after a truncated notification
   * @param schema the jobs' schema ({@code JobClient.schema()}), with {@code readSource}
   */
  public EventHub(
      DataSource listenSource,
      String channel,
      JsonMapper json,
      Duration pingInterval,
      EventLimits limits,
      DataSource readSource,
      String schema) {
    this.listener = new JobEventListener(listenSource, channel);
    this.json = json;
    this.pingInterval = pingInterval;
    this.limits = java.util.Objects.requireNonNull(limits, "limits");
    this.readSource = readSource;
    this.fingerprintSql =
        readSource == null ? null : EventSql.forSchema(EventSql.FINGERPRINTS, schema);
  }

  /** Starts listening. */
  @Override
  public synchronized EventHub start() {
    if (started || closed) {
      return this;
    }
    started = true;
    listener.subscribe(this::onBatch);
    listener.onReconnect(this::onConnected);
    listener.onMark(this::onMark);
    listener.start();
    markSender = Thread.ofVirtual().name("pgjobs-events-marks").start(this::sendMarks);
    long ms = pingInterval.toMillis();
    timer.scheduleAtFixedRate(
        () -> subscriptions.forEach(s -> {
          if (s.client.wantsPings()) {
            s.offer(Outgoing.PING);
          }
        }),
        ms,
        ms,
        TimeUnit.MILLISECONDS);
    return this;
  }

  /** True while the LISTEN connection is up. */
  public boolean isListening() {
    return listener.isListening();
  }

  /** True once {@link #close()} was called (the server is stopping). */
  public boolean isClosed() {
    return closed;
  }

  /** The limits this hub enforces. */
  public EventLimits limits() {
    return limits;
  }

  /** Subscribers connected now. */
  public int subscribers() {
    return subscriptions.size();
  }

  /** Events waiting for their clients now, over all subscribers. */
  public int queued() {
    int n = 0;
    for (Subscription s : subscriptions) {
      n += s.queued();
    }
    return n;
  }

  /** Marks sent since start (one serves every subscriber that asked while the previous was out). */
  public long marksSent() {
    return marksSent.get();
  }

  /** Live event connections open now (counted by {@link #connect}). */
  public int connections() {
    synchronized (accounting) {
      return connectionCount;
    }
  }

  /**
   * Opens a connection (an {@code /events} stream or a {@code /ws} socket) within the limits.
   *
   * @param token the bearer token it authenticated with, or null (none yet, or the server has none)
   * @throws Refused when the server or the token has its limit of connections
   */
  public Peer connect(String token) {
    synchronized (accounting) {
      if (closed) {
        throw new Refused("the server is stopping; reconnect later");
      }
      if (connectionCount >= limits.maxConnections()) {
        throw new Refused("live event connections: this server's limit of "
            + limits.maxConnections() + " is reached; try again later");
      }
      Peer peer = new Peer();
      if (token != null) {
        peer.authenticateLocked(token);
      }
      connectionCount++;
      return peer;
    }
  }

  /**
   * Opens a connection with its one subscription for an {@code /events} stream, so a limit refuses it
   * before the response starts; {@link #subscribe(SseClient, Peer, EventFilter, Supplier)} then uses it.
   *
   * @param token the bearer token, or null
   * @throws Refused when a connection or subscription limit is reached
   */
  public Peer openStream(String token) {
    synchronized (accounting) {
      Peer peer = connect(token);
      try {
        peer.reserve();
      } catch (Refused e) {
        peer.close();
        throw e;
      }
      peer.reserved = true;
      return peer;
    }
  }

  /**
   * Streams events matching {@code filter} to {@code client}, starting with {@code snapshot}'s value, as
   * the only subscription of {@code peer} (from {@link #openStream}), which closes when the stream ends.
   * The caller must have called {@link SseClient#keepAlive()}.
   */
  public void subscribe(
      SseClient client, Peer peer, EventFilter filter, Supplier<Object> snapshot) {
    Runnable stop = subscribe(
        peer,
        true,
        new EventSink() {
          @Override
          public void send(String event, Object data, String id) {
            if (id == null) {
              client.sendEvent(event, json.writeValueAsString(data));
            } else {
              client.sendEvent(event, json.writeValueAsString(data), id);
            }
          }

          @Override
          public void ping() {
            client.sendComment("ping");
          }

          @Override
          public boolean isClosed() {
            return client.terminated();
          }

          @Override
          public void close() {
            client.close();
          }
        },
        filter,
        snapshot);
    client.onClose(stop);
  }

  private Runnable subscribe(
      Peer peer,
      boolean closesPeer,
      EventSink sink,
      EventFilter filter,
      Supplier<Object> snapshot) {
    peer.reserveUnlessDone();
    Subscription s = new Subscription(peer, closesPeer, sink, filter, snapshot);
    if (closed) {
      s.stop();
      return () -> {};
    }
    subscriptions.add(s);
    if (filter.jobId() != null) {
      byJob.computeIfAbsent(filter.jobId(), id -> ConcurrentHashMap.newKeySet()).add(s);
    } else {
      streams.add(s);
    }
    requestSnapshot(s);
    return s::stop;
  }

  private void requestSnapshot(Subscription s) {
    if (listener.isListening()) {
      markRequests.add(s);
    } else {
      s.snapshotNow();
    }
  }

  /**
   * Sends one mark for every subscriber that asked since the last one went out: its subscribers read
   * their snapshots once it comes back, or after {@link #MARK_TIMEOUT}.
   */
  private void sendMarks() {
    List<Subscription> batch = new ArrayList<>();
    while (!closed) {
      try {
        batch.add(markRequests.take());
      } catch (InterruptedException e) {
        return;
      }
      markRequests.drainTo(batch);
      String mark = markPrefix + (marksSent.get() + 1);
      List<Subscription> waiting = new ArrayList<>(batch.size());
      for (Subscription s : batch) {
        if (s.awaitMark(mark)) {
          waiting.add(s);
        }
      }
      batch.clear();
      if (waiting.isEmpty()) {
        continue;
      }
      pendingMarks.put(mark, waiting);
      try {
        listener.sendMark(mark);
        marksSent.incrementAndGet();
        timer.schedule(
            () -> {
              if (pendingMarks.containsKey(mark)) {
                log.debug(
                    "mark {} not back within {}; {} subscribers read their snapshots anyway",
                    mark,
                    MARK_TIMEOUT,
                    waiting.size());
                release(mark);
              }
            },
            MARK_TIMEOUT.toMillis(),
            TimeUnit.MILLISECONDS);
      } catch (SQLException | RuntimeException e) {
        log.warn(
            "could not send a mark ({}); {} subscribers read their snapshots anyway",
            e.toString(),
            waiting.size());
        release(mark);
      }
    }
  }

  private void release(String mark) {
    List<Subscription> waiting = pendingMarks.remove(mark);
    if (waiting == null) {
      return;
    }
    List<Subscription> followers = fingerprintSql == null
        ? List.of()
        : waiting.stream().filter(s -> s.filter.jobId() != null).toList();
    if (!followers.isEmpty()) {
      // Off the listener's thread: the followers' fingerprints are read in one query, and each
      // reads its snapshot after it, so a later truncated notification finds out whether their jobs
      // changed.
      CompletableFuture<Void> read = CompletableFuture.runAsync(
          () -> {
            try {
              Map<UUID, String> now = fingerprints(
                  followers.stream().map(s -> s.filter.jobId()).distinct().toList());
              followers.forEach(s -> s.fingerprint = now.getOrDefault(s.filter.jobId(), GONE));
            } catch (SQLException | RuntimeException e) {
              log.debug(
                  "could not read the fingerprints of {} followed jobs: {}",
                  followers.size(),
                  e.toString());
            }
          },
          r -> Thread.ofVirtual().name("pgjobs-events-fingerprints").start(r));
      followers.forEach(s -> s.fingerprintsRead = read);
    }
    // At once, on the listener's thread: the events after the mark queue up behind the snapshot.
    waiting.forEach(s -> s.markBack(mark));
  }

  private void onMark(String mark) {
    if (mark.startsWith(markPrefix)) {
      release(mark);
    }
  }

  private void onBatch(JobEventBatch batch) {
    for (JobEvent event : batch.events()) {
      long id = sequence.incrementAndGet();
      Outgoing out = null;
      Set<Subscription> followers = byJob.get(event.jobId());
      if (followers != null) {
        for (Subscription s : followers) {
          if (s.filter.matches(event)) {
            out = out != null ? out : Outgoing.of(event, id);
            s.offer(out);
          }
        }
      }
      for (Subscription s : streams) {
        if (s.filter.matches(event)) {
          out = out != null ? out : Outgoing.of(event, id);
          s.offer(out);
        }
      }
    }
    if (batch.truncated()) {
      // The jobs left out are not named anywhere: any stream may want them; a follower of one job
      // needs a resync only if its job changed, which one query over all followed jobs finds out.
      streams.forEach(s -> s.offer(Outgoing.resync(TRUNCATED)));
      resyncChangedFollowers(TRUNCATED);
    }
  }

  /** Resyncs the followers of one job whose job changed (all of them without a read source). */
  private void resyncChangedFollowers(String reason) {
    if (fingerprintSql == null) {
      byJob.values().forEach(set -> set.forEach(s -> s.offer(Outgoing.resync(reason))));
      return;
    }
    fingerprintReason.accumulateAndGet(
        reason, (old, given) -> RECONNECTED.equals(old) ? old : given);
    if (fingerprintRequests.getAndIncrement() == 0) {
      Thread.ofVirtual().name("pgjobs-events-fingerprints").start(this::checkFingerprints);
    }
  }

  /** Runs until no truncated notification arrived since the last check began. */
  private void checkFingerprints() {
    int handled;
    do {
      handled = fingerprintRequests.get();
      String given = fingerprintReason.getAndSet(null);
      String reason = given == null ? TRUNCATED : given;
      try {
        resyncChangedJobs(reason);
      } catch (SQLException | RuntimeException e) {
        log.warn(
            "could not read the followed jobs ({}); resyncing all {} of them",
            e.toString(),
            byJob.size());
        byJob.values().forEach(set -> set.forEach(s -> s.offer(Outgoing.resync(reason))));
      }
      fingerprintChecks.incrementAndGet();
    } while (fingerprintRequests.addAndGet(-handled) > 0);
  }

  private void resyncChangedJobs(String reason) throws SQLException {
    List<UUID> ids = new ArrayList<>(byJob.keySet());
    Map<UUID, String> fingerprints = fingerprints(ids);
    for (UUID id : ids) {
      String now = fingerprints.getOrDefault(id, GONE);
      for (Subscription s : byJob.getOrDefault(id, Set.of())) {
        // What the subscriber shows is at least as new as its fingerprint, which was read before
        // its latest snapshot. Unchanged, there is nothing to re-read.
        if (!now.equals(s.fingerprint)) {
          s.fingerprint = now;
          s.offer(Outgoing.resync(reason));
        }
      }
    }
  }

  /** The fingerprints of {@code ids} (see {@link EventSql#FINGERPRINTS}), {@value #FINGERPRINT_CHUNK} a query. */
  private Map<UUID, String> fingerprints(List<UUID> ids) throws SQLException {
    Map<UUID, String> fingerprints = new HashMap<>();
    for (int from = 0; from < ids.size(); from += FINGERPRINT_CHUNK) {
      List<UUID> chunk = ids.subList(from, Math.min(ids.size(), from + FINGERPRINT_CHUNK));
      try (Connection c = readSource.getConnection();
          PreparedStatement ps = c.prepareStatement(fingerprintSql)) {
        Array array = c.createArrayOf("uuid", chunk.toArray());
        ps.setArray(1, array);
        ps.setArray(2, array);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            fingerprints.merge(rs.getObject(1, UUID.class), rs.getString(2), (a, b) -> a + "/" + b);
          }
        }
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
    }
    return fingerprints;
  }

  private void onConnected() {
    if (connects.incrementAndGet() > 1) {
      // Events sent while the listener was away are lost: streams resync, and so do the followers
      // whose job changed (one query over all followed jobs finds them).
      log.info(
          "job events listener reconnected; sending resync to {} streams and checking {} followed jobs",
          streams.size(),
          byJob.size());
      streams.forEach(s -> s.offer(Outgoing.resync(RECONNECTED)));
      resyncChangedFollowers(RECONNECTED);
    }
  }

  /** Fingerprint checks done since start (after truncated notifications and reconnects). */
  long fingerprintChecks() {
    return fingerprintChecks.get();
  }

  /** Ends every stream and asks the listener and the mark sender to stop. */
  @Override
  public void stop() {
    synchronized (accounting) {
      closed = true;
    }
    timer.shutdownNow();
    if (markSender != null) {
      markSender.interrupt();
    }
    subscriptions.forEach(Subscription::stop);
    listener.stop();
  }

  /** Waits for the listener's thread to end (its LISTEN connection returned). */
  @Override
  public boolean awaitStopped(Duration timeout) {
    return listener.awaitStopped(timeout);
  }

  /** Stops listening and ends every stream: {@link #stop()}, then waits up to 5 s for the listener. */
  @Override
  public void close() {
    stopAndAwait(Duration.ofSeconds(5));
  }

  /** A limit refused a connection or a subscription; {@link #getMessage()} is the reason, for the client. */
  public static final class Refused extends RuntimeException {
    Refused(String reason) {
      super(reason, null, false, false);
    }
  }

  /**
   * One open connection, counted against the limits until {@link #close()}: its token (once known)
   * and its subscriptions.
   */
  public final class Peer implements AutoCloseable {
    private String token;
    private int subscriptions;
    private boolean closed;
    /** True while the subscription {@link #openStream} reserved is not used yet. */
    private boolean reserved;

    private Peer() {}

    /**
     * Counts this connection against {@code token} from now on (a {@code /ws} client that authenticates
     * by message); a connection already counted against a token keeps it.
     *
     * @throws Refused when the token has its limit of connections
     */
    public void authenticate(String token) {
      synchronized (accounting) {
        if (this.token == null && !closed) {
          authenticateLocked(token);
        }
      }
    }

    private void authenticateLocked(String token) {
      int[] use = perToken.computeIfAbsent(token, t -> new int[2]);
      if (use[0] >= limits.maxConnectionsPerToken()) {
        if (use[0] == 0 && use[1] == 0) {
          perToken.remove(token);
        }
        throw new Refused("live event connections: this token's limit of "
            + limits.maxConnectionsPerToken() + " is reached; close one first");
      }
      use[0]++;
      this.token = token;
    }

    /**
     * Sends events matching {@code filter} to {@code sink}, starting with {@code snapshot}'s value, until
     * the returned action is run, the sink closes, the subscriber falls behind or the hub closes; the
     * sink is closed at the end in every case.
     *
     * @return stops the subscription (idempotent)
     * @throws Refused when this connection, its token or the server has its limit of subscriptions
     */
    public Runnable subscribe(EventSink sink, EventFilter filter, Supplier<Object> snapshot) {
      return EventHub.this.subscribe(this, false, sink, filter, snapshot);
    }

    /** Subscriptions of this connection now. */
    public int subscriptions() {
      synchronized (accounting) {
        return subscriptions;
      }
    }

    private void reserveUnlessDone() {
      synchronized (accounting) {
        if (reserved) {
          reserved = false;
        } else {
          reserve();
        }
      }
    }

    private void reserve() {
      synchronized (accounting) {
        if (subscriptions >= limits.maxSubscriptionsPerConnection()) {
          throw new Refused("subscriptions: this connection's limit of "
              + limits.maxSubscriptionsPerConnection() + " is reached; unsubscribe some first");
        }
        int[] use = token == null ? null : perToken.get(token);
        if (use != null && use[1] >= limits.maxSubscriptionsPerToken()) {
          throw new Refused("subscriptions: this token's limit of "
              + limits.maxSubscriptionsPerToken() + " is reached; unsubscribe some first");
        }
        if (subscriptionCount >= limits.maxSubscriptions()) {
          throw new Refused("subscriptions: this server's limit of " + limits.maxSubscriptions()
              + " is reached; try again later");
        }
        subscriptions++;
        subscriptionCount++;
        if (use != null) {
          use[1]++;
        }
      }
    }

    private void unreserve() {
      synchronized (accounting) {
        subscriptions--;
        subscriptionCount--;
        int[] use = token == null ? null : perToken.get(token);
        if (use != null) {
          use[1]--;
          forgetIfUnused(use);
        }
      }
    }

    /** Stops counting this connection (its subscriptions count until they end); idempotent. */
    @Override
    public void close() {
      synchronized (accounting) {
        if (closed) {
          return;
        }
        closed = true;
        connectionCount--;
        int[] use = token == null ? null : perToken.get(token);
        if (use != null) {
          use[0]--;
          forgetIfUnused(use);
        }
      }
    }

    private void forgetIfUnused(int[] use) {
      if (use[0] <= 0 && use[1] <= 0) {
        perToken.remove(token);
      }
    }
  }

  /**
   * The data of a {@code state} or {@code progress} event.
   *
   * @param progress percent, for progress events
   * @param message progress message, for progress events
   */
  public record EventView(
      UUID jobId,
      String state,
      String type,
      String queue,
      int attempts,
      Integer progress,
      String message) {
    static EventView of(JobEvent e) {
      return new EventView(
          e.jobId(),
          e.state().value(),
          e.type(),
          e.queue(),
          e.attempts(),
          e.progress(),
          e.message());
    }
  }

  /** The data of a {@code resync} event. */
  public record ResyncView(String reason) {}

  /** One item of a subscriber's queue; one instance is shared by every subscriber an event goes to. */
  private record Outgoing(String event, Object data, long id, String resyncReason) {
    static final Outgoing PING = new Outgoing(null, null, 0, null);
    static final Outgoing SNAPSHOT = new Outgoing("snapshot", null, 0, null);

    static Outgoing of(JobEvent event, long id) {
      return new Outgoing(event.kind(), EventView.of(event), id, null);
    }

    static Outgoing resync(String reason) {
      return new Outgoing("resync", null, 0, reason);
    }

    boolean isResync() {
      return resyncReason != null;
    }
  }

  private final class Subscription {
    private static final AtomicLong IDS = new AtomicLong();

    final long id = IDS.incrementAndGet();
    final Peer peer;
    final boolean closesPeer;
    final EventSink client;
    final EventFilter filter;
    final Supplier<Object> snapshot;
    /** For a follower of one job: the job's fingerprint when the hub last compared it, or null. */
    volatile String fingerprint;
    /** The read of {@link #fingerprint} its next snapshot must wait for, or null. */
    volatile CompletableFuture<Void> fingerprintsRead;
    // Guarded by this. The queue exists only while something waits in it.
    private ArrayDeque<Outgoing> queue;
    private boolean draining;
    private boolean awaitingSnapshot = true;
    private String awaitedMark;
    private boolean resyncQueued;
    private boolean stopped;
    private final java.util.concurrent.atomic.AtomicBoolean released =
        new java.util.concurrent.atomic.AtomicBoolean();

    Subscription(
        Peer peer,
        boolean closesPeer,
        EventSink client,
        EventFilter filter,
        Supplier<Object> snapshot) {
      this.peer = peer;
      this.closesPeer = closesPeer;
      this.client = client;
      this.filter = filter;
      this.snapshot = snapshot;
    }

    synchronized int queued() {
      return queue == null ? 0 : queue.size();
    }

    /** Queues {@code out} unless the snapshot to come supersedes it. */
    void offer(Outgoing out) {
      boolean start;
      boolean fellBehind;
      synchronized (this) {
        if (stopped || awaitingSnapshot) {
          return; // the snapshot to come shows it
        }
        if (out.isResync()) {
          if (resyncQueued) {
            return; // one resync is as good as two
          }
          resyncQueued = true;
        }
        if (out == Outgoing.PING && queue != null) {
          return; // busy: the writes under way find a closed connection
        }
        start = enqueue(out);
        fellBehind = stopped;
      }
      if (start) {
        Thread.ofVirtual().name("pgjobs-events-" + id).start(this::drain);
      }
      if (fellBehind) {
        // Its writer is most likely stuck on a client that stopped reading: closing the connection
        // now fails that write instead of waiting for a timeout, and frees what the connection
        // holds.
        Thread.ofVirtual().name("pgjobs-events-close-" + id).start(this::closeClient);
      }
    }

    /** Adds to the queue; true when a writer thread must start. Holds the lock. */
    private boolean enqueue(Outgoing out) {
      if (queue == null) {
        queue = new ArrayDeque<>();
      }
      if (queue.size() >= limits.queueCapacity()) {
        log.warn(
            "event stream subscriber {} fell {} events behind; disconnecting it",
            id,
            limits.queueCapacity());
        return stopLocked();
      }
      queue.add(out);
      return startDrain();
    }

    private boolean startDrain() {
      if (draining) {
        return false;
      }
      draining = true;
      return true;
    }

    /** Takes {@code mark} as the one to wait for; false when no longer waiting for any. */
    synchronized boolean awaitMark(String mark) {
      if (stopped || !awaitingSnapshot) {
        return false;
      }
      awaitedMark = mark;
      return true;
    }

    /** {@code mark} came back (or was given up on): queues the snapshot if it was the awaited one. */
    void markBack(String mark) {
      boolean start;
      synchronized (this) {
        if (!mark.equals(awaitedMark)) {
          return;
        }
        start = snapshotLocked();
      }
      if (start) {
        Thread.ofVirtual().name("pgjobs-events-" + id).start(this::drain);
      }
    }

    /** Queues the snapshot without a mark (the listener is down). */
    void snapshotNow() {
      boolean start;
      synchronized (this) {
        start = snapshotLocked();
      }
      if (start) {
        Thread.ofVirtual().name("pgjobs-events-" + id).start(this::drain);
      }
    }

    private boolean snapshotLocked() {
      if (stopped || !awaitingSnapshot) {
        return false;
      }
      awaitingSnapshot = false;
      awaitedMark = null;
      return enqueue(Outgoing.SNAPSHOT);
    }

    void stop() {
      boolean start;
      synchronized (this) {
        start = stopLocked();
      }
      if (start) {
        Thread.ofVirtual().name("pgjobs-events-" + id).start(this::drain);
      }
    }

    /** Marks the subscription stopped and drops its queue; true when a writer must start to end it. */
    private boolean stopLocked() {
      if (stopped) {
        return false;
      }
      stopped = true;
      queue = null;
      release();
      return startDrain();
    }

    /** Gives the subscription back to the limits at once (a client may subscribe again right away). */
    private void release() {
      if (released.compareAndSet(false, true)) {
        peer.unreserve();
      }
    }

    /** The writer: sends what is queued, one at a time, and ends when the queue is empty. */
    private void drain() {
      try {
        while (true) {
          Outgoing out;
          synchronized (this) {
            if (!stopped && client.isClosed()) {
              stopped = true;
              queue = null;
            }
            if (stopped) {
              break;
            }
            out = queue == null ? null : queue.poll();
            if (out == null) {
              queue = null; // an idle subscription holds no queue
              draining = false;
              return;
            }
            if (queue.isEmpty()) {
              queue = null;
            }
            if (out.isResync()) {
              resyncQueued = false;
            }
          }
          write(out);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) {
        log.warn("event stream subscriber {} failed: {}", id, e.toString());
      }
      finish();
    }

    private void write(Outgoing out) throws InterruptedException {
      if (out == Outgoing.PING) {
        client.ping();
      } else if (out == Outgoing.SNAPSHOT) {
        CompletableFuture<Void> read = fingerprintsRead;
        if (read != null) {
          fingerprintsRead = null;
          try {
            read.get(MARK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
          } catch (java.util.concurrent.ExecutionException
              | java.util.concurrent.TimeoutException e) {
            fingerprint = null; // unknown: the next truncated notification resyncs it
          }
        }
        Object value;
        snapshotReads.acquire();
        try {
          value = snapshot.get();
        } finally {
          snapshotReads.release();
        }
        client.send("snapshot", value, null);
      } else if (out.isResync()) {
        client.send("resync", new ResyncView(out.resyncReason()), null);
        synchronized (this) {
          if (stopped) {
            return;
          }
          // What is queued was committed before the mark to come: the snapshot shows it.
          awaitingSnapshot = true;
          queue = null;
          resyncQueued = false;
        }
        requestSnapshot(this);
      } else {
        client.send(out.event(), out.data(), Long.toString(out.id()));
      }
    }

    private void finish() {
      synchronized (this) {
        stopped = true;
        queue = null;
        draining = false;
      }
      if (subscriptions.remove(this)) {
        if (filter.jobId() != null) {
          byJob.computeIfPresent(filter.jobId(), (jobId, set) -> {
            set.remove(this);
            return set.isEmpty() ? null : set;
          });
        } else {
          streams.remove(this);
        }
      }
      release();
      if (closesPeer) {
        peer.close();
      }
      closeClient();
    }

    private void closeClient() {
      try {
        client.close();
      } catch (RuntimeException e) {
        log.debug("closing event stream subscriber {} failed: {}", id, e.toString());
      }
    }
  }
}
