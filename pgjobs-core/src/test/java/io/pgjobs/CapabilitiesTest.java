package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.store.ExplainableClaim;
import io.pgjobs.testkit.JobRows;
import io.pgjobs.testkit.JvmProcess;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Worker capabilities: a job may need a capability, a worker declares the ones it has, and the claim takes
 * only jobs whose capability the worker has or that need none. Jobs nobody alive can run stay queued and
 * are reported per queue.
 */
@Tag(Tags.PROCESS)
class CapabilitiesTest extends PgJobsTestBase {
  private static final int JOBS = 1_000;
  private static final String GENERAL_WORKER = "general-worker";
  private static final String MEDIA_WORKER = "media-worker";

  /** A type whose jobs need {@code media} by default, declared with the annotation. */
  @JobDefaults(name = "transcode", capability = "media")
  public record Transcode(int n) {}

  private final List<JvmProcess> processes = new ArrayList<>();

  @BeforeEach
  void createEffectsTable() {
    db.execute("DROP TABLE IF EXISTS effects", "CREATE TABLE effects (job_id uuid, worker text)");
  }

  @AfterEach
  void killProcesses() {
    processes.forEach(JvmProcess::close);
    processes.clear();
  }

  // ---------------------------------------------------------------- acceptance: two worker JVMs

  @Test
  void mediaJobsRunOnlyOnTheMediaWorkerEveryJobOnceAndAGpuJobStaysQueuedAndIsReported()
      throws Exception {
    processes.add(JvmProcess.start(
        "capabilities-general",
        WorkerProcessMain.class,
        List.of(db.jdbcUrl(), GENERAL_WORKER, "10", "13", "general"),
        Map.of()));
    processes.add(JvmProcess.start(
        "capabilities-media",
        WorkerProcessMain.class,
        List.of(db.jdbcUrl(), MEDIA_WORKER, "10", "13", "general,media"),
        Map.of()));
    awaitOrExplain(
        "both worker processes ready",
        Duration.ofMinutes(2),
        () -> processes.stream().allMatch(p -> p.output().contains(WorkerProcessMain.READY)));

    UUID gpu = enqueue(
        NUMBERED, new Numbered(-1), EnqueueOptions.builder().capability("gpu").build());
    // 1,000 mixed jobs: a third need media, a third need general (both workers have it), a third
    // none; enqueued in bulk per kind, interleaved in three batches so every kind is waiting while
    // the others run.
    Set<UUID> media = new HashSet<>();
    Set<UUID> all = new HashSet<>();
    EnqueueOptions needsMedia = EnqueueOptions.builder().capability("media").build();
    EnqueueOptions needsGeneral = EnqueueOptions.builder().capability("general").build();
    int n = 0;
    for (int batch = 0; batch < 3; batch++) {
      int size = batch < 2 ? 111 : JOBS / 3 - 222;
      List<UUID> m = client.enqueueAll(NUMBERED, numbered(n, size), needsMedia);
      n += size;
      media.addAll(m);
      all.addAll(m);
      all.addAll(client.enqueueAll(NUMBERED, numbered(n, size), needsGeneral));
      n += size;
      all.addAll(client.enqueueAll(NUMBERED, numbered(n, size), EnqueueOptions.DEFAULTS));
      n += size;
    }
    all.addAll(
        client.enqueueAll(NUMBERED, numbered(n, JOBS - all.size()), EnqueueOptions.DEFAULTS));
    assertThat(all).hasSize(JOBS);
    assertThat(media).hasSize(JOBS / 3);

    awaitOrExplain(
        "all " + JOBS + " jobs succeeded",
        Duration.ofMinutes(3),
        () -> count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'") == JOBS);

    // Both workers declared their capabilities in the workers table (GET /workers reads it).
    Map<String, List<String>> declared = new java.util.HashMap<>();
    client.workers().forEach(w -> declared.put(w.id(), w.capabilities()));
    assertThat(declared)
        .containsEntry(GENERAL_WORKER, List.of("general"))
        .containsEntry(MEDIA_WORKER, List.of("general", "media"));

    // The gpu job: nobody has gpu, so it is still waiting (not failed) and its queue reports it.
    assertThat(client.get(gpu).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    QueueInfo queue = client.queues().stream()
        .filter(q -> q.name().equals(JobType.DEFAULT_QUEUE))
        .findFirst()
        .orElseThrow();
    assertThat(queue.unrunnable()).isEqualTo(new QueueInfo.Unrunnable(1, List.of("gpu")));

    processes.forEach(JvmProcess::terminate);
    for (JvmProcess process : processes) {
      assertThat(process.process().waitFor(60, TimeUnit.SECONDS))
          .as("process exits after SIGTERM")
          .isTrue();
    }

    assertThat(count("effects")).as("handler runs").isEqualTo(JOBS);
    assertThat(count("SELECT count(DISTINCT job_id) FROM effects"))
        .as("jobs that ran")
        .isEqualTo(JOBS);
    assertThat(count("SELECT count(*) FROM effects WHERE job_id = '" + gpu + "'"))
        .as("runs of the gpu job")
        .isZero();
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE attempts <> 1"))
        .as("retried jobs")
        .isZero();
    List<String> mediaRanOn =
        strings("SELECT DISTINCT e.worker FROM effects e JOIN pgjobs.finished_jobs f"
            + " ON f.id = e.job_id WHERE f.capability = 'media'");
    assertThat(mediaRanOn).as("workers that ran media jobs").containsExactly(MEDIA_WORKER);
    assertThat(count("SELECT count(*) FROM effects e JOIN pgjobs.finished_jobs f ON f.id = e.job_id"
            + " WHERE f.capability = 'media'"))
        .as("media jobs run")
        .isEqualTo(media.size());
    assertThat(strings("SELECT DISTINCT worker FROM effects"))
        .as("workers that ran jobs")
        .containsExactlyInAnyOrder(GENERAL_WORKER, MEDIA_WORKER);
  }

  // ---------------------------------------------------------------- the claim

  @Test
  void aWorkerWithoutCapabilitiesClaimsOnlyJobsThatNeedNone() throws Exception {
    UUID plain = enqueue(NUMBERED, new Numbered(1));
    enqueue(
        NUMBERED,
        new Numbered(2),
        EnqueueOptions.builder().capability("media").priority(100).build());

    List<ClaimedJob> claimed = store(List.of()).claim(JobType.DEFAULT_QUEUE, 10, "plain-worker");

    assertThat(claimed).extracting(ClaimedJob::id).containsExactly(plain);
  }

  @Test
  void aCapableWorkerClaimsItsCapabilityJobsFirstThenJobsThatNeedNoneButNotOthers()
      throws Exception {
    UUID urgentPlain = enqueue(
        NUMBERED, new Numbered(1), EnqueueOptions.builder().priority(100).build());
    UUID media = enqueue(
        NUMBERED, new Numbered(2), EnqueueOptions.builder().capability("media").build());
    UUID lowMedia = enqueue(
        NUMBERED,
        new Numbered(3),
        EnqueueOptions.builder().capability("media").priority(Priority.LOW).build());
    UUID gpu = enqueue(
        NUMBERED, new Numbered(4), EnqueueOptions.builder().capability("gpu").build());

    ExecutionStore capable = store(List.of("media", "general"));
    List<ClaimedJob> first = capable.claim(JobType.DEFAULT_QUEUE, 2, "media-worker");
    List<ClaimedJob> rest = capable.claim(JobType.DEFAULT_QUEUE, 10, "media-worker");

    // Its own kind first, by priority among them; then what any worker can run; never the gpu job.
    assertThat(first).extracting(ClaimedJob::id).containsExactly(media, lowMedia);
    assertThat(rest).extracting(ClaimedJob::id).containsExactly(urgentPlain);
    assertThat(client.get(gpu).orElseThrow().state()).isEqualTo(JobState.QUEUED);
  }

  @Test
  void aWorkerWithManyCapabilitiesClaimsThemInTheOrderItDeclaredThemUpToSeventyThousand()
      throws Exception {
    // Up to 32 capabilities are bound one parameter each, more as one array (a statement may bind
    // at most 65,535 parameters): the edges on both sides, and past the protocol's limit.
    for (int count : new int[] {1, 32, 33, 70_000}) {
      db.execute("TRUNCATE pgjobs.jobs");
      List<String> capabilities = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        capabilities.add("c" + i);
      }
      String last = capabilities.get(count - 1);
      UUID needsLast = enqueue(
          NUMBERED, new Numbered(1), EnqueueOptions.builder().capability(last).build());
      UUID needsFirst = enqueue(
          NUMBERED, new Numbered(2), EnqueueOptions.builder().capability("c0").build());
      UUID needsOther = enqueue(
          NUMBERED,
          new Numbered(3),
          EnqueueOptions.builder().capability("other").build());

      ExecutionStore store = store(capabilities);
      // One job a claim: the first declared capability's job goes first though the other is older
      // (with one capability, both jobs need it and go by run_at); the next claim takes the other.
      UUID first = count == 1 ? needsLast : needsFirst;
      UUID second = count == 1 ? needsFirst : needsLast;
      assertThat(store.claim(JobType.DEFAULT_QUEUE, 1, "many-worker"))
          .as("%d capabilities", count)
          .extracting(ClaimedJob::id)
          .containsExactly(first);
      assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "many-worker"))
          .as("%d capabilities", count)
          .extracting(ClaimedJob::id)
          .containsExactly(second);
      assertThat(client.get(needsOther).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    }
  }

  @Test
  void aPausedQueueYieldsNothingToACapableWorkerEither() throws Exception {
    UUID media = enqueue(
        NUMBERED, new Numbered(1), EnqueueOptions.builder().capability("media").build());
    client.pauseQueue(JobType.DEFAULT_QUEUE);
    try {
      assertThat(store(List.of("media")).claim(JobType.DEFAULT_QUEUE, 10, "media-worker"))
          .isEmpty();
    } finally {
      client.resumeQueue(JobType.DEFAULT_QUEUE);
    }
    assertThat(store(List.of("media")).claim(JobType.DEFAULT_QUEUE, 10, "media-worker"))
        .extracting(ClaimedJob::id)
        .containsExactly(media);
  }

  @Test
  void theClaimOfAWorkerWithoutCapabilitiesReadsOnlyTheReadyIndexOfJobsThatNeedNone()
      throws Exception {
    client.enqueueAll(
        NUMBERED, numbered(0, 200), EnqueueOptions.builder().capability("media").build());
    client.enqueueAll(NUMBERED, numbered(200, 200), EnqueueOptions.DEFAULTS);
    db.execute("ANALYZE pgjobs.jobs");

    // A table this small is read whole whatever the indexes: forbid that, so the plan shows which
    // index the claim's conditions can use (the partial ready index only if the claim says
    // capability IS NULL).
    String plan =
        explain(ExplainableClaim.of(store(List.of()), JobType.DEFAULT_QUEUE, 100, "explain", null));

    assertThat(plan)
        .contains("jobs_ready_idx")
        .doesNotContain("jobs_ready_capability_idx")
        .doesNotContain("Seq Scan on jobs");
  }

  @Test
  void aWorkerRunsJobsOfATypeThatNeedsItsCapabilityAndTheJobKeepsItInHistory() {
    JobType<Transcode> transcode = JobType.of(Transcode.class);
    assertThat(transcode.capability()).isEqualTo("media");
    UUID id = enqueue(transcode, new Transcode(1));
    assertThat(client.get(id).orElseThrow().capability()).isEqualTo("media");

    start(worker().workerId("plain").register(transcode, (ctx, p) -> null));
    JobWorker media = start(
        worker().workerId("media").capabilities("media").register(transcode, (ctx, p) -> null));

    Job done = awaitState(id, JobState.SUCCEEDED);
    assertThat(done.lockedBy()).isEqualTo("media");
    assertThat(done.capability()).isEqualTo("media");
    assertThat(media).isNotNull();
  }

  @Test
  void theLongestCapabilityOnATypeWithTheLongestNameIsReportedThenRunByTheWorkerThatDeclaresIt() {
    String capability = "c".repeat(64); // the most the CHECK and the client allow
    JobType<Numbered> type = JobType.of("t".repeat(255), Numbered.class).withCapability(capability);
    UUID id = enqueue(type, new Numbered(1));
    QueueInfo queue = client.queues().stream()
        .filter(q -> q.name().equals(JobType.DEFAULT_QUEUE))
        .findFirst()
        .orElseThrow();
    assertThat(queue.unrunnable()).isEqualTo(new QueueInfo.Unrunnable(1, List.of(capability)));

    start(worker().workerId("long").capabilities(capability).register(type, (ctx, p) -> null));

    assertThat(awaitState(id, JobState.SUCCEEDED).capability()).isEqualTo(capability);
  }

  @Test
  void enqueueOptionsOverrideTheTypeCapabilityInBothDirections() {
    JobType<Numbered> needsGpu = NUMBERED.withCapability("gpu");
    UUID gpu = enqueue(needsGpu, new Numbered(1));
    UUID media = enqueue(
        needsGpu, new Numbered(2), EnqueueOptions.builder().capability("media").build());
    List<UUID> bulk = client.enqueueAll(needsGpu, numbered(3, 2), EnqueueOptions.DEFAULTS);

    assertThat(client.get(gpu).orElseThrow().capability()).isEqualTo("gpu");
    assertThat(client.get(media).orElseThrow().capability()).isEqualTo("media");
    assertThat(bulk)
        .allSatisfy(id -> assertThat(client.get(id).orElseThrow().capability()).isEqualTo("gpu"));
    assertThat(client.get(enqueue(NUMBERED, new Numbered(9))).orElseThrow().capability())
        .isNull();
  }

  // ---------------------------------------------------------------- the report

  @Test
  void jobsNeedingACapabilityOnlyADeadWorkerOrAnotherQueuesWorkerHasAreReported() {
    enqueue(
        NUMBERED, new Numbered(1), EnqueueOptions.builder().capability("gpu").build());
    enqueue(
        NUMBERED, new Numbered(2), EnqueueOptions.builder().capability("gpu").build());
    enqueue(
        NUMBERED, new Numbered(3), EnqueueOptions.builder().capability("media").build());
    enqueue(
        NUMBERED,
        new Numbered(4),
        EnqueueOptions.builder().capability("ocr").delay(Duration.ofHours(1)).build());
    enqueue(NUMBERED, new Numbered(5));
    // gpu: only a worker whose heartbeat is a minute old (dead); media: a live worker, of another
    // queue; ocr: a live worker of this queue (not reported).
    db.execute(
        "INSERT INTO pgjobs.workers (id, host, pid, queues, job_types, last_heartbeat, capabilities) VALUES"
            + " ('dead', 'h', 1, '{\"default\": 1}', '[]', now() - interval '1 minute', '{gpu}'),"
            + " ('other', 'h', 2, '{\"images\": 1}', '[]', now(), '{media}'),"
            + " ('ocr', 'h', 3, '{\"default\": 1}', '[]', now(), '{ocr}')");

    QueueInfo queue = client.queues().stream()
        .filter(q -> q.name().equals(JobType.DEFAULT_QUEUE))
        .findFirst()
        .orElseThrow();

    assertThat(queue.unrunnable()).isEqualTo(new QueueInfo.Unrunnable(3, List.of("gpu", "media")));
  }

  @Test
  void aQueueWhoseJobsEveryoneCanRunReportsNone() {
    enqueue(NUMBERED, new Numbered(1));
    QueueInfo queue = client.queues().get(0);
    assertThat(queue.unrunnable()).isEqualTo(QueueInfo.Unrunnable.NONE);
  }

  // ---------------------------------------------------------------- validation

  @Test
  void badCapabilityNamesAreRejectedSayingWhatIsAllowedAndNothingIsStored() {
    for (String bad : List.of("", "has space", "x".repeat(65), "é", "a,b")) {
      assertThatThrownBy(() -> enqueue(
              NUMBERED,
              new Numbered(1),
              EnqueueOptions.builder().capability(bad).build()))
          .isInstanceOf(InvalidJobException.class)
          .hasMessageContaining("capability")
          .hasMessageContaining("allowed: 1 to 64 characters of letters, digits and _ . -");
      assertThatThrownBy(() -> NUMBERED.withCapability(bad))
          .isInstanceOf(InvalidJobException.class)
          .hasMessageContaining("allowed: 1 to 64 characters");
      assertThatThrownBy(() -> JobWorker.builder(db.dataSource()).capabilities("media", bad))
          .isInstanceOf(InvalidJobException.class)
          .hasMessageContaining("capabilities: invalid capability");
    }
    assertThat(count("pgjobs.jobs")).isZero();
  }

  @Test
  void theDatabaseRefusesABadCapabilityEvenWithoutTheClient() {
    assertThatThrownBy(() -> JobRows.in(db)
            .type("t")
            .queue("q")
            .priority(50)
            .capability("bad name")
            .insert())
        .hasMessageContaining("jobs_capability_check");
  }

  // ---------------------------------------------------------------- helpers

  private static <P> UUID enqueue(JobType<P> type, P payload) {
    return client.enqueue(type, payload).job().id();
  }

  private static <P> UUID enqueue(JobType<P> type, P payload, EnqueueOptions options) {
    return client.enqueue(type, payload, options).job().id();
  }

  private static ExecutionStore store(List<String> capabilities) {
    return new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER), capabilities);
  }

  private static List<Numbered> numbered(int from, int count) {
    List<Numbered> list = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      list.add(new Numbered(from + i));
    }
    return list;
  }

  private static String explain(String sql) throws Exception {
    StringBuilder plan = new StringBuilder();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (PreparedStatement off = c.prepareStatement("SET LOCAL enable_seqscan = off")) {
        off.execute();
      }
      try (PreparedStatement ps = c.prepareStatement("EXPLAIN " + sql);
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
      } finally {
        c.rollback();
      }
    }
    return plan.toString();
  }

  private static List<String> strings(String sql) throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  /** Awaits {@code condition}, failing at once (with every process's output) if a worker process dies. */
  private void awaitOrExplain(
      String what, Duration deadline, java.util.concurrent.Callable<Boolean> condition) {
    try {
      await(what)
          .atMost(deadline)
          .pollInterval(Duration.ofMillis(200))
          .failFast(
              "a worker process died",
              () -> processes.stream().anyMatch(p -> !p.process().isAlive()))
          .until(condition);
    } catch (ConditionTimeoutException | TerminalFailureException e) {
      StringBuilder text = new StringBuilder(e.getMessage());
      processes.forEach(
          p -> text.append("\n----- ").append(p.pid()).append(" -----\n").append(p.output()));
      throw new AssertionError(text.toString(), e);
    }
  }
}
