package io.pgjobs.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.InvalidPayloadException;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.workflow.WorkflowType;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The composition root ({@link PgJobs}) and the order in which a worker stops its services. */
class CompositionRootTest extends PgJobsTestBase {
  private static final JobType<Numbered> PARENT = JobType.of("parent", Numbered.class);

  /** Counts enqueues by type: which client enqueued is told by whose metrics count it. */
  private static final class Enqueues implements JobMetrics {
    final ConcurrentHashMap<String, Integer> byType = new ConcurrentHashMap<>();

    @Override
    public void enqueued(String type, int count) {
      byType.merge(type, count, Integer::sum);
    }
  }

  @Test
  void handlersEnqueueThroughTheRootsClient() {
    Enqueues rootEnqueues = new Enqueues();
    PgJobs root = PgJobs.builder(db.dataSource()).metrics(rootEnqueues).build();
    JobWorker worker = start(root.workerBuilder()
        .shutdownGrace(Duration.ofSeconds(2))
        .register(PARENT, (ctx, p) -> {
          ctx.enqueue(NUMBERED, new Numbered(p.n() + 1));
          return null;
        }));

    assertThat(worker.client()).isSameAs(root.client());
    UUID parent = root.client().enqueue(PARENT, new Numbered(1)).job().id();
    awaitState(parent, JobState.SUCCEEDED);
    // The worker's own metrics are NONE: the child's enqueue was counted by the root's client.
    assertThat(rootEnqueues.byType).containsEntry("parent", 1).containsEntry("numbered", 1);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE type = 'numbered'"))
        .isEqualTo(1);
  }

  /** A workflow's input. */
  public record Greeting(String to) {}

  /**
   * A workflow declared on the root is known to its client, with its version, settings and example, and
   * its job type is a known type: a run started by name gets the workflow's attempts, its input is read
   * strictly into the input class, and the root's worker runs it.
   */
  @Test
  void aWorkflowDeclaredOnTheRootIsKnownToItsClientAndARunStartedByNameGetsItsDefaults() {
    WorkflowType<Greeting> greet = WorkflowType.of("root-greet", Greeting.class)
        .withMaxAttempts(4)
        .withTimeout(Duration.ofMinutes(3))
        .withExample(new Greeting("ada@example.com"))
        .withVersion(2);
    PgJobs root = PgJobs.builder(db.dataSource()).knownWorkflows(greet).build();

    assertThat(root.client().knownWorkflows()).containsOnlyKeys("root-greet");
    WorkflowType<?> known = root.client().knownWorkflows().get("root-greet");
    assertThat(known.version()).as("withVersion kept the settings before it").isEqualTo(2);
    assertThat(known.maxAttempts()).isEqualTo(4);
    assertThat(known.timeout()).isEqualTo(Duration.ofMinutes(3));
    assertThat(known.example().orElseThrow()).isEqualTo(new Greeting("ada@example.com"));
    assertThat(known.inputClass()).isEqualTo(Greeting.class);
    assertThat(root.client().knownTypes()).containsEntry("root-greet", greet.jobType());

    start(root.workerBuilder()
        .shutdownGrace(Duration.ofSeconds(2))
        .workflow(
            greet,
            (ctx, g) -> ctx.step("hello", String.class, () -> "hello " + g.to()).run()));
    UUID run = root.client()
        .enqueue("root-greet", Map.of("to", "bob@example.com"), EnqueueOptions.DEFAULTS)
        .job()
        .id();
    Job ended = awaitState(run, JobState.SUCCEEDED);
    assertThat(ended.maxAttempts())
        .as("the workflow's attempts, not the default 3")
        .isEqualTo(4);
    assertThat(ended.output().asString()).isEqualTo("hello bob@example.com");
    long jobs = count("pgjobs.jobs") + count("pgjobs.finished_jobs");
    org.assertj.core.api.Assertions.assertThatThrownBy(() ->
            root.client().enqueue("root-greet", Map.of("colour", "red"), EnqueueOptions.DEFAULTS))
        .as("an input that does not read into the input class")
        .isInstanceOf(InvalidPayloadException.class);
    assertThat(count("pgjobs.jobs") + count("pgjobs.finished_jobs")).isEqualTo(jobs);

    assertThat(PgJobs.builder(db.dataSource()).build().client().knownWorkflows())
        .as("a root told of none")
        .isEmpty();
  }

  @Test
  void theFrontDoorBuildsARootOfItsOwn() {
    JobWorker worker = worker().register(NUMBERED, (ctx, p) -> null).build();
    try {
      assertThat(worker.client()).isNotNull().isNotSameAs(client);
      assertThat(worker.client().schema()).isEqualTo("pgjobs");
    } finally {
      worker.close();
    }
  }

  @Test
  void aRootsWorkerBuilderRefusesAnotherSchema() {
    PgJobs root = PgJobs.builder(db.dataSource()).build();
    JobWorker.Builder builder =
        root.workerBuilder().schema("other").register(NUMBERED, (ctx, p) -> null);
    org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
        .isThrownBy(builder::build)
        .withMessageContaining("schema 'other' differs");
  }

  @Test
  void closeStopsALoopStartedLaterBeforeThoseStartedEarlier() throws Exception {
    // This worker's poller thread: the one that was not there before it started (a worker of an
    // earlier test in this JVM may still be letting its own go).
    java.util.Set<Thread> before = pollerThreads();
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    JobWorker worker = start(worker()
        .workerId("ordered")
        .shutdownGrace(Duration.ofSeconds(20))
        .maintenance(true)
        .register(NUMBERED, (ctx, p) -> {
          running.countDown();
          release.await();
          return null;
        }));
    assertThat(worker.stopOrder())
        .containsExactly("pollers", "lanes", "listener", "maintenance", "completer", "heartbeat");

    UUID id = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    assertThat(running.await(20, TimeUnit.SECONDS)).isTrue();
    await().atMost(Duration.ofSeconds(20)).until(worker::isMaintenanceLeader);
    await().atMost(Duration.ofSeconds(20)).until(worker::isListening);

    java.util.Set<Thread> mine = pollerThreads();
    mine.removeAll(before);
    assertThat(mine).as("this worker's poller thread for the default queue").hasSize(1);
    Thread closing = Thread.ofPlatform().start(worker::close);
    // The pollers (started last) stop first: a job enqueued once their thread has ended is not
    // claimed. (Awaited, not slept: a loaded machine can take longer than any fixed pause.)
    await("the poller's thread ended")
        .atMost(Duration.ofSeconds(20))
        .until(() -> mine.stream().noneMatch(Thread::isAlive));
    UUID later = client.enqueue(NUMBERED, new Numbered(2)).job().id();
    Thread.sleep(500);
    assertThat(closing.isAlive())
        .as("the running job holds close() in the lanes")
        .isTrue();
    assertThat(client.get(later).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    // The lanes drain while the services started before them still run.
    assertThat(worker.isListening())
        .as("listener still up while the lanes drain")
        .isTrue();
    assertThat(worker.isMaintenanceLeader()).as("maintenance still leads").isTrue();
    assertThat(count("SELECT count(*) FROM pgjobs.workers WHERE id = 'ordered'"))
        .as("still registered")
        .isEqualTo(1);

    release.countDown();
    closing.join(Duration.ofSeconds(30));
    assertThat(closing.isAlive()).isFalse();
    assertThat(client.get(id).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
    assertThat(worker.isListening()).isFalse();
    assertThat(worker.isMaintenanceLeader()).isFalse();
    assertThat(count("SELECT count(*) FROM pgjobs.workers WHERE id = 'ordered'"))
        .as("deregistered last")
        .isZero();
    assertThat(worker.stopOrder()).isEqualTo(List.of());
  }

  /** The live poller threads of queue {@code default} in this JVM. */
  private static java.util.Set<Thread> pollerThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().equals("pgjobs-poller-default"))
        .collect(java.util.stream.Collectors.toCollection(java.util.HashSet::new));
  }
}
