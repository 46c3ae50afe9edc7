package io.pgjobs.events;

import io.pgjobs.JobState;
import io.pgjobs.notify.JobNotificationListener;
import io.pgjobs.service.BackgroundService;
import io.pgjobs.store.AutoCommitDataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Delivers job events to subscribers, from one LISTEN connection. After a (re)connect it tells
 * subscribers through {@code onReconnect}: events sent while it was away are lost, so a live view should
 * re-read the current state then.
 *
 * <p>A batch may be partial: a notification must stay under PostgreSQL's 8,000-byte payload limit, so
 * it lists at most 50 jobs, and fewer when their type and queue names are long. Its
 * {@link JobEventBatch#total()} is always the number of jobs the statement changed; when
 * {@link JobEventBatch#truncated()} is true, a subscriber that follows particular jobs must re-read
 * them, since the ones it follows may be among those left out.
 *
 * <pre>{@code
 * JobEventListener events = new JobEventListener(dataSource, client.eventsChannel());
 * events.subscribe(batch -> batch.events().forEach(e -> System.out.println(e.jobId() + " " + e.state())));
 * events.start();
 * }</pre>
 */
public final class JobEventListener implements BackgroundService, AutoCloseable {
  /** PostgreSQL refuses a notification payload of this many bytes or more: {@value}. */
  public static final int MAX_PAYLOAD_BYTES = 8_000;

  private static final Logger log = LoggerFactory.getLogger(JobEventListener.class);
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private final DataSource dataSource;
  private final String channel;
  private final JobNotificationListener listener;
  private final List<Consumer<JobEventBatch>> subscribers = new CopyOnWriteArrayList<>();
  private final List<Runnable> reconnectSubscribers = new CopyOnWriteArrayList<>();
  private final List<Consumer<String>> markSubscribers = new CopyOnWriteArrayList<>();

  /** Listens on {@code channel} (see {@code JobClient.eventsChannel()}). */
  public JobEventListener(DataSource dataSource, String channel) {
    this.dataSource = AutoCommitDataSource.of(dataSource);
    this.channel = channel;
    this.listener =
        new JobNotificationListener(dataSource, Map.of(channel, this::dispatch), this::reconnected);
  }

  /**
   * Sends {@code mark} through the events channel in its own committed transaction. PostgreSQL
   * delivers notifications in commit order, so when the mark comes back to the {@link #onMark}
   * callbacks, every event committed before this method returned has already gone to the subscribers.
   * A live view uses it to start cleanly: send a mark, read the current state, then drop the events
   * that arrived before the mark (the state read already shows them).
   *
   * @param mark a short token; its notification ({@code {"mark":"…"}}) must stay under PostgreSQL's
   *     payload limit of {@value #MAX_PAYLOAD_BYTES} bytes
   * @throws IllegalArgumentException when the mark is too long to be sent
   * @throws SQLException when the notification could not be sent
   */
  public void sendMark(String mark) throws SQLException {
    String payload = JSON.createObjectNode().put("mark", mark).toString();
    int bytes = payload.getBytes(StandardCharsets.UTF_8).length;
    if (bytes >= MAX_PAYLOAD_BYTES) {
      // Refused here with a clear message rather than by the database ("payload string too long").
      throw new IllegalArgumentException("mark too long: its notification would be " + bytes
          + " bytes; PostgreSQL accepts fewer than " + MAX_PAYLOAD_BYTES);
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
      ps.setString(1, channel);
      ps.setString(2, payload);
      ps.execute();
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  /** Adds a callback that gets each mark sent by {@link #sendMark}, on the listener's thread, in order. */
  public void onMark(Consumer<String> callback) {
    markSubscribers.add(callback);
  }

  /** Adds a subscriber; it is called on the listener's thread and must be quick. */
  public void subscribe(Consumer<JobEventBatch> subscriber) {
    subscribers.add(subscriber);
  }

  /** Removes a subscriber. */
  public void unsubscribe(Consumer<JobEventBatch> subscriber) {
    subscribers.remove(subscriber);
  }

  /** Adds a callback run after each (re)connect. */
  public void onReconnect(Runnable callback) {
    reconnectSubscribers.add(callback);
  }

  /** True while the LISTEN connection is up. */
  public boolean isListening() {
    return listener.isListening();
  }

  /** Starts listening. */
  public JobEventListener start() {
    listener.start();
    return this;
  }

  private void reconnected() {
    reconnectSubscribers.forEach(Runnable::run);
  }

  private void dispatch(String payload) {
    JobEventBatch batch;
    String mark;
    try {
      JsonNode root = JSON.readTree(payload);
      mark = root.has("mark") ? root.path("mark").asString() : null;
      batch = mark == null ? parse(root) : null;
    } catch (RuntimeException e) {
      log.warn("ignoring malformed job event '{}': {}", payload, e.getMessage());
      return;
    }
    if (mark != null) {
      for (Consumer<String> subscriber : markSubscribers) {
        try {
          subscriber.accept(mark);
        } catch (RuntimeException e) {
          log.warn("job event mark subscriber failed: {}", e.toString());
        }
      }
      return;
    }
    for (Consumer<JobEventBatch> subscriber : subscribers) {
      try {
        subscriber.accept(batch);
      } catch (RuntimeException e) {
        log.warn("job event subscriber failed: {}", e.toString());
      }
    }
  }

  static JobEventBatch parse(String payload) {
    return parse(JSON.readTree(payload));
  }

  private static JobEventBatch parse(JsonNode root) {
    String kind = root.path("op").asString("state");
    List<JobEvent> events = new ArrayList<>();
    for (JsonNode job : root.path("jobs")) {
      events.add(new JobEvent(
          kind,
          UUID.fromString(job.path("id").asString()),
          JobState.parse(job.path("state").asString()),
          job.path("type").asString(),
          job.path("queue").asString(),
          job.path("attempts").asInt(),
          job.hasNonNull("progress") ? job.path("progress").asInt() : null,
          job.hasNonNull("message") ? job.path("message").asString() : null));
    }
    return new JobEventBatch(List.copyOf(events), root.path("count").asLong(events.size()));
  }

  /** Asks the listener to stop listening; see {@link #awaitStopped}. */
  @Override
  public void stop() {
    listener.stop();
  }

  /** Waits for the LISTEN thread to end and its connection to be returned. */
  @Override
  public boolean awaitStopped(java.time.Duration timeout) {
    return listener.awaitStopped(timeout);
  }

  /** Stops listening: {@link #stop()}, then waits up to 5 s. */
  @Override
  public void close() {
    listener.close();
  }
}
