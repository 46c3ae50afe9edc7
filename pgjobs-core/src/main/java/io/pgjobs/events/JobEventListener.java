package io.pgjobs.events;

import io.pgjobs.JobState;
import io.pgjobs.notify.JobNotificationListener;
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
 * <pre>{@code
 * JobEventListener events = new JobEventListener(dataSource, client.eventsChannel());
 * events.subscribe(batch -> batch.events().forEach(e -> System.out.println(e.jobId() + " " + e.state())));
 * events.start();
 * }</pre>
 */
public final class JobEventListener implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(JobEventListener.class);
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private final JobNotificationListener listener;
  private final List<Consumer<JobEventBatch>> subscribers = new CopyOnWriteArrayList<>();
  private final List<Runnable> reconnectSubscribers = new CopyOnWriteArrayList<>();

  /** Listens on {@code channel} (see {@code JobClient.eventsChannel()}). */
  public JobEventListener(DataSource dataSource, String channel) {
    this.listener = new JobNotificationListener(dataSource, Map.of(channel, this::dispatch), this::reconnected);
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
    try {
      batch = parse(payload);
    } catch (RuntimeException e) {
      log.warn("ignoring malformed job event '{}': {}", payload, e.getMessage());
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
    JsonNode root = JSON.readTree(payload);
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

  /** Stops listening. */
  @Override
  public void close() {
    listener.close();
  }
}
