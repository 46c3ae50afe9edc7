package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.pgjobs.events.JobEvent;
import io.pgjobs.events.JobEventListener;
import io.pgjobs.lifecycle.TcpProxy;
import io.pgjobs.metrics.MetricNames;
import io.pgjobs.metrics.MicrometerJobMetrics;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A success that unblocks a graph's child hands it to the worker that wrote the success, in the same
 * statement (ExecutionSql.SUCCEED_BATCH_HANDING_OFF): the child goes from {@code blocked} to
 * {@code running} under that worker without ever being {@code queued}, and runs once. Children the
 * worker could not rightly claim (a queue it does not serve, a type it has no handler for, a paused
 * queue, a child that waits for another parent too, a child due later) go through the queue as before.
 */
class HandOffTest extends PgJobsTestBase {
  /** A step of a chain, by name. */
  public record Link(String name) {}

  static final JobType<Link> LINK = JobType.of("hand-off-link", Link.class).withMaxAttempts(1);
  static final JobType<Link> OTHER = JobType.of("hand-off-other", Link.class).withMaxAttempts(1);

  private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

  private JobWorker.Builder linkWorker(String queue, int lanes) {
    return worker().queue(queue, lanes).register(LINK, (ctx, l) -> {
      runs.computeIfAbsent(l.name(), n -> new AtomicInteger()).incrementAndGet();
      return null;
    });
  }

  private static void awaitEvent(List<JobEvent> events, UUID id, JobState state) {
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> jobEventsOf(events, id).stream().anyMatch(e -> e.state() == state));
  }

  @Test
  void aChainsChildrenGoFromBlockedToRunningUnderTheWorkerThatEndedTheirParentAndRunOnce()
      throws Exception {
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    try (JobEventListener listener = listeningToJobEvents(events)) {
      JobGraph.Builder graph = JobGraph.builder().add("l0", LINK, new Link("l0"));
      for (int i = 1; i < 10; i++) {
        graph.add("l" + i, LINK, new Link("l" + i), Dependency.on("l" + (i - 1)));
      }
      Map<String, UUID> ids = client.enqueueGraph(graph.build()).ids();
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      JobWorker worker =
          start(linkWorker("default", 1).metrics(new MicrometerJobMetrics(registry)));
      UUID last = ids.get("l9");
      awaitState(last, JobState.SUCCEEDED);
      awaitEvent(events, last, JobState.SUCCEEDED);

      for (int i = 1; i < 10; i++) {
        UUID id = ids.get("l" + i);
        List<String> states =
            jobEventsOf(events, id).stream().map(e -> e.state().value()).toList();
        assertThat(states)
            .as("events of link %d", i)
            .containsExactly("blocked", "running", "succeeded");
        Job job = client.get(id).orElseThrow();
        assertThat(job.attempts()).as("attempts of link %d", i).isEqualTo(1);
        assertThat(job.lockedBy())
            .as("the worker that ran link %d", i)
            .isEqualTo(worker.workerId());
      }
      assertThat(runs).hasSize(10).allSatisfy((name, n) -> assertThat(n.get()).isEqualTo(1));
      assertThat(worker.handOffs()).as("children started by hand-off").isEqualTo(9);
      assertThat(registry
              .get(MetricNames.WORKER_HAND_OFFS)
              .tag("worker", worker.workerId())
              .functionCounter()
              .count())
          .isEqualTo(9.0);
    }
  }

  @Test
  void aWorkerWithoutTheHandOffQueuesEveryChildForItsNextClaim() throws Exception {
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    try (JobEventListener listener = listeningToJobEvents(events)) {
      Map<String, UUID> ids = client
          .enqueueGraph(JobGraph.builder()
              .add("first", LINK, new Link("first"))
              .add("second", LINK, new Link("second"), Dependency.on("first"))
              .build())
          .ids();
      JobWorker worker = start(linkWorker("default", 1).handOff(false));
      UUID second = ids.get("second");
      awaitState(second, JobState.SUCCEEDED);
      awaitEvent(events, second, JobState.SUCCEEDED);
      assertThat(jobEventsOf(events, second).stream().map(e -> e.state().value()))
          .containsExactly("blocked", "queued", "running", "succeeded");
      assertThat(runs.get("second").get()).isEqualTo(1);
      assertThat(worker.handOffs()).isZero();
    }
  }

  /** What a root of {@link #aSuccessWhoseReplyIsLostAfterItHandedAChildOverGivesTheChildBackAndItRunsOnce} returns. */
  public record Marked(String marker) {}

  /**
   * The connection drops between the commit of a success that handed a child over and its reply (a
   * real TCP proxy drops the reply): the worker does not know the child it now holds. The completer's
   * retry finds the success written; the child's queue looks for jobs the worker holds and does not
   * know, gives the child back, and it runs once, with one attempt — long before rescue (10 minutes
   * here) could have freed it.
   */
  @Test
  void aSuccessWhoseReplyIsLostAfterItHandedAChildOverGivesTheChildBackAndItRunsOnce()
      throws Exception {
    try (TcpProxy proxy = TcpProxy.before(db.jdbcUrl())) {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(proxy.through(db.jdbcUrl()));
      config.setMaximumPoolSize(8);
      config.setMinimumIdle(0);
      try (HikariDataSource pool = new HikariDataSource(config)) {
        Map<String, UUID> ids = client
            .enqueueGraph(JobGraph.builder()
                .add("root", LINK, new Link("root"))
                .add("child", LINK, new Link("child"), Dependency.on("root"))
                .build())
            .ids();
        String marker = "hand-off-reply-lost-" + UUID.randomUUID();
        proxy.loseReplyTo(marker);
        JobWorker worker = start(JobWorker.builder(pool)
            .shutdownGrace(Duration.ofSeconds(2))
            .staleThreshold(Duration.ofMinutes(10))
            .queue("default", 1)
            .register(LINK, (ctx, l) -> {
              runs.computeIfAbsent(l.name(), n -> new AtomicInteger()).incrementAndGet();
              return l.name().equals("root") ? new Marked(marker) : null;
            }));

        Job child = awaitState(ids.get("child"), JobState.SUCCEEDED, Duration.ofSeconds(30));
        assertThat(proxy.repliesLost()).as("replies dropped by the proxy").isEqualTo(1);
        assertThat(client.get(ids.get("root")).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
        assertThat(runs.get("root").get()).as("runs of the root").isEqualTo(1);
        assertThat(runs.get("child").get()).as("runs of the child").isEqualTo(1);
        assertThat(child.attempts()).as("the child's attempts").isEqualTo(1);
        worker.close(); // before its pool
      }
    }
  }

  @Test
  void childrenTheWorkerCouldNotClaimGoThroughTheirQueue() throws Exception {
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    client.pauseQueue("hand-off-paused");
    try (JobEventListener listener = listeningToJobEvents(events)) {
      Map<String, UUID> ids = client
          .enqueueGraph(JobGraph.builder()
              .add("root", LINK, new Link("root"))
              // a queue this worker does not serve
              .add(
                  "elsewhere",
                  LINK,
                  new Link("elsewhere"),
                  EnqueueOptions.builder().queue("hand-off-elsewhere").build(),
                  Dependency.on("root"))
              // a type this worker has no handler for
              .add("other", OTHER, new Link("other"), Dependency.on("root"))
              // a paused queue this worker serves
              .add(
                  "paused",
                  LINK,
                  new Link("paused"),
                  EnqueueOptions.builder().queue("hand-off-paused").build(),
                  Dependency.on("root"))
              // due later
              .add(
                  "later",
                  LINK,
                  new Link("later"),
                  EnqueueOptions.builder()
                      .runAt(java.time.Instant.now().plusSeconds(3600))
                      .build(),
                  Dependency.on("root"))
              // waits for another parent too, which ends later than root
              .add("second", LINK, new Link("second"), Dependency.on("root"))
              .add("both", LINK, new Link("both"), Dependency.on("root"), Dependency.on("second"))
              .build())
          .ids();
      start(linkWorker("default", 1).queue("hand-off-paused", 1));
      awaitState(ids.get("both"), JobState.SUCCEEDED);
      for (String name : List.of("elsewhere", "other", "paused", "later")) {
        awaitEvent(events, ids.get(name), JobState.QUEUED);
        assertThat(client.get(ids.get(name)).orElseThrow().state())
            .as("%s, unblocked but not handed over", name)
            .isEqualTo(JobState.QUEUED);
      }
      // "second" had root as its only parent: handed over; "both" waited for second too, and
      // second's end was its last: handed over then.
      awaitEvent(events, ids.get("both"), JobState.SUCCEEDED);
      assertThat(
              jobEventsOf(events, ids.get("second")).stream().map(e -> e.state().value()))
          .containsExactly("blocked", "running", "succeeded");
      assertThat(runs.keySet()).containsExactlyInAnyOrder("root", "second", "both");
    } finally {
      client.resumeQueue("hand-off-paused");
    }
  }
}
