package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimCursor;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The claim while another session holds a transaction open. Every claim leaves the claimed jobs' entries
 * in the ready index behind as dead entries, and an open snapshot keeps vacuum from removing them (and
 * index scans from marking them dead), so a claim that starts at the low end of a priority level's
 * range steps over every one of them. The claim resumes instead from where its last claim of that level
 * ended (a cursor per level), so its cost does not grow with the dead entries behind it.
 */
class LongTransactionClaimTest extends PgJobsTestBase {
  private static final Pattern BUFFERS = Pattern.compile("Buffers: shared(?: hit=(\\d+))?(?: read=(\\d+))?");
  private static final int DEAD = 200_000;

  private static ExecutionStore store() {
    return new ExecutionStore(db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
  }

  @Test
  void aClaimAfterTwoHundredThousandDeadEntriesAndWithATransactionOpenElsewhereReadsABoundedNumberOfBuffers()
      throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    try (Connection idle = db.dataSource().getConnection()) {
      // Another session's transaction, open and idle for the whole test: nothing dead after it can go.
      idle.setAutoCommit(false);
      try (Statement st = idle.createStatement()) {
        st.execute("SELECT txid_current()");
      }

      client.enqueueAll(NUMBERED, Collections.nCopies(DEAD, new Numbered(0)), EnqueueOptions.DEFAULTS);
      List<UUID> claimed = new ArrayList<>();
      while (claimed.size() < DEAD) {
        List<ClaimedJob> batch = store.claim(JobType.DEFAULT_QUEUE, 10_000, "w", cursor);
        assertThat(batch).isNotEmpty();
        batch.forEach(j -> claimed.add(j.id()));
      }
      // They finish: every one of them is now a dead entry at the low end of the ready index.
      db.execute("DELETE FROM pgjobs.jobs");
      List<UUID> fresh = client.enqueueAll(NUMBERED, Collections.nCopies(100, new Numbered(1)), EnqueueOptions.DEFAULTS);

      long resumed = buffersOf(store.explainableClaim(JobType.DEFAULT_QUEUE, 100, "explain", cursor));
      long fromTheStart = buffersOf(store.explainableClaim(JobType.DEFAULT_QUEUE, 100, "explain", null));
      System.out.printf("claim with %,d dead entries behind it and a transaction open: %d buffers resuming, %d from the"
          + " start of the range%n", DEAD, resumed, fromTheStart);
      // Bounded by the jobs it claims, not by the dead entries: finding 100 jobs takes ~110 buffers, and
      // updating them (the new row versions and their primary-key and running-index entries) ~10 a job.
      assertThat(resumed).as("buffers of the resumed claim of 100 jobs").isLessThan(2_000);
      assertThat(fromTheStart).as("the full pass does step over the dead entries").isGreaterThan(5 * resumed);

      List<ClaimedJob> next = store.claim(JobType.DEFAULT_QUEUE, 100, "w", cursor);
      assertThat(next).extracting(ClaimedJob::id).containsExactlyInAnyOrderElementsOf(fresh);
      idle.rollback();
    }
  }

  @Test
  void aMoreUrgentLevelEnqueuedMeanwhileIsClaimedFirstWithoutWaitingForAFullPass() throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    client.enqueueAll(NUMBERED, Collections.nCopies(20, new Numbered(0)), EnqueueOptions.DEFAULTS);
    assertThat(store.claim(JobType.DEFAULT_QUEUE, 5, "w", cursor)).hasSize(5); // a full pass: level 50 known
    assertThat(cursor.fullPassDue(System.nanoTime())).isFalse();
    UUID urgent = client.enqueue(NUMBERED, new Numbered(2), EnqueueOptions.builder().priority(Priority.CRITICAL).build())
        .job().id();

    List<ClaimedJob> next = store.claim(JobType.DEFAULT_QUEUE, 3, "w", cursor); // resumed

    assertThat(next).hasSize(3);
    assertThat(next.get(0).id()).isEqualTo(urgent);
  }

  @Test
  void jobsThatBecomeDueBehindTheCursorAreFoundByTheNextFullPass() throws Exception {
    ExecutionStore store = store();
    ClaimCursor cursor = new ClaimCursor();
    client.enqueueAll(NUMBERED, Collections.nCopies(10, new Numbered(0)), EnqueueOptions.DEFAULTS);
    List<ClaimedJob> first = store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor);
    assertThat(first).hasSize(10);
    // Given back by someone else (not through this cursor): due again, but behind the cursor.
    store.unclaim("w", first.subList(0, 3));
    // A job enqueued with a run_at in the past, behind the cursor too, and a new priority level.
    UUID late = client.enqueue(NUMBERED, new Numbered(1),
        EnqueueOptions.builder().runAt(java.time.Instant.now().minusSeconds(3600)).build()).job().id();
    UUID urgent = client.enqueue(NUMBERED, new Numbered(2), EnqueueOptions.builder().priority(Priority.CRITICAL).build())
        .job().id();

    cursor.forceFullPass();
    List<ClaimedJob> next = store.claim(JobType.DEFAULT_QUEUE, 10, "w", cursor);

    assertThat(next).extracting(ClaimedJob::id).contains(late, urgent).hasSize(5);
    assertThat(next.get(0).id()).as("the higher priority first").isEqualTo(urgent);
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
