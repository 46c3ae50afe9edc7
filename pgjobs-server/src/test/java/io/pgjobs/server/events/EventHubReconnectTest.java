package io.pgjobs.server.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.testkit.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * After the hub's LISTEN connection is cut and comes back, a follower of one job re-reads it only if
 * the job changed; real PostgreSQL, the listener's backend terminated by the test.
 */
class EventHubReconnectTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  static final JobType<Map> TASK = JobType.of("task", Map.class);

  /** A follower's sink that keeps what it was sent. */
  static final class Recorder implements EventSink {
    final List<String> sent = new CopyOnWriteArrayList<>();

    @Override
    public void send(String event, Object data, String id) {
      sent.add(event);
    }

    @Override
    public void ping() {}

    @Override
    public boolean isClosed() {
      return false;
    }

    @Override
    public void close() {}
  }

  @Test
  void aReconnectRereadsOnlyFollowedJobsThatChanged() {
    try (TestDatabase db = TestDatabase.create()) {
      JobClient client = JobClient.builder(db.dataSource()).knownTypes(TASK).build();
      client.migrate();
      try (EventHub hub = new EventHub(
          db.dataSource(),
          client.eventsChannel(),
          JsonMapper.builder().build(),
          Duration.ofSeconds(15),
          EventLimits.DEFAULTS,
          db.dataSource(),
          client.schema())) {
        hub.start();
        await().atMost(WAIT).until(hub::isListening);
        UUID unchanged = client.enqueue(TASK, Map.of()).job().id();
        UUID changed = client.enqueue(TASK, Map.of()).job().id();
        AtomicInteger unchangedReads = new AtomicInteger();
        AtomicInteger changedReads = new AtomicInteger();
        Recorder unchangedSink = new Recorder();
        Recorder changedSink = new Recorder();
        EventHub.Peer peer = hub.connect(null);
        peer.subscribe(
            unchangedSink,
            new EventFilter(unchanged, Set.of(), Set.of()),
            unchangedReads::incrementAndGet);
        peer.subscribe(
            changedSink,
            new EventFilter(changed, Set.of(), Set.of()),
            changedReads::incrementAndGet);
        await()
            .atMost(WAIT)
            .until(() ->
                unchangedSink.sent.contains("snapshot") && changedSink.sent.contains("snapshot"));

        client.cancel(changed);
        await().atMost(WAIT).until(() -> changedSink.sent.contains("state"));

        long checks = hub.fingerprintChecks();
        assertThat(
                db.queryLong("SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity"
                    + " WHERE datname = current_database() AND query LIKE 'LISTEN %'"))
            .isEqualTo(1);
        await().atMost(WAIT).until(() -> hub.fingerprintChecks() > checks);

        // The changed job is re-read (resync, then a fresh snapshot); the other one is not.
        await().atMost(WAIT).until(() -> changedReads.get() == 2);
        assertThat(changedSink.sent).containsExactly("snapshot", "state", "resync", "snapshot");
        assertThat(unchangedReads).hasValue(1);
        assertThat(unchangedSink.sent).containsExactly("snapshot");
      }
    }
  }
}
