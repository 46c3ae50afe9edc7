package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.JobClient;
import io.pgjobs.server.SseSubscriber.Event;
import io.pgjobs.testkit.PgBouncer;
import io.pgjobs.testkit.Tags;
import io.pgjobs.testkit.TestDatabase;
import io.pgjobs.worker.JobWorker;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The API behind PgBouncer in transaction mode: requests go through the pooler, the live event stream
 * LISTENs on a direct connection ({@code listenDataSource}), or not at all ({@code liveEvents(false)}).
 */
@Tag(Tags.PGBOUNCER)
class PgBouncerEventsTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static TestDatabase db;
  private static PgBouncer bouncer;
  private static JobClient pooledClient;
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void start() {
    db = TestDatabase.create();
    JobClient.builder(db.dataSource()).build().migrate();
    bouncer = PgBouncer.start(db, 3);
    pooledClient =
        JobClient.builder(bouncer.newDataSource(4)).knownTypes(TestTypes.TASK).build();
  }

  @AfterAll
  static void stop() {
    if (bouncer != null) {
      bouncer.close();
    }
    if (db != null) {
      db.close();
    }
  }

  private static long listeningSessions() {
    return db.queryLong(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'");
  }

  @Test
  void theEventStreamListensOnTheDirectConnectionAndFollowsAJobRunThroughThePooler()
      throws Exception {
    try (ApiServer server = ApiServer.builder(pooledClient)
        .host("127.0.0.1")
        .port(0)
        .listenDataSource(db.dataSource())
        .build()
        .start()) {
      UUID id = pooledClient
          .enqueue(TestTypes.TASK, new TestTypes.Task("via pgbouncer"))
          .job()
          .id();
      URI uri = URI.create("http://127.0.0.1:" + server.port() + "/events?job_id=" + id);
      try (SseSubscriber events = new SseSubscriber(http, uri)) {
        assertThat(events.status()).isEqualTo(200);
        assertThat(
                events.next("snapshot", WAIT).json().path("job").path("state").asString())
            .isEqualTo("queued");
        try (JobWorker worker = JobWorker.builder(bouncer.newDataSource(4))
            .listenDataSource(db.dataSource())
            .register(TestTypes.TASK, (ctx, task) -> null)
            .build()
            .start()) {
          List<String> states = new ArrayList<>();
          while (!states.contains("succeeded")) {
            Event e = events.next("state", WAIT);
            states.add(e.json().path("state").asString());
          }
          assertThat(states).containsExactly("running", "succeeded");
        }
      }
    }
  }

  @Test
  void withLiveEventsOffTheServerOpensNoListenConnectionAndStillAnswers() throws Exception {
    try (ApiServer server = ApiServer.builder(pooledClient)
        .host("127.0.0.1")
        .port(0)
        .liveEvents(false)
        .build()
        .start()) {
      UUID id = pooledClient
          .enqueue(TestTypes.TASK, new TestTypes.Task("no live events"))
          .job()
          .id();
      URI uri = URI.create("http://127.0.0.1:" + server.port() + "/events?job_id=" + id);
      try (SseSubscriber events = new SseSubscriber(http, uri)) {
        assertThat(events.status()).isEqualTo(200);
        // No mark can come back without a listener: the snapshot goes out at once.
        assertThat(
                events.next("snapshot", WAIT).json().path("job").path("state").asString())
            .isEqualTo("queued");
      }
      assertThat(listeningSessions()).isZero();
    }
  }

  @Test
  void liveEventsOffAndAListenDataSourceContradictEachOther() {
    assertThatThrownBy(() -> ApiServer.builder(pooledClient)
            .liveEvents(false)
            .listenDataSource(db.dataSource())
            .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("liveEvents(false) and a listenDataSource");
  }
}
