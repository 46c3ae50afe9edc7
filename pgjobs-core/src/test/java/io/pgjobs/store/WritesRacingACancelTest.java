package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.CancelResult;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A worker's retry, snooze or release that is written while an operator's cancel commits: the cancel's
 * transaction holds the job's row, the worker's statement waits for it, the cancel commits. The write
 * must decide on the row it locked (cancellation asked) and end the job cancelled at once; deciding on
 * the statement's older snapshot wrote nothing and left the job running, its worker believing it was no
 * longer its claim, until rescue.
 */
class WritesRacingACancelTest extends PgJobsTestBase {
  private static final String WORKER = "racing-worker";
  /** The worker's write, waiting for the row the cancel holds. */
  private static final String WRITE_WAITING =
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
          + " AND wait_event_type = 'Lock' AND query LIKE '%claim_token = $%'";

  private ExecutionStore store;
  private final ExecutorService writer = Executors.newSingleThreadExecutor();

  /** One fenced write of the worker; returns the state it wrote, or null. */
  @FunctionalInterface
  private interface Write {
    JobState run(ClaimedJob job) throws Exception;
  }

  @BeforeEach
  void createStore() {
    store = new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
  }

  @AfterEach
  void stopWriter() {
    writer.shutdownNow();
  }

  @Test
  void retryWrittenWhileACancelCommitsEndsTheJobCancelled() throws Exception {
    writeWhileACancelCommits(job -> store.retryLater(job.id(), job.claimToken(), 60_000, "[]"));
  }

  @Test
  void snoozeWrittenWhileACancelCommitsEndsTheJobCancelled() throws Exception {
    writeWhileACancelCommits(job -> store.snooze(job.id(), job.claimToken(), 60_000));
  }

  @Test
  void releaseWrittenWhileACancelCommitsEndsTheJobCancelled() throws Exception {
    writeWhileACancelCommits(job -> store.release(job.id(), job.claimToken(), "[]"));
  }

  @Test
  void retryWithoutACancelStillSchedulesTheNextAttempt() throws Exception {
    ClaimedJob job = claimOne();
    assertThat(store.retryLater(job.id(), job.claimToken(), 60_000, "[]"))
        .isEqualTo(JobState.RETRYING);
    Job after = client.get(job.id()).orElseThrow();
    assertThat(after.state()).isEqualTo(JobState.RETRYING);
    assertThat(after.lockedBy()).isNull();
    assertThat(after.runAt()).isAfter(after.createdAt().plusSeconds(50));
  }

  @Test
  void writeOfAClaimNoLongerCurrentStillWritesNothing() throws Exception {
    ClaimedJob job = claimOne();
    assertThat(store.snooze(job.id(), job.claimToken() + 1, 1_000)).isNull();
    assertThat(store.release(job.id(), job.claimToken() + 1, "[]")).isNull();
    assertThat(store.retryLater(job.id(), job.claimToken() + 1, 1_000, "[]")).isNull();
    assertThat(client.get(job.id()).orElseThrow().state()).isEqualTo(JobState.RUNNING);
  }

  private void writeWhileACancelCommits(Write write) throws Exception {
    ClaimedJob job = claimOne();
    JobState written;
    try (Connection cancel = db.dataSource().getConnection()) {
      cancel.setAutoCommit(false);
      assertThat(client.cancel(cancel, job.id()).outcome())
          .isEqualTo(CancelResult.Outcome.PENDING_ON_WORKER);
      Future<JobState> writing = writer.submit(() -> write.run(job));
      await("the worker's write waits for the cancel's row lock")
          .atMost(Duration.ofSeconds(10))
          .until(() -> db.queryLong(WRITE_WAITING) == 1);
      cancel.commit();
      cancel.setAutoCommit(true);
      written = writing.get(10, TimeUnit.SECONDS);
    }

    assertThat(written).as("the state the worker's write reports").isEqualTo(JobState.CANCELLED);
    Job after = client.get(job.id()).orElseThrow();
    assertThat(after.state()).isEqualTo(JobState.CANCELLED);
    assertThat(after.lockedBy()).isEqualTo(WORKER);
  }

  private ClaimedJob claimOne() throws Exception {
    client.enqueue(NUMBERED, new Numbered(1));
    List<ClaimedJob> claimed = store.claim("default", 1, WORKER);
    assertThat(claimed).hasSize(1);
    return claimed.get(0);
  }
}
