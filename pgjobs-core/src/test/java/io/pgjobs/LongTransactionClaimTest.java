package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimCursor;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.store.ExplainableClaim;
import io.pgjobs.testkit.Tags;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The claim while another session holds a transaction open. Every claim leaves the claimed jobs' entries
 * in the ready index behind as dead entries, and an open snapshot keeps vacuum from removing them (and
 * index scans from marking them dead), so a claim that starts at the low end of a priority level's
 * range steps over every one of them. The claim resumes instead from where its last claim of that level
 * ended (a cursor per level), so its cost does not grow with the dead entries behind it.
 */
class LongTransactionClaimTest extends PgJobsTestBase {
  private static final Pattern BUFFERS =
      Pattern.compile("Buffers: shared(?: hit=(\\d+))?(?: read=(\\d+))?");
  private static final int DEAD = 200_000;
  /** A probe duration above {@link ClaimCursor#CHEAP_PROBE_NANOS}: claims then only resume. */
  private static final long SLOW_PROBE = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(50);

  private static ExecutionStore store() {
    return new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
  }

  @Test
  @Tag(Tags.SOAK)
  void
      aClaimAfterTwoHundredThousandDeadEntriesAndWithATransactionOpenElsewhereReadsABoundedNumberOfBuffers()
          throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    try (Connection idle = idleTransactionBehindDeadEntries(store, cursor)) {
      List<UUID> fresh = client.enqueueAll(
          NUMBERED, Collections.nCopies(100, new Numbered(1)), EnqueueOptions.DEFAULTS);

      long resumed =
          buffersOf(ExplainableClaim.of(store, JobType.DEFAULT_QUEUE, 100, "explain", cursor));
      long fromTheStart =
          buffersOf(ExplainableClaim.of(store, JobType.DEFAULT_QUEUE, 100, "explain", null));
      System.out.printf(
          "claim with %,d dead entries behind it and a transaction open: %d buffers resuming, %d from the"
              + " start of the range%n",
          DEAD, resumed, fromTheStart);
      // Bounded by the jobs it claims, not by the dead entries: finding 100 jobs takes ~110
      // buffers, and updating them (the new row versions and their primary-key and running-index
      // entries) ~10 a job.
      assertThat(resumed).as("buffers of the resumed claim of 100 jobs").isLessThan(2_000);
      assertThat(fromTheStart)
          .as("the full pass does step over the dead entries")
          .isGreaterThan(5 * resumed);

      List<ClaimedJob> next = store.claim(JobType.DEFAULT_QUEUE, 100, "w", cursor);
      assertThat(next).extracting(ClaimedJob::id).containsExactlyInAnyOrderElementsOf(fresh);
      idle.rollback();
    }
  }

  @Test
  void aMoreUrgentLevelEnqueuedMeanwhileIsClaimedFirstWithoutWaitingForAFullPass()
      throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    client.enqueueAll(NUMBERED, Collections.nCopies(20, new Numbered(0)), EnqueueOptions.DEFAULTS);
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 5, "w", cursor))
        .hasSize(5); // a full pass: level 50 known
    assertThat(cursor.fullPassDue(System.nanoTime())).isFalse();
    UUID urgent = client
        .enqueue(
            NUMBERED,
            new Numbered(2),
            EnqueueOptions.builder().priority(Priority.CRITICAL).build())
        .job()
        .id();

    List<ClaimedJob> next = store.claim(JobType.DEFAULT_QUEUE, 3, "w", cursor); // resumed

    assertThat(next).hasSize(3);
    assertThat(next.get(0).id()).isEqualTo(urgent);
  }

  @Test
  void jobsThatBecomeDueBehindTheCursorAreFoundByTheNextProbe() throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    client.enqueueAll(NUMBERED, Collections.nCopies(10, new Numbered(0)), EnqueueOptions.DEFAULTS);
    List<ClaimedJob> first = store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor);
    assertThat(first).hasSize(10);
    // As under a long transaction: claims only resume. (With the probe cheap, a full pass would
    // come again a second after the first claim, and a loaded machine can take that long to get
    // to the claim below.)
    cursor.probed(List.of(), System.nanoTime(), SLOW_PROBE);
    // Given back by someone else (not through this cursor): due again, but behind the cursor.
    store.unclaim("w", first.subList(0, 3));
    // A job enqueued with a run_at in the past, behind the cursor too, and a new priority level.
    UUID late = client
        .enqueue(
            NUMBERED,
            new Numbered(1),
            EnqueueOptions.builder()
                .runAt(java.time.Instant.now().minusSeconds(3600))
                .build())
        .job()
        .id();
    UUID urgent = client
        .enqueue(
            NUMBERED,
            new Numbered(2),
            EnqueueOptions.builder().priority(Priority.CRITICAL).build())
        .job()
        .id();

    assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
        .extracting(ClaimedJob::id)
        .as("resumed past them, the claim finds only the more urgent level (above every known one)")
        .containsExactly(urgent);

    cursor.probed(store.firstClaimable(JobType.DEFAULT_QUEUE), System.nanoTime(), 0);
    List<ClaimedJob> next = store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor);

    assertThat(next).extracting(ClaimedJob::id).contains(late).hasSize(4);
    assertThat(next.get(0).id()).as("the one an hour late first").isEqualTo(late);
  }

  @Test
  void theProbeFindsANewLevelBelowTheKnownOnesAndJobsGivenBackMoveTheCursorBackAtOnce()
      throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    client.enqueueAll(NUMBERED, Collections.nCopies(5, new Numbered(0)), EnqueueOptions.DEFAULTS);
    List<ClaimedJob> first = store.claim(JobType.DEFAULT_QUEUE, 5, "w", cursor);
    UUID low = client
        .enqueue(
            NUMBERED,
            new Numbered(1),
            EnqueueOptions.builder().priority(Priority.LOW).build())
        .job()
        .id();
    cursor.probed(List.of(), System.nanoTime(), SLOW_PROBE); // as while a long transaction is open
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
        .as("a level below the known one")
        .isEmpty();
    assertThat(cursor.probeDue(System.nanoTime() + cursor.probeIntervalNanos())).isTrue();

    cursor.probed(store.firstClaimable(JobType.DEFAULT_QUEUE), System.nanoTime(), SLOW_PROBE);
    assertThat(cursor.probeDue(System.nanoTime()))
        .as("not again within the interval")
        .isFalse();
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
        .extracting(ClaimedJob::id)
        .containsExactly(low);

    store.unclaim("w", first.subList(1, 3));
    cursor.rewind(first.subList(1, 3));
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
        .extracting(ClaimedJob::id)
        .containsExactly(first.get(1).id(), first.get(2).id());
  }

  @Test
  void whileTheProbeIsCheapAResumedClaimThatFindsNothingLooksFromTheLowEndAtOnce()
      throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    client.enqueueAll(NUMBERED, Collections.nCopies(5, new Numbered(0)), EnqueueOptions.DEFAULTS);
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 5, "w", cursor)).hasSize(5);
    cursor.probed(
        store.firstClaimable(JobType.DEFAULT_QUEUE), System.nanoTime(), 0); // cheap: nothing dead
    UUID late = client
        .enqueue(
            NUMBERED,
            new Numbered(1),
            EnqueueOptions.builder()
                .runAt(java.time.Instant.now().minusSeconds(60))
                .build())
        .job()
        .id();

    assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
        .extracting(ClaimedJob::id)
        .containsExactly(late);

    // The same with the probe slow (a long transaction elsewhere): the claim resumes only.
    UUID later = client
        .enqueue(
            NUMBERED,
            new Numbered(2),
            EnqueueOptions.builder()
                .runAt(java.time.Instant.now().minusSeconds(60))
                .build())
        .job()
        .id();
    cursor.probed(List.of(), System.nanoTime(), SLOW_PROBE);
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor)).isEmpty();
    cursor.probed(store.firstClaimable(JobType.DEFAULT_QUEUE), System.nanoTime(), SLOW_PROBE);
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
        .extracting(ClaimedJob::id)
        .containsExactly(later);
  }

  @Test
  void aJobSkippedWhileAnotherSessionHeldItsRowLockIsClaimedAfterTheProbeOnceReleased()
      throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    List<UUID> ids = client.enqueueAll(
        NUMBERED, Collections.nCopies(3, new Numbered(0)), EnqueueOptions.DEFAULTS);
    cursor.probed(
        List.of(),
        System.nanoTime(),
        SLOW_PROBE); // claims resume only, as under a long transaction
    try (Connection locker = db.dataSource().getConnection()) {
      locker.setAutoCommit(false);
      try (PreparedStatement ps =
          locker.prepareStatement("SELECT 1 FROM pgjobs.jobs WHERE id = ? FOR UPDATE")) {
        ps.setObject(1, ids.get(0));
        ps.executeQuery().close();
      }
      // The first job's row is held: the claim skips it (SKIP LOCKED) and its cursor moves past it.
      assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
          .extracting(ClaimedJob::id)
          .containsExactlyInAnyOrderElementsOf(ids.subList(1, 3));
      locker.commit();
    }
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
        .as("behind the cursor")
        .isEmpty();

    cursor.probed(store.firstClaimable(JobType.DEFAULT_QUEUE), System.nanoTime(), SLOW_PROBE);

    assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
        .extracting(ClaimedJob::id)
        .containsExactly(ids.get(0));
  }

  @Test
  void aJobTheProbeFoundAheadOfTheClaimsDoesNotMoveTheCursorBackOnceTheyPassedIt()
      throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    List<UUID> ids = client.enqueueAll(
        NUMBERED, Collections.nCopies(30, new Numbered(0)), EnqueueOptions.DEFAULTS);
    List<ClaimedJob> first =
        store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor); // a full pass: level known
    ClaimCursor.ProbeStart probeStart = cursor.probeStart(System.nanoTime());
    List<ClaimCursor.LevelStart> firsts = store.firstClaimable(JobType.DEFAULT_QUEUE);
    List<ClaimedJob> whileProbing = store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor); // resumed
    assertThat(firsts)
        .extracting(ClaimCursor.LevelStart::id)
        .containsExactly(whileProbing.get(0).id());

    cursor.probed(probeStart, firsts, SLOW_PROBE);

    // The next claim resumes past the last job claimed, not just before the one the probe read.
    String resumed = ExplainableClaim.of(store, JobType.DEFAULT_QUEUE, 10, "w", cursor);
    assertThat(resumed).contains(whileProbing.get(9).id().toString());
    List<ClaimedJob> next = store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor);
    assertThat(next).hasSize(10);
    assertThat(java.util.stream.Stream.of(first, whileProbing, next)
            .flatMap(List::stream)
            .map(ClaimedJob::id))
        .containsExactlyInAnyOrderElementsOf(ids);
  }

  @Test
  void aSlowProbeIsSpacedOutButNeverMoreThanTheLongestInterval() {
    ClaimCursor cursor = new ClaimCursor();
    long start = System.nanoTime();
    cursor.probed(List.of(), start, java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(20));
    assertThat(cursor.probeIntervalNanos()).isEqualTo(ClaimCursor.MIN_PROBE_INTERVAL_NANOS);
    cursor.probed(List.of(), start, java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(200));
    assertThat(cursor.probeIntervalNanos())
        .isEqualTo(java.util.concurrent.TimeUnit.SECONDS.toNanos(5));
    cursor.probed(List.of(), start, java.util.concurrent.TimeUnit.SECONDS.toNanos(2));
    assertThat(cursor.probeIntervalNanos()).isEqualTo(ClaimCursor.MAX_PROBE_INTERVAL_NANOS);
  }

  @Test
  @Tag(Tags.SOAK)
  void
      theProbeWithTwoHundredThousandDeadEntriesAndATransactionOpenElsewhereFindsTheFirstClaimableJob()
          throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    try (Connection idle = idleTransactionBehindDeadEntries(store, cursor)) {
      // Enqueued an hour in the past: behind every position the claims left.
      UUID late = client
          .enqueue(
              NUMBERED,
              new Numbered(1),
              EnqueueOptions.builder()
                  .runAt(java.time.Instant.now().minusSeconds(3600))
                  .build())
          .job()
          .id();
      cursor.probed(List.of(), System.nanoTime(), SLOW_PROBE);
      assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
          .as("resumed past it")
          .isEmpty();

      List<ClaimCursor.LevelStart> firsts = store.firstClaimable(JobType.DEFAULT_QUEUE);
      assertThat(firsts).extracting(ClaimCursor.LevelStart::id).containsExactly(late);
      cursor.probed(firsts, System.nanoTime(), SLOW_PROBE);
      assertThat(store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor))
          .extracting(ClaimedJob::id)
          .containsExactly(late);
      idle.rollback();
    }
  }

  @Test
  void aJobWhoseTransactionCommitsAfterLaterJobsWereClaimedIsRunByTheWorker() throws Exception {
    java.util.Set<Integer> ran = java.util.concurrent.ConcurrentHashMap.newKeySet();
    start(worker()
        .register(NUMBERED, (ctx, p) -> {
          ran.add(p.n());
          return null;
        })
        .queue(JobType.DEFAULT_QUEUE, 4));
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      // Its run_at is this transaction's start: earlier than every job below, which are claimed
      // first and move the worker's cursor past it before it commits.
      UUID late = client
          .enqueue(tx, NUMBERED, new Numbered(-1), EnqueueOptions.DEFAULTS)
          .job()
          .id();
      for (int i = 0; i < 20; i++) {
        client.enqueue(NUMBERED, new Numbered(i));
      }
      org.awaitility.Awaitility.await()
          .atMost(java.time.Duration.ofSeconds(30))
          .until(() -> ran.size() == 20);
      tx.commit();

      // Its notification's claim finds nothing past the cursor and looks from the low end (cheap
      // here); with a long transaction open elsewhere, the cursor's probe finds it within seconds.
      Job done = awaitState(late, JobState.SUCCEEDED, java.time.Duration.ofSeconds(15));
      assertThat(done.attempts()).isEqualTo(1);
      assertThat(ran).contains(-1);
    }
  }

  /**
   * Opens another session's transaction, idle until the caller rolls it back (nothing that dies after it
   * can be vacuumed), then enqueues, claims through {@code cursor} and finishes {@link #DEAD} jobs: every
   * one of them is left as a dead entry at the low end of the ready index.
   */
  private static Connection idleTransactionBehindDeadEntries(
      ExecutionStore store, ClaimCursor cursor) throws Exception {
    Connection idle = db.dataSource().getConnection();
    idle.setAutoCommit(false);
    try (Statement st = idle.createStatement()) {
      st.execute("SELECT txid_current()");
    }
    client.enqueueAll(
        NUMBERED, Collections.nCopies(DEAD, new Numbered(0)), EnqueueOptions.DEFAULTS);
    int claimed = 0;
    while (claimed < DEAD) {
      List<ClaimedJob> batch = store.claim(JobType.DEFAULT_QUEUE, 10_000, "w", cursor);
      assertThat(batch).isNotEmpty();
      claimed += batch.size();
    }
    db.execute("DELETE FROM pgjobs.jobs");
    return idle;
  }

  /** The total shared buffers (hit + read) of the top node of {@code EXPLAIN (ANALYZE, BUFFERS)} of a claim. */
  private static long buffersOf(String claimSql) throws Exception {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement("EXPLAIN (ANALYZE, BUFFERS) " + claimSql)) {
        StringBuilder plan = new StringBuilder();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            plan.append(rs.getString(1)).append('\n');
          }
        }
        if (Boolean.getBoolean("pgjobs.printPlans")) {
          System.out.println(plan);
        }
        Matcher m = BUFFERS.matcher(plan);
        assertThat(m.find()).as("buffers in\n" + plan).isTrue();
        long hit = m.group(1) == null ? 0 : Long.parseLong(m.group(1));
        long read = m.group(2) == null ? 0 : Long.parseLong(m.group(2));
        return hit + read;
      } finally {
        c.rollback();
      }
    }
  }
}
