package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimCursor;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.store.ExplainableClaim;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The claim of a partitioned queue resumes at the worker's claim cursor, as the unlimited claim does
 * ({@link ClaimCursor}, {@link LongTransactionClaimTest}): its fast path reads the head of the queue just
 * past the jobs its earlier claims took, so a transaction held open elsewhere, which keeps those jobs'
 * dead index entries, does not make every claim step over them again (W5 with limits on). The cursor moves
 * past a claim's jobs only when the claim took the whole head it read: a job it left behind (its partition
 * at its limit) must still be found by the next claim.
 */
class LimitedClaimCursorTest extends PgJobsTestBase {
  /** A probe duration above {@link ClaimCursor#CHEAP_PROBE_NANOS}: claims then only resume. */
  private static final long SLOW_PROBE = TimeUnit.MILLISECONDS.toNanos(50);

  private static final String QUEUE = JobType.DEFAULT_QUEUE;

  private static ExecutionStore store() {
    return new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
  }

  @Test
  void aPartitionedClaimWithATransactionOpenElsewhereResumesPastTheJobsItsCursorPassed()
      throws Exception {
    client.setLimits(QUEUE, QueueLimits.builder().partitionBy("input.n").build());
    // 500 partitions in turn: every head of 500 holds each partition once (no one crowds it).
    claimPastDeadEntriesWithATransactionOpen(
        "partitioned claim of 100",
        i -> i % 500,
        (claim, ids, claimed) -> {
          assertThat(claim.jobs()).hasSize(500);
          assertThat(claim.resumable())
              .as("a head no partition crowds, taken whole")
              .isTrue();
        },
        (store, cursor, ids, after) -> {
          ExecutionStore.LimitedClaim next =
              store.claimLimited(null, QUEUE, 100, "w", after, cursor);
          assertThat(next.jobs())
              .extracting(ClaimedJob::id)
              .as("the next 100 in enqueue order")
              .containsExactlyElementsOf(ids.subList(19_000, 19_100));
        });
  }

  /**
   * A queue with limits but no partitions (a global concurrency here; a rate alike) resumes as the
   * unlimited claim does: its claim takes the first jobs just past the cursor, so the dead entries of the
   * jobs it claimed earlier, which a transaction held open elsewhere keeps, are not stepped over again.
   */
  @Test
  void aGlobalLimitClaimWithATransactionOpenElsewhereResumesPastTheJobsItsCursorPassed()
      throws Exception {
    client.setLimits(QUEUE, QueueLimits.builder().globalConcurrency(10_000).build());
    claimPastDeadEntriesWithATransactionOpen(
        "claim of 100 under a global limit",
        i -> i,
        (claim, ids, claimed) -> {
          assertThat(claim.jobs())
              .extracting(ClaimedJob::id)
              .as("the next 500 in enqueue order")
              .containsExactlyElementsOf(ids.subList(claimed, claimed + 500));
          assertThat(claim.resumable()).as("the head, taken whole").isTrue();
        },
        (store, cursor, ids, after) -> {});
  }

  /** Checks one claim of {@link #claimPastDeadEntriesWithATransactionOpen}, {@code claimed} jobs in. */
  @FunctionalInterface
  private interface EachClaim {
    void check(ExecutionStore.LimitedClaim claim, List<UUID> ids, int claimed) throws Exception;
  }

  /** What {@link #claimPastDeadEntriesWithATransactionOpen} does last, the transaction still open. */
  @FunctionalInterface
  private interface Afterwards {
    void run(ExecutionStore store, ClaimCursor cursor, List<UUID> ids, String after)
        throws Exception;
  }

  /**
   * With a transaction held open elsewhere (it keeps every later dead row version): enqueues 20,000 jobs,
   * job i numbered {@code number(i)}, claims 19,000 of them in claims of 500 through one cursor (each
   * checked by {@code eachClaim}, then finished), and asserts that a resumed claim of 100 reads only the
   * head of the ready index while a full pass steps over the 19,000 dead entries; then {@code afterwards}.
   */
  private void claimPastDeadEntriesWithATransactionOpen(
      String what,
      java.util.function.IntUnaryOperator number,
      EachClaim eachClaim,
      Afterwards afterwards)
      throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    try (Connection idle = db.dataSource().getConnection()) {
      idle.setAutoCommit(false);
      try (Statement st = idle.createStatement()) {
        st.execute("SELECT txid_current()"); // holds every later dead row version
      }
      List<Numbered> jobs = new ArrayList<>();
      for (int i = 0; i < 20_000; i++) {
        jobs.add(new Numbered(number.applyAsInt(i)));
      }
      List<UUID> ids = client.enqueueAll(NUMBERED, jobs, EnqueueOptions.DEFAULTS);
      String after = null;
      for (int claimed = 0; claimed < 19_000; ) {
        ExecutionStore.LimitedClaim claim =
            store.claimLimited(null, QUEUE, 500, "w", after, cursor);
        eachClaim.check(claim, ids, claimed);
        after = claim.lastPartition();
        claimed += claim.jobs().size();
        db.execute("DELETE FROM pgjobs.jobs WHERE state = 'running'"); // finished
      }
      cursor.probed(
          List.of(), System.nanoTime(), SLOW_PROBE); // as while a long transaction is open

      long resumed = readyEntriesReadBy(ExplainableClaim.limited(QUEUE, 100, "w", cursor));
      long fromTheStart = readyEntriesReadBy(ExplainableClaim.limited(QUEUE, 100, "w", null));
      System.out.printf(
          "%s with 19,000 dead entries behind it and a transaction open: %d entries of the ready index"
              + " read resuming, %d from the start%n",
          what, resumed, fromTheStart);
      assertThat(resumed)
          .as(
              "entries read resuming: the head of 100 and the levels' probes, none of the dead ones")
          .isLessThan(200);
      assertThat(fromTheStart)
          .as("the full pass steps over the dead entries")
          .isGreaterThan(19_000);

      afterwards.run(store, cursor, ids, after);
      idle.rollback();
    }
  }

  /**
   * A claim of the head alone comes back from the database unordered (claim_limited leaves the sort to
   * its caller, as the unlimited claim does): the worker gets its jobs in claim order all the same, the
   * more urgent level first, each level in enqueue order.
   */
  @Test
  void aResumedLimitedClaimHandsItsJobsOverInClaimOrder() throws Exception {
    client.setLimits(QUEUE, QueueLimits.builder().globalConcurrency(100).build());
    ExecutionStore store = store();
    List<Numbered> jobs = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      jobs.add(new Numbered(i));
    }
    List<UUID> normal = client.enqueueAll(NUMBERED, jobs, EnqueueOptions.DEFAULTS);
    List<UUID> urgent = client.enqueueAll(
        NUMBERED, jobs, EnqueueOptions.builder().priority(Priority.HIGH).build());
    ExecutionStore.LimitedClaim claim =
        store.claimLimited(null, QUEUE, 10, "w", null, new ClaimCursor());
    assertThat(claim.resumable()).isTrue();
    List<UUID> expected = new ArrayList<>(urgent);
    expected.addAll(normal);
    assertThat(claim.jobs()).extracting(ClaimedJob::id).containsExactlyElementsOf(expected);
  }

  @Test
  void aJobLeftBehindForItsPartitionsLimitIsClaimedOnceThePartitionFrees() throws Exception {
    client.setLimits(
        QUEUE,
        QueueLimits.builder().partitionBy("input.n").partitionConcurrency(2).build());
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    List<UUID> first = client.enqueueAll(
        NUMBERED, List.of(new Numbered(0), new Numbered(0)), EnqueueOptions.DEFAULTS);
    ExecutionStore.LimitedClaim claim = store.claimLimited(null, QUEUE, 2, "w", null, cursor);
    assertThat(claim.jobs()).extracting(ClaimedJob::id).containsExactlyElementsOf(first);
    cursor.probed(List.of(), System.nanoTime(), SLOW_PROBE); // claims only resume from here on

    // Partition 0 is at its limit: its third job heads the queue, five other partitions follow.
    UUID third = client.enqueue(NUMBERED, new Numbered(0)).job().id();
    List<UUID> others = client.enqueueAll(
        NUMBERED,
        List.of(
            new Numbered(1), new Numbered(2), new Numbered(3), new Numbered(4), new Numbered(5)),
        EnqueueOptions.DEFAULTS);
    claim = store.claimLimited(null, QUEUE, 6, "w", claim.lastPartition(), cursor);
    assertThat(claim.jobs()).extracting(ClaimedJob::id).containsExactlyElementsOf(others);
    assertThat(claim.resumable()).as("the head's first job was left behind").isFalse();

    // The claim read and locked it with the head; the lock ended with the claim's transaction.
    db.execute("SELECT id FROM pgjobs.jobs WHERE id = '" + third + "' FOR UPDATE NOWAIT");

    db.execute("DELETE FROM pgjobs.jobs WHERE id = '" + first.get(0) + "'"); // one of 0's finished
    claim = store.claimLimited(null, QUEUE, 6, "w", claim.lastPartition(), cursor);
    assertThat(claim.jobs())
        .extracting(ClaimedJob::id)
        .as("the job left behind, though later jobs were claimed past it")
        .containsExactly(third);
  }

  /**
   * When a few of the head's first jobs must stay (their partition at its limit), the fast path reads the
   * queue further and fills the claim from just past the head, in claim order, instead of going round the
   * partitions in key order (the rounds would take partition 100's job, the first key after the last
   * partition; claim order gives partition 101's, enqueued first).
   */
  @Test
  void aClaimWithJobsLeftBehindFillsFromJustPastTheHeadInClaimOrder() throws Exception {
    client.setLimits(
        QUEUE,
        QueueLimits.builder().partitionBy("input.n").partitionConcurrency(2).build());
    ExecutionStore store = store();
    client.enqueueAll(NUMBERED, List.of(new Numbered(0), new Numbered(0)), EnqueueOptions.DEFAULTS);
    ExecutionStore.LimitedClaim claim =
        store.claimLimited(null, QUEUE, 2, "w", null, new ClaimCursor());
    assertThat(claim.jobs()).hasSize(2); // partition 0 at its limit from here on
    UUID third = client.enqueue(NUMBERED, new Numbered(0)).job().id();
    List<Numbered> others = new ArrayList<>();
    for (int n = 140; n >= 100; n--) {
      others.add(new Numbered(n)); // 41 partitions, enqueued in descending key order
    }
    List<UUID> ids = client.enqueueAll(NUMBERED, others, EnqueueOptions.DEFAULTS);

    claim = store.claimLimited(null, QUEUE, 40, "w", claim.lastPartition(), new ClaimCursor());
    assertThat(claim.jobs())
        .extracting(ClaimedJob::id)
        .as("partitions 140 to 101 in claim order; partition 0's job left, partition 100's next")
        .containsExactlyElementsOf(ids.subList(0, 40))
        .doesNotContain(third);
    assertThat(claim.resumable()).as("a job was left behind").isFalse();
  }

  /**
   * The same across priority levels: the head holds a more urgent level and the start of the next, and the
   * further read goes on in the level where the head ended.
   */
  @Test
  void aHeadAcrossPriorityLevelsIsReadFurtherWhereItEnded() throws Exception {
    client.setLimits(
        QUEUE,
        QueueLimits.builder().partitionBy("input.n").partitionConcurrency(2).build());
    ExecutionStore store = store();
    EnqueueOptions urgent = EnqueueOptions.builder().priority(Priority.HIGH).build();
    client.enqueueAll(NUMBERED, List.of(new Numbered(0), new Numbered(0)), urgent);
    assertThat(store.claimLimited(null, QUEUE, 2, "w", null, new ClaimCursor()).jobs())
        .hasSize(2);
    UUID held =
        client.enqueue(NUMBERED, new Numbered(0), urgent).job().id(); // its partition is full
    List<Numbered> urgentOthers = new ArrayList<>();
    for (int n = 1; n <= 9; n++) {
      urgentOthers.add(new Numbered(n));
    }
    List<UUID> first = client.enqueueAll(NUMBERED, urgentOthers, urgent);
    List<Numbered> others = new ArrayList<>();
    for (int n = 140; n >= 100; n--) {
      others.add(new Numbered(n));
    }
    List<UUID> next = client.enqueueAll(NUMBERED, others, EnqueueOptions.DEFAULTS);

    // The head of 40: the urgent level's 10 (one left for its partition), then 30 of the next
    // level.
    ExecutionStore.LimitedClaim claim =
        store.claimLimited(null, QUEUE, 40, "w", "0", new ClaimCursor());
    List<UUID> expected = new ArrayList<>(first);
    expected.addAll(next.subList(0, 31));
    assertThat(claim.jobs())
        .extracting(ClaimedJob::id)
        .as("the urgent level but the held job, then the next level in order, one past the head")
        .containsExactlyElementsOf(expected)
        .doesNotContain(held);
  }

  /**
   * The fast path locks the head as it reads it, skipping a row another transaction holds (an operator's
   * transaction, say) instead of waiting for it, as the unlimited claim does: the claim takes the others,
   * the held job stays as it was, and a claim after the lock is released finds it.
   */
  @Test
  void aPartitionedClaimSkipsARowHeldElsewhereAndFindsItOnceReleased() throws Exception {
    client.setLimits(
        QUEUE,
        QueueLimits.builder().partitionBy("input.n").partitionConcurrency(2).build());
    ExecutionStore store = store();
    List<UUID> ids = client.enqueueAll(
        NUMBERED,
        List.of(
            new Numbered(0), new Numbered(1), new Numbered(2), new Numbered(3), new Numbered(4)),
        EnqueueOptions.DEFAULTS);
    UUID held = ids.get(1);
    try (Connection other = db.dataSource().getConnection()) {
      other.setAutoCommit(false);
      try (Statement st = other.createStatement()) {
        st.execute("SELECT id FROM pgjobs.jobs WHERE id = '" + held + "' FOR UPDATE");
      }
      java.util.concurrent.ExecutorService claimer =
          java.util.concurrent.Executors.newSingleThreadExecutor();
      ExecutionStore.LimitedClaim claim;
      try {
        claim = claimer
            .submit(() -> store.claimLimited(null, QUEUE, 5, "w", null, new ClaimCursor()))
            .get(30, TimeUnit.SECONDS);
      } finally {
        claimer.shutdownNow();
      }
      assertThat(claim.jobs())
          .extracting(ClaimedJob::id)
          .as("every job but the one held elsewhere, without waiting for it")
          .containsExactly(ids.get(0), ids.get(2), ids.get(3), ids.get(4));
      other.rollback();
    }
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE id = '" + held
            + "' AND state = 'queued' AND attempts = 0 AND locked_by IS NULL"))
        .as("the held job, as it was")
        .isEqualTo(1);
    ExecutionStore.LimitedClaim next =
        store.claimLimited(null, QUEUE, 5, "w", null, new ClaimCursor());
    assertThat(next.jobs()).extracting(ClaimedJob::id).containsExactly(held);
  }

  /**
   * A limited claim's running counts cannot be served by jobs_running_idx (every running job of every
   * queue, and while a transaction elsewhere is open every job that ran since), whatever the planner's
   * statistics say: they are written so that its predicate does not follow from them. In W5, with the
   * counts written {@code state = 'running'} and the hot table's statistics making every index of it look
   * a page long, the planner read that whole index for every partition. Here the limited queues' own
   * index is dropped (in a transaction rolled back), which leaves jobs_running_idx the only index a count
   * could use if it were eligible.
   */
  @Test
  void aLimitedClaimCountsRunningJobsWithoutReadingTheIndexOfEveryRunningJob() throws Exception {
    client.setLimits(
        QUEUE,
        QueueLimits.builder().partitionBy("input.n").partitionConcurrency(2).build());
    List<Numbered> jobs = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      jobs.add(new Numbered(i));
    }
    client.enqueueAll(NUMBERED, jobs, EnqueueOptions.DEFAULTS);
    ExecutionStore store = store();
    client.enqueueAll(
        NUMBERED,
        java.util.Collections.nCopies(3_000, new Numbered(0)),
        EnqueueOptions.builder().queue("other").build());
    assertThat(store.claim("other", 3_000, "w", null)).hasSize(3_000);

    String returned =
        "SELECT pg_stat_get_xact_tuples_returned('pgjobs.jobs_running_idx'::regclass)";
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        st.execute("DROP INDEX pgjobs.jobs_limited_running_idx");
        long before = single(st, returned);
        int claimed = 0;
        try (ResultSet rs = st.executeQuery(ExplainableClaim.limited(QUEUE, 10, "w", null))) {
          while (rs.next()) {
            claimed++;
          }
        }
        assertThat(claimed).isEqualTo(10);
        assertThat(single(st, returned) - before)
            .as("entries of jobs_running_idx the claim read")
            .isZero();
      } finally {
        c.rollback();
      }
    }
  }

  /**
   * The entries of the ready index ({@code jobs_ready_idx}) that a claim read, dead or alive: the index
   * scan returns each to be checked against the table, so this is what the claim stepped over. Counted by
   * this session's statistics around the claim, in a transaction rolled back (nothing is claimed).
   */
  private static long readyEntriesReadBy(String claimSql) throws Exception {
    String entries = "SELECT pg_stat_get_xact_tuples_returned('pgjobs.jobs_ready_idx'::regclass)";
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        long before = single(st, entries);
        try (ResultSet rs = st.executeQuery(claimSql)) {
          while (rs.next()) {
            // claimed, to be rolled back
          }
        }
        return single(st, entries) - before;
      } finally {
        c.rollback();
      }
    }
  }

  private static long single(Statement st, String sql) throws Exception {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
