package io.pgjobs.server.events;

import io.javalin.http.sse.SseClient;
import io.pgjobs.events.JobEvent;
import io.pgjobs.events.JobEventBatch;
import io.pgjobs.events.JobEventListener;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.json.JsonMapper;

/**
 * Fans job events from one {@link JobEventListener} (one LISTEN connection per server) out to the
 * event stream subscribers. Each subscriber has a bounded queue and a virtual thread that writes to
 * its connection, so a slow client never holds up the listener or the others; a client that falls
 * {@value #QUEUE_CAPACITY} events behind is disconnected (it reconnects and gets a fresh snapshot).
 *
 * <p>Every subscriber first gets a {@code snapshot} event. After the listener reconnects (events may
 * have been lost while it was away), or when a statement changed more jobs than its notification
 * lists, every subscriber gets a {@code resync} event followed by a fresh {@code snapshot}. A
 * notification lists at most 50 jobs, and fewer when their names are long (it must stay under
 * PostgreSQL's 8,000-byte payload limit); the jobs left out are unknown, so any subscriber may follow
 * one of them: a subscriber of one job learns its state from the snapshot, which re-reads the job.
 *
 * <p>A snapshot never comes before events it already shows: before reading it the subscriber sends a
 * mark through the events channel ({@link JobEventListener#sendMark}) and drops what arrives before the
 * mark comes back, since those events were committed before the snapshot was read. Events after the
 * mark are sent even if the snapshot happens to show them too.
 * A comment line every ping interval detects closed connections.
 */
public final class EventHub implements AutoCloseable {
  /** Events a subscriber may fall behind before it is disconnected: {@value}. */
  static final int QUEUE_CAPACITY = 10_000;
  /** How long a subscriber waits for its mark before sending the snapshot anyway. */
  static final Duration MARK_TIMEOUT = Duration.ofSeconds(2);

  private static final Logger log = LoggerFactory.getLogger(EventHub.class);

  private final JobEventListener listener;
  private final JsonMapper json;
  private final Duration pingInterval;
  private final Set<Subscription> subscriptions = ConcurrentHashMap.newKeySet();
  private final Map<String, Subscription> pendingMarks = new ConcurrentHashMap<>();
  private final String markPrefix = UUID.randomUUID() + ":";
  private final AtomicInteger connects = new AtomicInteger();
  private final AtomicLong sequence = new AtomicLong();
  private final ScheduledExecutorService pinger =
      Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("pgjobs-sse-ping").unstarted(r));
  private volatile boolean closed;

  /**
   * @param dataSource where to LISTEN
   * @param channel the job events channel ({@code JobClient.eventsChannel()})
   * @param json writes event data
   * @param pingInterval how often idle connections get a comment line
   */
  public EventHub(DataSource dataSource, String channel, JsonMapper json, Duration pingInterval) {
    this.listener = new JobEventListener(dataSource, channel);
    this.json = json;
    this.pingInterval = pingInterval;
  }

  /** Starts listening. */
  public void start() {
    listener.subscribe(this::onBatch);
    listener.onReconnect(this::onConnected);
    listener.onMark(this::onMark);
    listener.start();
    long ms = pingInterval.toMillis();
    pinger.scheduleAtFixedRate(() -> subscriptions.forEach(s -> s.offer(Outgoing.PING)), ms, ms, TimeUnit.MILLISECONDS);
  }

  /** True while the LISTEN connection is up. */
  public boolean isListening() {
    return listener.isListening();
  }

  /** True once {@link #close()} was called (the server is stopping). */
  public boolean isClosed() {
    return closed;
  }

  /** Subscribers connected now. */
  public int subscribers() {
    return subscriptions.size();
  }

  /**
   * Streams events matching {@code filter} to {@code client}, starting with {@code snapshot}'s value.
   * The caller must have called {@link SseClient#keepAlive()}.
   */
  public void subscribe(SseClient client, EventFilter filter, Supplier<Object> snapshot) {
    Runnable stop = subscribe(new EventSink() {
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
    }, filter, snapshot);
    client.onClose(stop);
  }

  /**
   * Sends events matching {@code filter} to {@code sink}, starting with {@code snapshot}'s value, until
   * the returned action is run, the sink closes, the subscriber falls behind or the hub closes; the
   * sink is closed at the end in every case.
   *
   * @return stops the subscription (idempotent)
   */
  public Runnable subscribe(EventSink sink, EventFilter filter, Supplier<Object> snapshot) {
    Subscription s = new Subscription(sink, filter, snapshot);
    if (closed) {
      sink.close();
      return () -> {};
    }
    subscriptions.add(s);
    Thread.ofVirtual().name("pgjobs-events-" + s.id).start(s::run);
    return s::stop;
  }

  private void onBatch(JobEventBatch batch) {
    for (JobEvent event : batch.events()) {
      long id = sequence.incrementAndGet();
      for (Subscription s : subscriptions) {
        if (s.filter.matches(event)) {
          s.offer(new Outgoing(event.kind(), EventView.of(event), id, null));
        }
      }
    }
    if (batch.truncated()) {
      // The jobs left out are not named anywhere: every subscriber re-reads what it follows.
      subscriptions.forEach(s -> s.offer(Outgoing.resync("truncated")));
    }
  }

  private void onMark(String mark) {
    Subscription s = pendingMarks.get(mark);
    if (s != null) {
      s.offer(Outgoing.mark(mark));
    }
  }

  private void onConnected() {
    if (connects.incrementAndGet() > 1) {
      log.info("job events listener reconnected; sending resync to {} subscribers", subscriptions.size());
      subscriptions.forEach(s -> s.offer(Outgoing.resync("reconnected")));
    }
  }

  /** Stops listening and ends every stream. */
  @Override
  public void close() {
    closed = true;
    pinger.shutdownNow();
    subscriptions.forEach(Subscription::stop);
    listener.close();
  }

  /**
   * The data of a {@code state} or {@code progress} event.
   *
   * @param progress percent, for progress events
   * @param message progress message, for progress events
   */
  public record EventView(
      UUID jobId, String state, String type, String queue, int attempts, Integer progress, String message) {
    static EventView of(JobEvent e) {
      return new EventView(e.jobId(), e.state().value(), e.type(), e.queue(), e.attempts(), e.progress(), e.message());
    }
  }

  /** The data of a {@code resync} event. */
  public record ResyncView(String reason) {}

  private record Outgoing(String event, Object data, long id, String resyncReason) {
    static final Outgoing PING = new Outgoing(null, null, 0, null);
    static final Outgoing STOP = new Outgoing(null, null, -1, null);

    static Outgoing resync(String reason) {
      return new Outgoing("resync", null, 0, reason);
    }

    static Outgoing mark(String mark) {
      return new Outgoing("mark", mark, 0, null);
    }

    boolean isMark(String mark) {
      return "mark".equals(event) && mark.equals(data);
    }
  }

  private final class Subscription {
    private static final AtomicLong IDS = new AtomicLong();

    final long id = IDS.incrementAndGet();
    final EventSink client;
    final EventFilter filter;
    final Supplier<Object> snapshot;
    final BlockingQueue<Outgoing> queue = new ArrayBlockingQueue<>(QUEUE_CAPACITY + 1);
    final AtomicBoolean stopped = new AtomicBoolean();
    long marks;

    Subscription(EventSink client, EventFilter filter, Supplier<Object> snapshot) {
      this.client = client;
      this.filter = filter;
      this.snapshot = snapshot;
    }

    void offer(Outgoing out) {
      if (stopped.get()) {
        return;
      }
      if (queue.remainingCapacity() <= 1 || !queue.offer(out)) {
        log.warn("event stream subscriber {} fell {} events behind; disconnecting it", id, QUEUE_CAPACITY);
        stop();
      }
    }

    void stop() {
      if (stopped.compareAndSet(false, true)) {
        queue.clear();
        queue.offer(Outgoing.STOP);
      }
    }

    void run() {
      try {
        if (!sendSnapshot()) {
          return;
        }
        while (!client.isClosed()) {
          Outgoing out = queue.take();
          if (out == Outgoing.STOP) {
            break;
          } else if (out == Outgoing.PING) {
            client.ping();
          } else if ("mark".equals(out.event())) {
            continue; // a mark that came back after its snapshot went out anyway
          } else if (out.resyncReason() != null) {
            client.send("resync", new ResyncView(out.resyncReason()), null);
            if (!sendSnapshot()) {
              break;
            }
          } else {
            client.send(out.event(), out.data(), Long.toString(out.id()));
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) {
        log.warn("event stream subscriber {} failed: {}", id, e.toString());
      } finally {
        stopped.set(true);
        subscriptions.remove(this);
        client.close();
      }
    }

    /** Sends a snapshot after its mark came back; false when the subscription was stopped meanwhile. */
    private boolean sendSnapshot() throws InterruptedException {
      if (!awaitMark()) {
        return false;
      }
      client.send("snapshot", snapshot.get(), null);
      return true;
    }

    /**
     * Sends a mark and drops what is queued until it comes back: those events were committed before
     * the snapshot about to be read, pings and resyncs are superseded by it. Without a listening
     * connection, or when the mark is late, the snapshot goes out anyway (and a client may see an
     * event it already knows from the snapshot).
     */
    private boolean awaitMark() throws InterruptedException {
      if (!listener.isListening()) {
        return true;
      }
      String mark = markPrefix + id + ":" + (++marks);
      pendingMarks.put(mark, this);
      try {
        listener.sendMark(mark);
        long deadline = System.nanoTime() + MARK_TIMEOUT.toNanos();
        while (true) {
          Outgoing out = queue.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
          if (out == null) {
            log.debug("event stream subscriber {}: mark not back within {}; sending the snapshot anyway", id, MARK_TIMEOUT);
            return true;
          } else if (out == Outgoing.STOP) {
            return false;
          } else if (out.isMark(mark)) {
            return true;
          }
        }
      } catch (SQLException e) {
        log.warn("event stream subscriber {}: could not send a mark ({}); sending the snapshot anyway", id, e.toString());
        return true;
      } finally {
        pendingMarks.remove(mark);
      }
    }
  }
}
