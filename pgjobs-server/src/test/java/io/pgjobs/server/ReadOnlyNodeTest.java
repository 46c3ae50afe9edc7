package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.JobClient;
import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.testkit.PostgresCluster;
import io.pgjobs.testkit.PostgresCluster.Node;
import io.pgjobs.testkit.PostgresCluster.Replication;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A worker and an API server whose database is a read-only standby: readiness fails with the reason,
 * {@code POST /jobs}, a graph ({@code POST /graphs}) and a workflow's start answer 503
 * {@code database-read-only}, the worker (which cannot register, so claims
 * nothing), each listener and the maintenance lease say once what they wait for, and
 * both work again by themselves once the standby is promoted. Runs on a private primary and standby
 * ({@link PostgresCluster}); the primary is crashed so that the standby is the only server left.
 */
@Tag(Tags.PROCESS)
class ReadOnlyNodeTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @Test
  void aStandbyIsNotReadyRefusesJobsAndBothResumeWhenPromoted() throws Exception {
    Logger pollerLog = (Logger) LoggerFactory.getLogger("io.pgjobs.worker.QueuePoller");
    ListAppender<ILoggingEvent> pollerEvents = new ListAppender<>();
    pollerEvents.start();
    Level levelBefore = pollerLog.getLevel();
    pollerLog.setLevel(Level.DEBUG);
    pollerLog.addAppender(pollerEvents);
    Logger heartbeatLog = (Logger) LoggerFactory.getLogger("io.pgjobs.worker.WorkerHeartbeat");
    ListAppender<ILoggingEvent> heartbeatEvents = new ListAppender<>();
    heartbeatEvents.start();
    Level heartbeatLevelBefore = heartbeatLog.getLevel();
    heartbeatLog.setLevel(Level.DEBUG);
    heartbeatLog.addAppender(heartbeatEvents);
    Logger listenerLog =
        (Logger) LoggerFactory.getLogger("io.pgjobs.notify.JobNotificationListener");
    ListAppender<ILoggingEvent> listenerEvents = new ListAppender<>();
    listenerEvents.start();
    Level listenerLevelBefore = listenerLog.getLevel();
    listenerLog.setLevel(Level.DEBUG);
    listenerLog.addAppender(listenerEvents);
    Logger leaseLog = (Logger) LoggerFactory.getLogger("io.pgjobs.maintenance.LeaderElector");
    ListAppender<ILoggingEvent> leaseEvents = new ListAppender<>();
    leaseEvents.start();
    Level leaseLevelBefore = leaseLog.getLevel();
    leaseLog.setLevel(Level.DEBUG);
    leaseLog.addAppender(leaseEvents);
    Set<String> done = ConcurrentHashMap.newKeySet();
    try (PostgresCluster cluster = PostgresCluster.start(Replication.ASYNCHRONOUS)) {
      cluster.createDatabase("jobs");
      try (HikariDataSource primary = pool(cluster.jdbcUrl(Node.PRIMARY, "jobs"))) {
        JobClient.builder(primary).build().migrate();
      }
      cluster.awaitStandbyReplayed();
      cluster.crashPrimary();

      try (HikariDataSource standby = pool(cluster.jdbcUrl(Node.STANDBY, "jobs"))) {
        JobClient client = JobClient.builder(standby)
            .knownTypes(TestTypes.TASK)
            .knownWorkflows(READ_ONLY_FLOW)
            .build();
        try (ApiServer server =
                ApiServer.builder(client).host("127.0.0.1").port(0).build().start();
            JobWorker worker = JobWorker.builder(standby)
                .register(TestTypes.TASK, (ctx, task) -> {
                  done.add(task.note());
                  return null;
                })
                .queue("default", 2)
                .pollInterval(Duration.ofMillis(100))
                .leaseTtl(Duration.ofSeconds(
                    1)) // renewed every third of a second: many tries while read-only
                .build()
                .start()) {
          Response ready = get(server, "/health/ready");
          assertThat(ready.status()).as(ready.body()).isEqualTo(503);
          assertThat(ready.json().path("type").asString())
              .isEqualTo("urn:pgjobs:problem:database-read-only");
          assertThat(ready.json().path("detail").asString()).contains("read-only", "standby");

          Response refused = postJob(server, "while read-only");
          assertThat(refused.status()).as(refused.body()).isEqualTo(503);
          assertThat(refused.contentType()).startsWith("application/problem+json");
          assertThat(refused.json().path("type").asString())
              .isEqualTo("urn:pgjobs:problem:database-read-only");
          assertThat(refused.json().path("detail").asString()).contains("read-only");
          // A graph and a workflow run are refused the same way (their storage is written in one
          // transaction, refused whole).
          for (String[] write : new String[][] {
            {"/graphs", GRAPH.formatted("while read-only")},
            {"/workflows/ro_flow/start", "{\"input\": {\"note\": \"while read-only\"}}"}
          }) {
            Response r = post(server, write[0], write[1]);
            assertThat(r.status()).as(write[0] + ": " + r.body()).isEqualTo(503);
            assertThat(r.json().path("type").asString())
                .isEqualTo("urn:pgjobs:problem:database-read-only");
          }

          // The worker cannot register on a standby, so it claims nothing: several failed beats,
          // one warning saying what the worker waits for.
          await().atMost(WAIT).until(() -> readOnlyEvents(heartbeatEvents, Level.DEBUG) >= 3);
          assertThat(readOnlyEvents(heartbeatEvents, Level.WARN)).isEqualTo(1);
          assertThat(warnings(heartbeatEvents))
              .filteredOn(message -> message.contains("read-only"))
              .singleElement()
              .satisfies(message -> assertThat(message).contains("waits", "promoted"));
          assertThat(worker.isFenced()).isTrue();

          // The two listeners (the worker's, the API's event stream) retry LISTEN, each saying once
          // why it fails.
          await()
              .atMost(WAIT)
              .until(() -> snapshot(listenerEvents).stream()
                      .filter(e -> e.getFormattedMessage().startsWith("LISTEN"))
                      .count()
                  >= 6);
          assertThat(warnings(listenerEvents))
              .as("the listeners' warnings")
              .hasSize(2)
              .allSatisfy(message ->
                  assertThat(message).contains("read-only standby", "until it is promoted"));

          // The maintenance lease is tried again and again; its failure is reported once.
          await()
              .atMost(WAIT)
              .until(() -> snapshot(leaseEvents).stream()
                      .filter(e -> e.getFormattedMessage().contains("maintenance lease"))
                      .count()
                  >= 4);
          assertThat(warnings(leaseEvents))
              .as("the lease's warnings")
              .singleElement()
              .satisfies(
                  message -> assertThat(message).contains("read-only", "until it is promoted"));

          cluster.promoteStandby();

          await().atMost(WAIT).until(() -> get(server, "/health/ready").status() == 200);
          Response accepted = postJob(server, "after promotion");
          assertThat(accepted.status()).as(accepted.body()).isEqualTo(201);
          await().atMost(WAIT).until(() -> done.contains("after promotion"));
          Response graph = post(server, "/graphs", GRAPH.formatted("graph after promotion"));
          assertThat(graph.status()).as(graph.body()).isEqualTo(201);
          await().atMost(WAIT).until(() -> done.contains("graph after promotion child"));
          assertThat(snapshot(heartbeatEvents))
              .anySatisfy(event ->
                  assertThat(event.getFormattedMessage()).contains("accepts writes again"));
          assertThat(warnings(pollerEvents))
              .as("the poller never claimed on the standby")
              .isEmpty();
        }
      }
    } finally {
      pollerLog.detachAppender(pollerEvents);
      pollerLog.setLevel(levelBefore);
      heartbeatLog.detachAppender(heartbeatEvents);
      heartbeatLog.setLevel(heartbeatLevelBefore);
      listenerLog.detachAppender(listenerEvents);
      listenerLog.setLevel(listenerLevelBefore);
      leaseLog.detachAppender(leaseEvents);
      leaseLog.setLevel(leaseLevelBefore);
    }
  }

  /** The events so far, copied while no logging thread appends (the appender appends under its own lock). */
  private static List<ILoggingEvent> snapshot(ListAppender<ILoggingEvent> events) {
    synchronized (events) {
      return List.copyOf(events.list);
    }
  }

  private static long readOnlyEvents(ListAppender<ILoggingEvent> events, Level level) {
    return snapshot(events).stream()
        .filter(e -> e.getLevel() == level && e.getFormattedMessage().contains("read-only"))
        .count();
  }

  private static List<String> warnings(ListAppender<ILoggingEvent> events) {
    return snapshot(events).stream()
        .filter(e -> e.getLevel() == Level.WARN)
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  private Response get(ApiServer server, String path) throws Exception {
    return send(HttpRequest.newBuilder(uri(server, path)).GET().build());
  }

  /** A known workflow: its start is a write the standby must refuse. */
  private static final io.pgjobs.workflow.WorkflowType<TestTypes.Task> READ_ONLY_FLOW =
      io.pgjobs.workflow.WorkflowType.of("ro_flow", TestTypes.Task.class);

  /** A graph of two task jobs, the second after the first; %s: the first's note. */
  private static final String GRAPH = """
      {"jobs": [
        {"name": "a", "type": "task", "payload": {"note": "%1$s"}},
        {"name": "b", "type": "task", "payload": {"note": "%1$s child"}, "after": ["a"]}
      ]}""";

  private Response post(ApiServer server, String path, String json) throws Exception {
    return send(HttpRequest.newBuilder(uri(server, path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json))
        .build());
  }

  private Response postJob(ApiServer server, String note) throws Exception {
    return send(HttpRequest.newBuilder(uri(server, "/jobs"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(
            "{\"type\":\"task\",\"queue\":\"default\",\"payload\":{\"note\":\"" + note + "\"}}"))
        .build());
  }

  private Response send(HttpRequest request) throws Exception {
    HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
    return new Response(r.statusCode(), r.headers().map(), r.body());
  }

  private static URI uri(ApiServer server, String path) {
    return URI.create("http://127.0.0.1:" + server.port() + path);
  }

  private static HikariDataSource pool(String jdbcUrl) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setMaximumPoolSize(10);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(5_000);
    return new HikariDataSource(config);
  }
}
