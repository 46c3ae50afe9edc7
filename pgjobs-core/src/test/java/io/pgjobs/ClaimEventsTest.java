package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.events.JobEvent;
import io.pgjobs.events.JobEventListener;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Claims announce the jobs they start themselves, in the claim statement, and the
 * statement-level events trigger of {@code jobs} does not fire for them: each claimed job is announced
 * {@code running} exactly once, with its new attempt, between its {@code queued} and its outcome; every
 * other update of the hot table still fires the trigger.
 */
class ClaimEventsTest extends PgJobsTestBase {

  @Test
  void everyClaimedJobIsAnnouncedRunningExactlyOnceBetweenQueuedAndItsOutcome() throws Exception {
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    try (JobEventListener listener = listeningToJobEvents(events)) {
      // Enqueued while no worker runs: the first claim takes a batch of them in one statement. 40:
      // an
      // event lists at most 50 jobs (JobSql.EVENT_JOBS_MAX_COUNT), so every job is named in every
      // event.
      List<UUID> ids = client.enqueueAll(
          NUMBERED,
          IntStream.range(0, 40).mapToObj(Numbered::new).toList(),
          EnqueueOptions.DEFAULTS);
      start(worker().claimBatch(100).register(NUMBERED, (ctx, p) -> null));
      for (UUID id : ids) {
        awaitState(id, JobState.SUCCEEDED);
      }
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> ids.stream()
              .allMatch(id ->
                  jobEventsOf(events, id).stream().anyMatch(e -> e.state() == JobState.SUCCEEDED)));

      for (UUID id : ids) {
        List<JobEvent> mine = jobEventsOf(events, id);
        assertThat(mine)
            .as("events of job %s", id)
            .filteredOn(e -> e.state() == JobState.RUNNING)
            .singleElement()
            .satisfies(e -> {
              assertThat(e.attempts()).isEqualTo(1);
              assertThat(e.type()).isEqualTo(NUMBERED.name());
              assertThat(e.queue()).isEqualTo(NUMBERED.queue());
            });
        assertThat(mine.stream().map(e -> e.state().value()).toList())
            .containsSubsequence("queued", "running", "succeeded");
      }
    }
  }

  /**
   * A limited queue's claim (claim_limited, one function call) announces its jobs as the unlimited claim
   * does: each exactly once, {@code running}, with its new attempt. Both of its paths: a partitioned queue's
   * (the fast path, here: 40 jobs of one partition that may run 50) and a global limit's.
   */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"partitioned", "global"})
  void aLimitedClaimAnnouncesEachJobRunningExactlyOnce(String limits) throws Exception {
    client.setLimits(
        NUMBERED.queue(),
        limits.equals("partitioned")
            ? QueueLimits.builder().partitionBy("type").partitionConcurrency(50).build()
            : QueueLimits.builder().globalConcurrency(50).build());
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    try (JobEventListener listener = listeningToJobEvents(events)) {
      List<UUID> ids = client.enqueueAll(
          NUMBERED,
          IntStream.range(0, 40).mapToObj(Numbered::new).toList(),
          EnqueueOptions.DEFAULTS);
      start(worker().claimBatch(100).register(NUMBERED, (ctx, p) -> null));
      await()
          .atMost(Duration.ofSeconds(20))
          .until(() -> ids.stream()
              .allMatch(id ->
                  jobEventsOf(events, id).stream().anyMatch(e -> e.state() == JobState.SUCCEEDED)));
      for (UUID id : ids) {
        List<JobEvent> mine = jobEventsOf(events, id);
        assertThat(mine)
            .as("events of job %s", id)
            .filteredOn(e -> e.state() == JobState.RUNNING)
            .singleElement()
            .satisfies(e -> assertThat(e.attempts()).isEqualTo(1));
        assertThat(mine.stream().map(e -> e.state().value()).toList())
            .containsSubsequence("queued", "running", "succeeded");
      }
    } finally {
      client.clearLimits(NUMBERED.queue());
    }
  }

  /**
   * The limited claim turns the trigger off for its own update only: a later update in the same
   * transaction (a caller with auto-commit off) is announced by the trigger.
   */
  @Test
  void anUpdateAfterALimitedClaimInTheSameTransactionIsStillAnnounced() throws Exception {
    client.setLimits(
        NUMBERED.queue(), QueueLimits.builder().globalConcurrency(5).build());
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    UUID claimed = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    UUID later = client.enqueue(NUMBERED, new Numbered(2)).job().id();
    try (JobEventListener listener = listeningToJobEvents(events);
        Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement()) {
      c.setAutoCommit(false);
      try (ResultSet rs = st.executeQuery("SELECT id FROM pgjobs.claim_limited('test-worker', '"
          + NUMBERED.queue() + "', 1, NULL, '{}', NULL, NULL, NULL, NULL)")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getObject(1, UUID.class)).isEqualTo(claimed);
      }
      st.executeUpdate("UPDATE pgjobs.jobs SET state = 'retrying' WHERE id = '" + later + "'");
      c.commit();
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() ->
              jobEventsOf(events, later).stream().anyMatch(e -> e.state() == JobState.RETRYING));
    } finally {
      client.clearLimits(NUMBERED.queue());
    }
  }

  /**
   * The claim's setting is transaction-local: an update in the next statement on the same connection (in
   * auto-commit mode, as claims run) fires the trigger and is announced.
   */
  @Test
  void anUpdateAfterAClaimOnTheSameConnectionIsStillAnnouncedByTheTrigger() throws Exception {
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    UUID id = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    try (JobEventListener listener = listeningToJobEvents(events);
        Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement()) {
      c.setAutoCommit(true);
      try (ResultSet rs =
          st.executeQuery("SELECT set_config('pgjobs.claim_announces', 'on', true)")) {
        assertThat(rs.next()).isTrue();
      }
      assertThat(
              st.executeUpdate("UPDATE pgjobs.jobs SET state = 'retrying' WHERE id = '" + id + "'"))
          .isEqualTo(1);

      await()
          .atMost(Duration.ofSeconds(10))
          .until(
              () -> jobEventsOf(events, id).stream().anyMatch(e -> e.state() == JobState.RETRYING));
    }
  }

  /** Inside one transaction the setting holds: that is what keeps the trigger from firing for a claim. */
  @Test
  void theTriggerDoesNotFireWhileTheClaimSettingIsOnInTheTransaction() throws Exception {
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    UUID quiet = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    UUID marker = client.enqueue(NUMBERED, new Numbered(2)).job().id();
    try (JobEventListener listener = listeningToJobEvents(events);
        Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement()) {
      c.setAutoCommit(false);
      st.execute("SELECT set_config('pgjobs.claim_announces', 'on', true)");
      st.executeUpdate("UPDATE pgjobs.jobs SET state = 'retrying' WHERE id = '" + quiet + "'");
      c.commit();
      c.setAutoCommit(true);
      // Committed after the quiet one: once its event is in, the quiet one's would have been too.
      st.executeUpdate("UPDATE pgjobs.jobs SET state = 'retrying' WHERE id = '" + marker + "'");

      await()
          .atMost(Duration.ofSeconds(10))
          .until(() ->
              jobEventsOf(events, marker).stream().anyMatch(e -> e.state() == JobState.RETRYING));
      assertThat(jobEventsOf(events, quiet)).noneMatch(e -> e.state() == JobState.RETRYING);
    }
  }
}
