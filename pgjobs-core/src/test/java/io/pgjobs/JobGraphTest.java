package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.testkit.TestDatabase;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Jobs that wait for other jobs ({@link JobGraph}): fan-out, fan-in, the failure policy per dependency,
 * dependencies on jobs enqueued before, atomic enqueue, and cancelling a blocked job.
 */
class JobGraphTest extends PgJobsTestBase {
  /** A step of a graph: its name (for the log) and whether it fails. */
  public record Step(String name, boolean fail) {}

  /** What a step returns: its name. */
  public record Done(String by) {}

  /** A queue no worker of these tests serves: its jobs wait until a test ends them by hand. */
  private static final EnqueueOptions UNSERVED =
      EnqueueOptions.builder().queue("graph-unserved").build();

  static final JobType<Step> STEP = JobType.of("graph-step", Step.class).withMaxAttempts(1);

  /** One run of a step's handler: when it started and ended. */
  record Run(String name, Instant start, Instant end) {}

  private final ConcurrentLinkedQueue<Run> runs = new ConcurrentLinkedQueue<>();

  private JobWorker.Builder stepWorker(int concurrency) {
    return worker().queue("default", concurrency).register(STEP, (ctx, s) -> {
      Instant start = Instant.now();
      if (s.fail()) {
        runs.add(new Run(s.name(), start, Instant.now()));
        throw new IllegalStateException("step " + s.name() + " fails");
      }
      runs.add(new Run(s.name(), start, Instant.now()));
      return new Done(s.name());
    });
  }

  private Map<String, Run> runsByName() {
    Map<String, Run> byName = new ConcurrentHashMap<>();
    for (Run r : runs) {
      assertThat(byName.put(r.name(), r)).as("step %s ran once", r.name()).isNull();
    }
    return byName;
  }

  @Test
  void aFanInJobRunsOnceAfterEveryParentSucceededAndEachParentAfterTheRoot() {
    JobGraph.Builder graph = JobGraph.builder().add("root", STEP, new Step("root", false));
    List<Dependency> all = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      graph.add("mid-" + i, STEP, new Step("mid-" + i, false), Dependency.on("root"));
      all.add(Dependency.on("mid-" + i));
    }
    graph.add("join", STEP, new Step("join", false), all.toArray(Dependency[]::new));
    Map<String, UUID> ids = client.enqueueGraph(graph.build()).ids();

    assertThat(client.get(ids.get("root")).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    assertThat(client.get(ids.get("mid-0")).orElseThrow().state()).isEqualTo(JobState.BLOCKED);
    assertThat(client.get(ids.get("join")).orElseThrow().state()).isEqualTo(JobState.BLOCKED);

    // 40 lanes: the middle jobs end at once, in many completion batches, and race to unblock
    // "join".
    start(stepWorker(40));
    awaitState(ids.get("join"), JobState.SUCCEEDED);

    Map<String, Run> byName = runsByName();
    assertThat(byName).hasSize(42);
    for (int i = 0; i < 40; i++) {
      Run mid = byName.get("mid-" + i);
      assertThat(mid.start()).isAfterOrEqualTo(byName.get("root").end());
      assertThat(byName.get("join").start()).isAfterOrEqualTo(mid.end());
    }
    assertThat(client.parents(ids.get("join"))).hasSize(40).allSatisfy(p -> {
      assertThat(p.state()).isEqualTo(JobState.SUCCEEDED);
      assertThat(p.output()).contains("\"by\"").contains("\"mid-");
    });
  }

  @Test
  void aBlockedJobIsNotClaimedWhileALaterJobOfItsQueueRuns() {
    // The parent waits in a queue nobody serves; the child is first in its queue.
    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add("parent", STEP, new Step("parent", false), UNSERVED)
            .add("child", STEP, new Step("child", false), Dependency.on("parent"))
            .build())
        .ids();
    UUID later = client.enqueue(STEP, new Step("later", false)).job().id();

    start(stepWorker(1));
    awaitState(later, JobState.SUCCEEDED);
    assertThat(client.get(ids.get("child")).orElseThrow().state()).isEqualTo(JobState.BLOCKED);
    assertThat(runsByName()).containsOnlyKeys("later");
    assertThat(count("SELECT waiting_on FROM pgjobs.jobs WHERE id = '" + ids.get("child") + "'"))
        .isEqualTo(1);
  }

  @Test
  void aFailedParentCancelsWhatWaitsOnItButNotWhatRunsAnyway() {
    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add("a", STEP, new Step("a", true))
            .add("b", STEP, new Step("b", false), Dependency.on("a"))
            .add("c", STEP, new Step("c", false), Dependency.on("b"))
            .add("d", STEP, new Step("d", false), Dependency.on("a").runAnyway())
            .add(
                "e",
                STEP,
                new Step("e", false),
                Dependency.on("d"),
                Dependency.on("b").runAnyway())
            .build())
        .ids();

    start(stepWorker(4));
    awaitState(ids.get("e"), JobState.SUCCEEDED);

    assertThat(client.get(ids.get("a")).orElseThrow().state()).isEqualTo(JobState.FAILED);
    Job b = client.get(ids.get("b")).orElseThrow();
    assertThat(b.state()).isEqualTo(JobState.CANCELLED);
    assertThat(b.errors()).last().satisfies(err -> {
      assertThat(err.kind()).isEqualTo("dependency");
      assertThat(err.message()).contains("ended failed").contains(ids.get("a").toString());
    });
    assertThat(client.get(ids.get("c")).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
    assertThat(client.get(ids.get("d")).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
    assertThat(runsByName()).containsOnlyKeys("a", "d", "e");
    assertThat(client.parents(ids.get("e")))
        .extracting(JobParent::state)
        .containsExactlyInAnyOrder(JobState.SUCCEEDED, JobState.CANCELLED);
  }

  @Test
  void dependenciesOnJobsEnqueuedBeforeCountTheirOutcomeEvenIfTheyHaveEnded() {
    UUID ok = client.enqueue(STEP, new Step("ok", false)).job().id();
    UUID bad = client.enqueue(STEP, new Step("bad", true)).job().id();
    start(stepWorker(2));
    awaitState(ok, JobState.SUCCEEDED);
    awaitState(bad, JobState.FAILED);
    UUID waiting =
        client.enqueue(STEP, new Step("waiting", false), UNSERVED).job().id();

    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add("after-ok", STEP, new Step("after-ok", false), Dependency.onJob(ok))
            .add("after-bad", STEP, new Step("after-bad", false), Dependency.onJob(bad))
            .add(
                "after-bad-anyway",
                STEP,
                new Step("after-bad-anyway", false),
                Dependency.onJob(bad).runAnyway())
            .add("after-waiting", STEP, new Step("after-waiting", false), Dependency.onJob(waiting))
            .build())
        .ids();

    awaitState(ids.get("after-ok"), JobState.SUCCEEDED);
    awaitState(ids.get("after-bad-anyway"), JobState.SUCCEEDED);
    assertThat(client.get(ids.get("after-bad")).orElseThrow().state())
        .isEqualTo(JobState.CANCELLED);
    assertThat(client.get(ids.get("after-waiting")).orElseThrow().state())
        .isEqualTo(JobState.BLOCKED);

    // The waiting parent is cancelled: its child, waiting with the default policy, is cancelled
    // too.
    client.cancel(waiting);
    awaitState(ids.get("after-waiting"), JobState.CANCELLED);
  }

  @Test
  void cancellingABlockedJobCancelsWhatWaitsOnIt() {
    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add("p", STEP, new Step("p", false), UNSERVED)
            .add("q", STEP, new Step("q", false), Dependency.on("p"))
            .add("r", STEP, new Step("r", false), Dependency.on("q"))
            .build())
        .ids();
    assertThat(client.cancel(ids.get("q")).toString()).isNotEmpty();
    assertThat(client.get(ids.get("q")).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
    assertThat(client.get(ids.get("r")).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
    assertThat(client.get(ids.get("p")).orElseThrow().state()).isEqualTo(JobState.QUEUED);
  }

  @Test
  void aGraphEnqueuedInARolledBackTransactionLeavesNothing() throws Exception {
    long before = count("SELECT count(*) FROM pgjobs.job_dependencies");
    List<UUID> ids;
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      ids = List.copyOf(client
          .enqueueGraph(
              tx,
              JobGraph.builder()
                  .add("x", STEP, new Step("x", false))
                  .add("y", STEP, new Step("y", false), Dependency.on("x"))
                  .build())
          .ids()
          .values());
      tx.rollback();
    }
    for (UUID id : ids) {
      assertThat(client.get(id)).isEmpty();
    }
    assertThat(count("SELECT count(*) FROM pgjobs.job_dependencies")).isEqualTo(before);
  }

  /**
   * Ends the hot table's jobs matching {@code where} as succeeded in one statement, as a completion batch
   * does (moved to the history; the dependency trigger runs at its end).
   */
  private static String succeedWhere(String where) {
    return "WITH done AS (DELETE FROM pgjobs.jobs WHERE " + where + " RETURNING *)"
        + " INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts,"
        + " max_attempts, run_at, created_at, errors, finished_at)"
        + " SELECT id, type, queue, payload, priority, 'succeeded', 1, max_attempts, run_at,"
        + " created_at, errors, now() FROM done";
  }

  @Test
  void parentsEndingFindTheirChildrenByKeyWhenTheStatisticsPredateTheBlockedJobs()
      throws Exception {
    // The hot table analyzed while it held queued jobs and no blocked one (a busy queue); then a
    // graph's blocked jobs come in by COPY, which no analyze has seen yet.
    client.enqueueAll(
        STEP, java.util.Collections.nCopies(5_000, new Step("plain", false)), UNSERVED);
    db.execute("ANALYZE pgjobs.jobs");
    int pairs = 2_000;
    JobGraph.Builder graph = JobGraph.builder();
    for (int i = 0; i < pairs; i++) {
      graph.add("p" + i, STEP, new Step("p" + i, false), UNSERVED);
      graph.add("c" + i, STEP, new Step("c" + i, false), UNSERVED, Dependency.on("p" + i));
    }
    Map<String, UUID> ids = client.enqueueGraph(graph.build()).ids();
    List<String> ending = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      ending.add("'" + ids.get("p" + i) + "'");
    }
    long blockedIndexRead;
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (java.sql.Statement st = c.createStatement()) {
        // 50 parents succeed in one statement, as a completion batch writes them; its trigger
        // unblocks their 50 children among 2,000 blocked jobs. This connection's reads of the index
        // (its idx_tup_read, not yet in pg_stat_*; they include its earlier transactions' until the
        // server collects them: read before and after).
        String reads =
            "SELECT pg_stat_get_xact_tuples_returned('pgjobs.jobs_blocked_idx'::regclass)";
        long before;
        try (java.sql.ResultSet rs = st.executeQuery(reads)) {
          before = rs.next() ? rs.getLong(1) : 0;
        }
        st.execute(succeedWhere("id IN (" + String.join(",", ending) + ")"));
        try (java.sql.ResultSet rs = st.executeQuery(reads)) {
          blockedIndexRead = (rs.next() ? rs.getLong(1) : 0) - before;
        }
      }
      c.commit();
    }
    // Read whole, that index holds every blocked job: the planner, told by the statistics that none
    // is blocked, priced it at one row (V9).
    assertThat(blockedIndexRead)
        .as("entries of jobs_blocked_idx read to unblock 50 children of %d blocked jobs", pairs)
        .isZero();
    assertThat(client.get(ids.get("c0")).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    assertThat(client.get(ids.get("c49")).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    assertThat(client.get(ids.get("c50")).orElseThrow().state()).isEqualTo(JobState.BLOCKED);
  }

  /**
   * A parent's end updates its edges where they stand (V5: the edges' pages are filled half), not by a
   * new row version elsewhere with an entry in each of the table's two indexes.
   */
  @Test
  void aParentsEndUpdatesItsEdgesInPlace() throws Exception {
    int children = 1_000;
    JobGraph.Builder graph = JobGraph.builder();
    graph.add("root", STEP, new Step("root", false), UNSERVED);
    for (int i = 0; i < children; i++) {
      graph.add("c" + i, STEP, new Step("c" + i, false), UNSERVED, Dependency.on("root"));
    }
    Map<String, UUID> ids = client.enqueueGraph(graph.build()).ids();
    // This connection's counts of updates of the edges, and of heap-only ones among them (they
    // include its earlier transactions' until the server collects them: read before and after).
    String counts = "SELECT pg_stat_get_xact_tuples_updated('pgjobs.job_dependencies'::regclass),"
        + " pg_stat_get_xact_tuples_hot_updated('pgjobs.job_dependencies'::regclass)";
    long updated;
    long inPlace;
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (java.sql.Statement st = c.createStatement()) {
        long[] before = new long[2];
        try (java.sql.ResultSet rs = st.executeQuery(counts)) {
          rs.next();
          before[0] = rs.getLong(1);
          before[1] = rs.getLong(2);
        }
        st.execute(succeedWhere("id = '" + ids.get("root") + "'"));
        try (java.sql.ResultSet rs = st.executeQuery(counts)) {
          rs.next();
          updated = rs.getLong(1) - before[0];
          inPlace = rs.getLong(2) - before[1];
        }
      }
      c.commit();
    }
    assertThat(updated).as("edges resolved by the root's end").isEqualTo(children);
    // 0 of 1,000 with the pages filled whole (checked: the table set back to fillfactor 100); 832
    // here: most, not all, fit beside their row.
    assertThat(inPlace).as("of them updated on their own page").isGreaterThan(children * 7 / 10);
    assertThat(client.get(ids.get("c999")).orElseThrow().state()).isEqualTo(JobState.QUEUED);
  }

  @Test
  void aSessionWhoseFirstEndWasOneParentLooksUpAThousandParentsInOneScan() throws Exception {
    // The trigger learns how each parent ended from its finished row. Planned once per session at
    // its first call (two parents: a nested loop), that look probed each parent through the
    // partition's finished_at index, whose "= now()" matches every row the statement wrote: n
    // parents, n * n index entries (V9 plans it at each call). The partition is this hour's, new
    // and never analyzed, holding a busy hour's rows, as in W3G.
    db.execute("SELECT pgjobs.ensure_history_partitions(interval '1 hour', interval '2 hours')");
    db.execute(
        "INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts,"
            + " max_attempts, run_at, created_at, errors, finished_at)"
            + " SELECT gen_random_uuid(), 'filler', 'graph-UNSERVED', '{}', 50, 'succeeded', 1, 3, now(),"
            + " now(), '[]', now() FROM generate_series(1, 50000)");
    int parents = 1_000;
    JobGraph.Builder graph = JobGraph.builder();
    for (int i = 0; i <= parents; i++) {
      graph.add("p" + i, STEP, new Step("p" + i, false), UNSERVED);
      graph.add("c" + i, STEP, new Step("c" + i, false), UNSERVED, Dependency.on("p" + i));
    }
    Map<String, UUID> ids = client.enqueueGraph(graph.build()).ids();
    long historyIndexRead;
    try (Connection c = db.dataSource().getConnection();
        java.sql.Statement st = c.createStatement()) {
      // The session's first end: one parent (the trigger's statements are planned here).
      st.execute(succeedWhere("id = '" + ids.get("p" + parents) + "'"));
      c.setAutoCommit(false);
      st.execute(succeedWhere("has_dependents"));
      // This transaction's reads of every index of every history partition.
      try (java.sql.ResultSet rs =
          st.executeQuery("SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)"
              + " FROM pg_inherits AS h JOIN pg_index AS i ON i.indrelid = h.inhrelid"
              + " WHERE h.inhparent = 'pgjobs.finished_jobs'::regclass")) {
        rs.next();
        historyIndexRead = rs.getLong(1);
      }
      c.commit();
    }
    assertThat(historyIndexRead)
        .as("history index entries read to learn how %d parents ended", parents)
        .isLessThan(10L * parents);
    assertThat(client.get(ids.get("c0")).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    assertThat(client.get(ids.get("c" + (parents - 1))).orElseThrow().state())
        .isEqualTo(JobState.QUEUED);
  }

  @Test
  void aPayloadRefusedAfterTheFirstRowsWereSentStoresNothingAndNamesTheJob() {
    // enqueueGraph makes each job as its COPY reads it: the last job's payload is refused after the
    // first megabytes of rows went to the server. The COPY is cancelled, the transaction rolled
    // back.
    JobType<Step> checked = JobType.of("graph-checked", Step.class)
        .withValidator(s -> s.fail()
            ? List.of(new PayloadValidator.FieldProblem("fail", "must be false"))
            : List.of());
    long jobs = count("pgjobs.jobs");
    long edges = count("SELECT count(*) FROM pgjobs.job_dependencies");
    long names = count("SELECT count(*) FROM pgjobs.job_graph_names");
    int n = 20_000; // ~2.4 MB of rows: the COPY sends them in chunks of ~1 MB
    JobGraph.Builder graph = JobGraph.builder();
    for (int i = 0; i < n; i++) {
      Step step = new Step("n" + i, i == n - 1);
      if (i == 0) {
        graph.add("n" + i, checked, step);
      } else {
        graph.add("n" + i, checked, step, Dependency.on("n" + (i - 1)));
      }
    }
    JobGraph refused = graph.build();
    assertThatThrownBy(() -> client.enqueueGraph(refused))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("graph[n" + (n - 1) + "]")
        .hasMessageContaining("must be false");
    assertThat(count("pgjobs.jobs")).isEqualTo(jobs);
    assertThat(count("SELECT count(*) FROM pgjobs.job_dependencies")).isEqualTo(edges);
    assertThat(count("SELECT count(*) FROM pgjobs.job_graph_names")).isEqualTo(names);
    // The client's connection came back usable: the next graph goes in.
    Map<String, UUID> next = client
        .enqueueGraph(JobGraph.builder()
            .add("a", STEP, new Step("a", false), UNSERVED)
            .add("b", STEP, new Step("b", false), UNSERVED, Dependency.on("a"))
            .build())
        .ids();
    assertThat(client.get(next.get("b")).orElseThrow().state()).isEqualTo(JobState.BLOCKED);
    assertThat(count("pgjobs.jobs")).isEqualTo(jobs + 2);
  }

  @Test
  void badGraphsAreRefusedNamingTheJobAndStoreNothing() {
    long jobs = count("SELECT count(*) FROM pgjobs.jobs");
    assertThatThrownBy(() -> JobGraph.builder().build())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("add at least one");
    assertThatThrownBy(() -> JobGraph.builder()
            .add("a", STEP, new Step("a", false))
            .add("a", STEP, new Step("a", false)))
        .hasMessageContaining("graph[a]")
        .hasMessageContaining("names are unique");
    assertThatThrownBy(
            () -> JobGraph.builder().add("a", STEP, new Step("a", false), Dependency.on("b")))
        .hasMessageContaining("graph[a].after")
        .hasMessageContaining("no job named 'b'");
    assertThatThrownBy(
            () -> JobGraph.builder().add("a", STEP, new Step("a", false), Dependency.on("a")))
        .hasMessageContaining("cannot wait for itself");
    assertThatThrownBy(() -> JobGraph.builder()
            .add("a", STEP, new Step("a", false))
            .add(
                "b",
                STEP,
                new Step("b", false),
                Dependency.on("a"),
                Dependency.on("a").runAnyway()))
        .hasMessageContaining("waits twice for 'a'");
    assertThatThrownBy(() -> JobGraph.builder()
            .add(
                "a",
                STEP,
                new Step("a", false),
                EnqueueOptions.builder().idempotencyKey("k").build()))
        .hasMessageContaining("graph[a].idempotency_key");
    assertThatThrownBy(() -> JobGraph.builder().add("x".repeat(256), STEP, new Step("a", false)))
        .hasMessageContaining("1 to 255 characters, none of them U+0000")
        .hasMessageContaining("was 256");
    assertThatThrownBy(() -> JobGraph.builder().add("a\u0000b", STEP, new Step("a", false)))
        .hasMessageContaining("U+0000");
    // The longest name allowed, with awkward characters, goes in and reads back.
    String longest = "é\"'\\ ;\t💥".repeat(30).substring(0, 255);
    Map<String, UUID> named = client
        .enqueueGraph(JobGraph.builder()
            .add(longest, STEP, new Step("n", false), UNSERVED)
            .build())
        .ids();
    assertThat(client.dependencyGraph(named.get(longest), 10).jobs().get(0).name())
        .isEqualTo(longest);
    jobs += 1;
    UUID unknown = UUID.randomUUID();
    JobGraph dangling = JobGraph.builder()
        .add("first", STEP, new Step("first", false))
        .add("a", STEP, new Step("a", false), Dependency.onJob(unknown))
        .build();
    assertThatThrownBy(() -> client.enqueueGraph(dangling).ids())
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("graph[a].after")
        .hasMessageContaining("job " + unknown + " does not exist");
    assertThat(count("SELECT count(*) FROM pgjobs.jobs")).isEqualTo(jobs);
  }

  /**
   * One statement that ends several parents counts each child as often as it ended that child's parents:
   * a child of two parents ended together is queued at once, a child of one of them counts down and
   * waits for its other; children of parents that share none each count one; a child that was to run
   * only if its parent failed is cancelled when it succeeds. (A completion batch ends many parents in one
   * statement; the dependency trigger runs once for all of them.)
   */
  @Test
  void aStatementEndingParentsCountsEachChildAsOftenAsItEndedItsParents() throws Exception {
    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add("a", STEP, new Step("a", false), UNSERVED)
            .add("b", STEP, new Step("b", false), UNSERVED)
            .add("c", STEP, new Step("c", false), UNSERVED)
            .add("d", STEP, new Step("d", false), UNSERVED)
            .add(
                "ab", STEP, new Step("ab", false), UNSERVED, Dependency.on("a"), Dependency.on("b"))
            .add(
                "ac", STEP, new Step("ac", false), UNSERVED, Dependency.on("a"), Dependency.on("c"))
            .add("e", STEP, new Step("e", false), UNSERVED)
            .add("c1", STEP, new Step("c1", false), UNSERVED, Dependency.on("c"))
            .add(
                "ce", STEP, new Step("ce", false), UNSERVED, Dependency.on("c"), Dependency.on("e"))
            .add("d1", STEP, new Step("d1", false), UNSERVED, Dependency.on("d"))
            .add(
                "dOnly",
                STEP,
                new Step("dOnly", false),
                UNSERVED,
                Dependency.on("d").onlyIfItFails())
            .build())
        .ids();
    java.util.function.Function<String, String> waiting = name -> queryText(
        "SELECT state || ':' || coalesce(waiting_on::text, '-') FROM pgjobs.jobs WHERE id = '"
            + ids.get(name) + "'");

    // a and b in one statement: "ab" counts two, "ac" one of its two.
    db.execute(succeedWhere("id IN ('" + ids.get("a") + "', '" + ids.get("b") + "')"));
    assertThat(waiting.apply("ab")).isEqualTo("queued:-");
    assertThat(waiting.apply("ac")).isEqualTo("blocked:1");

    // c and d in one statement, their children distinct: "ac" and "c1" end their wait, "d1" too,
    // "ce" still waits for e; "dOnly" was to run only if d failed: cancelled.
    db.execute(succeedWhere("id IN ('" + ids.get("c") + "', '" + ids.get("d") + "')"));
    assertThat(waiting.apply("ac")).isEqualTo("queued:-");
    assertThat(waiting.apply("c1")).isEqualTo("queued:-");
    assertThat(waiting.apply("d1")).isEqualTo("queued:-");
    assertThat(waiting.apply("ce")).isEqualTo("blocked:1");
    assertThat(client.get(ids.get("dOnly")).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
  }

  @Test
  void aParentThatIsRetriedAfterItFailedResolvesItsEdgesOnce() {
    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add("flaky", STEP, new Step("flaky", true))
            .add("gate", STEP, new Step("gate", false), UNSERVED)
            .add(
                "child",
                STEP,
                new Step("child", false),
                Dependency.on("flaky").runAnyway(),
                Dependency.on("gate"))
            .build())
        .ids();
    start(stepWorker(1));
    awaitState(ids.get("flaky"), JobState.FAILED);
    client.retry(ids.get("flaky"), true);
    awaitState(ids.get("flaky"), JobState.FAILED, Duration.ofSeconds(20));
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> runs.stream().filter(r -> r.name().equals("flaky")).count() == 2);
    awaitState(ids.get("flaky"), JobState.FAILED);
    // Ended twice, counted once: the child still waits for "gate".
    assertThat(client.get(ids.get("child")).orElseThrow().state()).isEqualTo(JobState.BLOCKED);
    assertThat(count("SELECT waiting_on FROM pgjobs.jobs WHERE id = '" + ids.get("child") + "'"))
        .isEqualTo(1);
  }

  @Test
  void pruningAFinishedChildRemovesItsEdges() throws Exception {
    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add("p", STEP, new Step("p", false), UNSERVED)
            .add("c", STEP, new Step("c", false), Dependency.on("p"))
            .build())
        .ids();
    client.cancel(ids.get("p"));
    awaitState(ids.get("c"), JobState.CANCELLED);
    String edges =
        "SELECT count(*) FROM pgjobs.job_dependencies WHERE child_id = '" + ids.get("c") + "'";
    assertThat(count(edges)).isEqualTo(1);
    pruneAllFinishedRowByRow();
    assertThat(client.get(ids.get("c"))).isEmpty();
    assertThat(count(edges)).isZero();
    assertThat(count(
            "SELECT count(*) FROM pgjobs.job_graph_names WHERE job_id = '" + ids.get("c") + "'"))
        .isZero();
    assertThat(count(
            "SELECT count(*) FROM pgjobs.job_graph_names WHERE job_id = '" + ids.get("p") + "'"))
        .as("the parent's name, its finished row pruned too")
        .isZero();
  }

  @Test
  void aGraphOfTenThousandJobsByTypeNameGoesInWhole() {
    // The largest graph POST /graphs takes, built as it builds it: by type name, payloads as maps.
    int size = 10_000;
    JobGraph.Builder graph =
        JobGraph.builder().add("start", "graph-step", Map.of("name", "start", "fail", false), null);
    for (int i = 1; i < size - 1; i++) {
      graph.add(
          "n" + i,
          "graph-step",
          Map.of("name", "n" + i, "fail", false),
          UNSERVED,
          Dependency.on("start"));
    }
    graph.add(
        "end",
        "graph-step",
        Map.of("name", "end", "fail", false),
        null,
        Dependency.on("start"),
        Dependency.on("n1").runAnyway());
    Map<String, UUID> ids = client.enqueueGraph(graph.build()).ids();

    assertThat(ids).hasSize(size);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE id = ANY('" + uuidArray(ids.values())
            + "'::uuid[]) AND state = 'blocked'"))
        .isEqualTo(size - 1);
    assertThat(count("SELECT waiting_on FROM pgjobs.jobs WHERE id = '" + ids.get("end") + "'"))
        .isEqualTo(2);
  }

  @Test
  void aGraphStopsAtItsLargestSizeAndAJobAtItsMostParents() {
    // Built only (the builder refuses; nothing reaches the database): one payload shared by every
    // job.
    Map<String, Object> payload = Map.of("name", "x", "fail", false);
    JobGraph.Builder graph = JobGraph.builder();
    for (int i = 0; i < JobGraph.MAX_JOBS; i++) {
      graph.add("n" + i, "graph-step", payload, null);
    }
    assertThatThrownBy(() -> graph.add("one-more", "graph-step", payload, null))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("at most 1000000 jobs");

    Dependency[] most = new Dependency[JobGraph.MAX_PARENTS];
    for (int i = 0; i < most.length; i++) {
      most[i] = Dependency.on("n" + i);
    }
    JobGraph.Builder fanIn = JobGraph.builder();
    for (int i = 0; i <= JobGraph.MAX_PARENTS; i++) {
      fanIn.add("n" + i, "graph-step", payload, null);
    }
    fanIn.add("callback", "graph-step", payload, null, most);
    Dependency[] tooMany = java.util.Arrays.copyOf(most, most.length + 1);
    tooMany[most.length] = Dependency.on("n" + JobGraph.MAX_PARENTS);
    assertThatThrownBy(() -> fanIn.add("over", "graph-step", payload, null, tooMany))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("at most 100000 jobs, was 100001");
  }

  private static String uuidArray(java.util.Collection<UUID> ids) {
    return "{" + String.join(",", ids.stream().map(UUID::toString).toList()) + "}";
  }

  @Test
  void anAnyFailedCallbackRunsOnceAtTheFirstFailureAndIsCancelledWhenEveryJobSucceeded() {
    // Batch callbacks: "any failed" (onlyIfItFails), "all finished" (runAnyway), "all succeeded"
    // (on).
    JobGraph.Builder failing = JobGraph.builder();
    JobGraph.Builder succeeding = JobGraph.builder();
    List<Dependency> anyFailedA = new ArrayList<>();
    List<Dependency> anyFailedB = new ArrayList<>();
    List<Dependency> allFinishedA = new ArrayList<>();
    List<Dependency> allSucceededA = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      failing.add("a" + i, STEP, new Step("a" + i, i == 7));
      anyFailedA.add(Dependency.on("a" + i).onlyIfItFails());
      allFinishedA.add(Dependency.on("a" + i).runAnyway());
      allSucceededA.add(Dependency.on("a" + i));
      succeeding.add("b" + i, STEP, new Step("b" + i, false));
      anyFailedB.add(Dependency.on("b" + i).onlyIfItFails());
    }
    failing.add(
        "a-any-failed",
        STEP,
        new Step("a-any-failed", false),
        anyFailedA.toArray(Dependency[]::new));
    failing.add(
        "a-all-finished",
        STEP,
        new Step("a-all-finished", false),
        allFinishedA.toArray(Dependency[]::new));
    failing.add(
        "a-all-succeeded",
        STEP,
        new Step("a-all-succeeded", false),
        allSucceededA.toArray(Dependency[]::new));
    succeeding.add(
        "b-any-failed",
        STEP,
        new Step("b-any-failed", false),
        anyFailedB.toArray(Dependency[]::new));
    Map<String, UUID> a = client.enqueueGraph(failing.build()).ids();
    Map<String, UUID> b = client.enqueueGraph(succeeding.build()).ids();

    // 30 lanes: the 30 parents of each callback end at once, in many transactions.
    start(stepWorker(30));
    awaitState(a.get("a-any-failed"), JobState.SUCCEEDED);
    awaitState(a.get("a-all-finished"), JobState.SUCCEEDED);
    Job notNeeded = awaitState(b.get("b-any-failed"), JobState.CANCELLED);
    assertThat(notNeeded.errors())
        .last()
        .satisfies(e -> assertThat(e.message()).startsWith("not needed"));
    Job allSucceeded = awaitState(a.get("a-all-succeeded"), JobState.CANCELLED);
    assertThat(allSucceeded.errors())
        .last()
        .satisfies(e -> assertThat(e.message()).contains("ended failed"));

    Map<String, Run> byName = runsByName(); // each ran at most once
    assertThat(byName)
        .containsKeys("a-any-failed", "a-all-finished")
        .doesNotContainKeys("b-any-failed");
    assertThat(byName.get("a-any-failed").start())
        .isAfterOrEqualTo(byName.get("a7").end());
    for (int i = 0; i < 30; i++) {
      assertThat(byName.get("a-all-finished").start())
          .isAfterOrEqualTo(byName.get("a" + i).end());
    }
  }

  @Test
  void anAnyFailedCallbackOnJobsThatHadAlreadyEndedRunsOrIsCancelledAtOnce() {
    UUID ok = client.enqueue(STEP, new Step("ok", false)).job().id();
    UUID bad = client.enqueue(STEP, new Step("bad", true)).job().id();
    start(stepWorker(2));
    awaitState(ok, JobState.SUCCEEDED);
    awaitState(bad, JobState.FAILED);

    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add(
                "fired",
                STEP,
                new Step("fired", false),
                Dependency.onJob(ok).onlyIfItFails(),
                Dependency.onJob(bad).onlyIfItFails())
            .add(
                "unneeded",
                STEP,
                new Step("unneeded", false),
                Dependency.onJob(ok).onlyIfItFails())
            .build())
        .ids();
    awaitState(ids.get("fired"), JobState.SUCCEEDED);
    assertThat(client.get(ids.get("unneeded")).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
    assertThatThrownBy(() -> JobGraph.builder()
            .add("a", STEP, new Step("a", false))
            .add("b", STEP, new Step("b", false))
            .add(
                "c",
                STEP,
                new Step("c", false),
                Dependency.on("a").onlyIfItFails(),
                Dependency.on("b")))
        .hasMessageContaining("graph[c].after")
        .hasMessageContaining("waits only on such dependencies");
  }

  /** A parent that succeeds in its own transaction and holds it open until told ({@code hold}). */
  public record Held(String name, boolean hold) {}

  static final JobType<Held> HELD = JobType.of("graph-held", Held.class).withMaxAttempts(1);

  @Test
  void twoParentsSucceedingAtOnceInTwoTransactionsCountBothAndTheLastDecides() throws Exception {
    // The race a fan-in must survive, made to happen: parent "first" succeeds in its transaction
    // and holds it open (its end has counted itself on the child's row); parent "second" succeeds
    // in another and waits for that row; then "first" commits. The child runs only if a parent
    // fails: both succeeded, so it must end cancelled as not needed, never queued and never left
    // blocked.
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add("first", HELD, new Held("first", true))
            .add("second", HELD, new Held("second", false))
            .add(
                "watcher",
                STEP,
                new Step("watcher", false),
                Dependency.on("first").onlyIfItFails(),
                Dependency.on("second").onlyIfItFails())
            .build())
        .ids();
    java.util.concurrent.atomic.AtomicBoolean firstCompleted =
        new java.util.concurrent.atomic.AtomicBoolean();
    start(stepWorker(4).register(HELD, (ctx, h) -> {
      if (!h.hold()) {
        // Starts after "first" has completed in its open transaction.
        await().atMost(Duration.ofSeconds(20)).untilTrue(firstCompleted);
      }
      try (Connection tx = ctx.dataSource().getConnection()) {
        tx.setAutoCommit(false);
        ctx.complete(tx, null);
        if (h.hold()) {
          firstCompleted.set(true);
          release.await();
        }
        tx.commit();
      }
      return null;
    }));
    // "second"'s end waits for the child's row, which "first"'s open transaction holds.
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> count("SELECT count(*) FROM pg_stat_activity"
                + " WHERE wait_event_type = 'Lock' AND datname = current_database()")
            > 0);
    release.countDown();

    Job watcher = awaitState(ids.get("watcher"), JobState.CANCELLED);
    assertThat(watcher.errors())
        .last()
        .satisfies(e -> assertThat(e.message()).startsWith("not needed"));
    awaitState(ids.get("first"), JobState.SUCCEEDED);
    awaitState(ids.get("second"), JobState.SUCCEEDED);
    assertThat(runsByName()).doesNotContainKey("watcher");
  }

  @Test
  void aCascadeAndAnotherEndOfTheSameJobsParentsLockInOneOrder() throws Exception {
    // p1's cancellation (transaction A) cancels c and y, and g through c; p2 and p3, cancelled
    // together in one statement (B), count themselves off y and g ('run' edges). Ids grow in the
    // order of add, so c < g < y. A third transaction holds c's row, so that A waits there; then B
    // runs. Before V8, A had locked y first (a child waiting for two parents) and locked c and g
    // only as its cascade deleted them: B locked g, waited for y, and once c was free A waited for
    // g, a deadlock PostgreSQL ended by aborting one of them. Now A's first lock takes c, g and y
    // in id order: it holds nothing while it waits for c, B goes through, then A cancels the three.
    Map<String, UUID> ids = client
        .enqueueGraph(JobGraph.builder()
            .add(
                "p1",
                STEP,
                new Step("p1", false),
                EnqueueOptions.builder().queue("cascade-a").build())
            .add(
                "p2",
                STEP,
                new Step("p2", false),
                EnqueueOptions.builder().queue("cascade-b").build())
            .add(
                "p3",
                STEP,
                new Step("p3", false),
                EnqueueOptions.builder().queue("cascade-b").build())
            .add("c", STEP, new Step("c", false), Dependency.on("p1"))
            .add(
                "g",
                STEP,
                new Step("g", false),
                Dependency.on("c"),
                Dependency.on("p3").runAnyway())
            .add(
                "y",
                STEP,
                new Step("y", false),
                Dependency.on("p1"),
                Dependency.on("p2").runAnyway())
            .build())
        .ids();
    assertThat(count("SELECT count(*) FROM (SELECT '" + ids.get("c") + "'::uuid < '" + ids.get("g")
            + "'::uuid AND '" + ids.get("g") + "'::uuid < '" + ids.get("y") + "'::uuid AS ordered)"
            + " AS o WHERE ordered"))
        .as("c < g < y, as PostgreSQL orders uuids")
        .isOne();

    ExecutorService ends = Executors.newFixedThreadPool(2);
    try (Connection holder = db.dataSource().getConnection();
        Connection a = db.dataSource().getConnection()) {
      holder.setAutoCommit(false);
      try (var lock =
          holder.prepareStatement("SELECT 1 FROM pgjobs.jobs WHERE id = ? FOR UPDATE")) {
        lock.setObject(1, ids.get("c"));
        lock.executeQuery().close();
      }
      a.setAutoCommit(false);
      long aPid = TestDatabase.backendPid(a);
      Future<CancelResult> endA = ends.submit(() -> {
        CancelResult r = client.cancel(a, ids.get("p1"));
        a.commit();
        return r;
      });
      await("A waits for c's row")
          .atMost(Duration.ofSeconds(20))
          .until(() -> count("SELECT count(*) FROM pg_stat_activity WHERE pid = " + aPid
                  + " AND wait_event_type = 'Lock'")
              == 1);
      Future<CancelCounts> endB =
          ends.submit(() -> client.cancelAll(Set.of(), Set.of("cascade-b"), Set.of()));
      // B either went through (it waits for nothing A holds) or waits for a row A holds.
      await("B ended or waits")
          .atMost(Duration.ofSeconds(20))
          .until(() -> endB.isDone()
              || count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                      + " AND datname = current_database()")
                  >= 2);
      holder.commit();

      assertThat(endB.get(30, TimeUnit.SECONDS).cancelled())
          .as("B's cancellations")
          .isEqualTo(2);
      assertThat(endA.get(30, TimeUnit.SECONDS).outcome())
          .as("A's cancellation")
          .isEqualTo(CancelResult.Outcome.CANCELLED);
    } finally {
      ends.shutdownNow();
    }
    for (String name : List.of("p1", "p2", "p3", "c", "g", "y")) {
      assertThat(client.get(ids.get(name)).orElseThrow().state())
          .as(name)
          .isEqualTo(JobState.CANCELLED);
    }
  }

  @Test
  void aGraphEnqueuedAgainUnderItsKeyIsStoredOnceAndAnotherGraphUnderItIsRefused()
      throws Exception {
    JobGraph graph = JobGraph.builder()
        .idempotencyKey("nightly-2026-11-29")
        .add("a", STEP, new Step("a", false), UNSERVED)
        .add("b", STEP, new Step("b", false), Dependency.on("a"))
        .build();
    EnqueuedGraph first = client.enqueueGraph(graph);
    assertThat(first.replayed()).isFalse();
    long jobs = count("SELECT count(*) FROM pgjobs.jobs");

    // The same graph again, and concurrently from eight threads: nothing new, the first one's jobs.
    EnqueuedGraph again = client.enqueueGraph(graph);
    assertThat(again.replayed()).isTrue();
    assertThat(again.ids()).isEqualTo(first.ids());
    List<java.util.concurrent.Future<EnqueuedGraph>> racing = new ArrayList<>();
    try (var pool = java.util.concurrent.Executors.newFixedThreadPool(8)) {
      for (int i = 0; i < 8; i++) {
        racing.add(pool.submit(() -> client.enqueueGraph(graph)));
      }
      for (var f : racing) {
        assertThat(f.get().ids()).isEqualTo(first.ids());
      }
    }
    assertThat(count("SELECT count(*) FROM pgjobs.jobs")).isEqualTo(jobs);

    // A different graph under the key (another payload) is refused, naming the first graph's first
    // job.
    JobGraph other = JobGraph.builder()
        .idempotencyKey("nightly-2026-11-29")
        .add("a", STEP, new Step("a", true), UNSERVED)
        .add("b", STEP, new Step("b", false), Dependency.on("a"))
        .build();
    assertThatThrownBy(() -> client.enqueueGraph(other))
        .isInstanceOf(IdempotencyKeyReusedException.class)
        .hasMessageContaining(first.id("a").toString());
    assertThat(count("SELECT count(*) FROM pgjobs.jobs")).isEqualTo(jobs);
    assertThatThrownBy(() -> JobGraph.builder().idempotencyKey(""))
        .hasMessageContaining("graph.idempotency_key");

    // The key goes with the graph's first job when its finished row is pruned.
    client.cancel(first.id("a"));
    pruneAllFinishedRowByRow();
    assertThat(count(
            "SELECT count(*) FROM pgjobs.graph_keys WHERE idempotency_key = 'nightly-2026-11-29'"))
        .isZero();
  }

  /**
   * Prunes every finished job through the history's row-by-row path: moved into the default partition
   * (no partition covers 2001), then deleted from it with their side rows as retention would. The drop of
   * whole partitions deletes the same side rows: HistoryPartitionsTest.
   */
  private static void pruneAllFinishedRowByRow() throws Exception {
    db.execute(
        "UPDATE pgjobs.finished_jobs SET finished_at = timestamptz '2001-01-01 00:00:00+00'");
    new io.pgjobs.store.WorkerStore(
            db.dataSource(),
            "pgjobs",
            new io.pgjobs.json.PayloadCodec(io.pgjobs.json.PayloadCodec.DEFAULT_MAPPER))
        .pruneDefaultPartition(Duration.ZERO, 10_000);
  }
}
