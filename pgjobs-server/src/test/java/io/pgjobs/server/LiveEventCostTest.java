package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobState;
import io.pgjobs.server.WsApiTest.Socket;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import tools.jackson.databind.JsonNode;

/**
 * What live events cost the database: a burst of subscriptions shares its marks, and a notification
 * that left jobs out re-reads only the followed jobs that changed. Real server, real WebSocket client,
 * real PostgreSQL; costs are counted (marks on the channel, job messages), not timed.
 */
class LiveEventCostTest {
  static ApiTestSupport api;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start();
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  private static List<UUID> enqueue(String queue, int n) {
    return api.client.enqueueAll(
        TestTypes.TASK,
        Collections.nCopies(n, new TestTypes.Task(queue)),
        EnqueueOptions.builder().queue(queue).build());
  }

  @Test
  void aBurstOfSubscriptionsSharesItsMarks() throws Exception {
    List<UUID> ids = enqueue("burst", 300);
    try (Connection listen = api.db.dataSource().getConnection();
        Statement st = listen.createStatement()) {
      st.execute("LISTEN \"" + api.client.eventsChannel() + "\"");
      Socket s = Socket.connect(api);
      try {
        s.send(
            "{\"op\":\"subscribe\",\"jobs\":" + ApiTestSupport.JSON.writeValueAsString(ids) + "}");
        for (int i = 0; i < ids.size(); i++) {
          s.next(m -> m.path("type").asString().equals("job"));
        }
      } finally {
        s.close();
      }
      // Every mark went out before the snapshot it guards; this one comes after all of them.
      st.execute("SELECT pg_notify('" + api.client.eventsChannel() + "', '{\"end\":true}')");
      int marks = 0;
      boolean end = false;
      while (!end) {
        PGNotification[] got = listen.unwrap(PGConnection.class).getNotifications(30_000);
        assertThat(got).as("notifications within 30 s").isNotEmpty();
        for (PGNotification n : got) {
          marks += n.getParameter().contains("\"mark\"") ? 1 : 0;
          end |= n.getParameter().contains("\"end\"");
        }
      }
      // One round trip per subscription before; now one per mark in flight.
      assertThat(marks).as("marks sent for 300 subscriptions").isBetween(1, 10);
    }
  }

  @Test
  void aTruncatedBatchRereadsOnlyFollowedJobsThatChanged() throws Exception {
    UUID followed = enqueue("followed", 1).get(0);
    Socket s = Socket.connect(api);
    try {
      s.send("{\"op\":\"subscribe\",\"jobs\":[\"" + followed + "\"]}");
      s.nextJob(followed, "queued");
      // Ten statements of 200 unrelated jobs each: every notification lists 50 and says it left out
      // 150.
      for (int round = 0; round < 5; round++) {
        enqueue("bulk", 200);
        api.client.cancelAll(Set.of(), Set.of("bulk"), Set.of(JobState.QUEUED));
      }
      api.client.cancel(followed);
      List<String> states = new ArrayList<>();
      while (states.isEmpty() || !states.getLast().equals("cancelled")) {
        states.add(s.nextJob(followed, null).path("job").path("state").asString());
      }
      // Before, each truncated notification re-read the job and sent it again (queued, queued,
      // ...).
      assertThat(states).containsExactly("cancelled");

      // A change among the jobs left out still reaches the follower: its job is cancelled with 199
      // others, and its entry may or may not be among the 50 listed.
      api.client.retry(followed);
      s.nextJob(followed, "queued");
      List<UUID> more = new ArrayList<>(enqueue("followed", 199));
      api.client.cancelAll(Set.of(), Set.of("followed"), Set.of(JobState.QUEUED));
      JsonNode last = s.nextJob(followed, "cancelled");
      assertThat(last.path("job").path("state").asString()).isEqualTo("cancelled");
      assertThat(more).hasSize(199);
    } finally {
      s.close();
    }
  }
}
