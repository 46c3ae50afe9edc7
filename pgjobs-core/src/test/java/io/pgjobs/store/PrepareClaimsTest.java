package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.notify.JobNotificationListener;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * {@link ExecutionStore#prepareClaims} readies the claim statements on the connection the worker claims
 * on when notified, so that the first jobs after a start are not claimed while PostgreSQL still plans the
 * claim afresh each time: it must leave every statement settled on its kept plan, claim nothing (no job
 * changes, none is announced), and leave the connection as it found it. The listener hands each
 * new connection over for it before it listens.
 */
class PrepareClaimsTest extends PgJobsTestBase {
  @Test
  void everyClaimStatementIsServerPreparedAndPlannedForTheLastTimeAfterwards() throws Exception {
    ExecutionStore store = new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER), List.of("gpu"));
    for (int i = 0; i < 30; i++) {
      client.enqueue(NUMBERED, new Numbered(i));
    }
    try (Connection c = db.dataSource().getConnection()) {
      store.prepareClaims(c, 2, "w-prepare");

      Map<String, long[]> before = claimPlans(c);
      assertThat(before)
          .as("the full pass, the resumed claim and the capable claim, server-prepared")
          .hasSize(3);
      before.forEach((statement, plans) -> assertThat(plans[0] + plans[1])
          .as("%s: planned until PostgreSQL chose its kept plan", statement)
          .isGreaterThanOrEqualTo(6));

      // Claims of that size on the connection now, a full pass and then resumed ones (the cursor
      // knows one level): PostgreSQL plans none of them again, each runs the plan it kept.
      ClaimCursor cursor = new ClaimCursor();
      int claimed = 0;
      for (int i = 0; i < 5; i++) {
        claimed += store.claim(c, "default", 2, "w-prepare", cursor).size();
      }
      assertThat(claimed).isEqualTo(10);
      Map<String, long[]> after = claimPlans(c);
      long newCustomPlans = 0;
      long newRuns = 0;
      for (Map.Entry<String, long[]> e : after.entrySet()) {
        long[] was =
            before.getOrDefault(e.getKey(), new long[2]); // a statement readying did not prepare
        newCustomPlans += e.getValue()[1] - was[1];
        newRuns += e.getValue()[0] + e.getValue()[1] - was[0] - was[1];
      }
      assertThat(newRuns).as("the claims ran the prepared statements").isGreaterThanOrEqualTo(5);
      assertThat(newCustomPlans).as("claims planned afresh after readying").isZero();
    }
  }

  @Test
  void readyingClaimsNothingAnnouncesNothingAndLeavesTheConnectionAsItWas() throws Exception {
    ExecutionStore store = new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER), List.of("gpu"));
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      ids.add(client.enqueue(NUMBERED, new Numbered(i)).job().id());
    }
    ids.add(client
        .enqueue(
            NUMBERED,
            new Numbered(-1),
            EnqueueOptions.builder().capability("gpu").build())
        .job()
        .id());
    ids.add(client
        .enqueue(
            NUMBERED, new Numbered(-2), EnqueueOptions.builder().priority(5).build())
        .job()
        .id());
    List<String> events = new CopyOnWriteArrayList<>();
    try (io.pgjobs.events.JobEventListener listener = eventsListener(events);
        Connection c = db.dataSource().getConnection()) {
      store.prepareClaims(c, 10, "w-prepare");
      assertThat(c.getAutoCommit()).isTrue();
      c.setAutoCommit(false);
      store.prepareClaims(c, 10, "w-prepare");
      assertThat(c.getAutoCommit()).isFalse();
      c.rollback();
      c.setAutoCommit(true);

      for (UUID id : ids) {
        assertThat(client.get(id).orElseThrow().state()).isEqualTo(JobState.QUEUED);
      }
      assertThat(
              count("SELECT count(*) FROM pgjobs.jobs WHERE attempts > 0 OR claim_token IS NOT NULL"
                  + " OR locked_by IS NOT NULL OR attempted_at IS NOT NULL"))
          .isZero();
      // Not even locked for a moment (a rolled-back update or row lock leaves its transaction in
      // xmax):
      // another claim meanwhile would have skipped it.
      assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE xmax <> '0'"))
          .as("jobs locked by readying")
          .isZero();
      // A claim after readying announces its job: the listener hears it, and had heard nothing
      // before.
      store.claim(c, "default", 1, "w-after", null);
      await().atMost(Duration.ofSeconds(20)).until(() -> !events.isEmpty());
      assertThat(events).hasSize(1);
      assertThat(events.get(0)).contains("RUNNING");
    }
  }

  @Test
  void theListenerReadiesEachNewConnectionBeforeItListensThenCallsOnConnectedAndHears()
      throws Exception {
    List<String> steps = new CopyOnWriteArrayList<>();
    List<String> heard = new CopyOnWriteArrayList<>();
    JobNotificationListener listener = new JobNotificationListener(
        db.dataSource(),
        connection -> {
          // Not listening yet: from other sessions, the connection's last statement will be its
          // LISTEN.
          try (Statement st = connection.createStatement();
              ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_listening_channels()")) {
            rs.next();
            steps.add("ready, listening on " + rs.getLong(1));
          } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
          }
        },
        () -> steps.add("connected"),
        Map.of("pgjobs_prepare_test", (payload, connection) -> heard.add(payload)));
    listener.start();
    try {
      await().atMost(Duration.ofSeconds(20)).until(listener::isListening);
      await().atMost(Duration.ofSeconds(20)).until(() -> steps.size() >= 2);
      assertThat(steps).containsExactly("ready, listening on 0", "connected");
      db.execute("NOTIFY pgjobs_prepare_test, 'after'");
      await().atMost(Duration.ofSeconds(20)).until(() -> heard.contains("after"));
      assertThat(db.queryLong(
              "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                  + " AND query LIKE 'LISTEN %'"))
          .as("the listener's last statement seen from outside")
          .isEqualTo(1);
    } finally {
      listener.close();
    }
  }

  @Test
  void aListenerConnectionCutWhileItReadiesItsClaimsIsReplacedAndTheWorkerHearsJobsAgain()
      throws Exception {
    // Polls once an hour: only the listener (its notifications, or the poll it starts on
    // connecting) can bring the job below to a lane in time.
    io.pgjobs.worker.JobWorker worker =
        start(worker().pollInterval(Duration.ofHours(1)).register(NUMBERED, (ctx, p) -> null));
    await().atMost(Duration.ofSeconds(20)).until(worker::isListening);
    String readying = "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        + " AND wait_event_type = 'Lock' AND query LIKE '%claim_announces%'";
    try (Connection locker = db.dataSource().getConnection()) {
      locker.setAutoCommit(false);
      try (Statement st = locker.createStatement()) {
        // Claims, readying's too, update jobs: they wait for this lock, so the cut lands
        // mid-readying.
        st.execute("LOCK TABLE pgjobs.jobs IN SHARE MODE");
      }
      assertThat(db.queryLong("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
              + " WHERE datname = current_database() AND query LIKE 'LISTEN %'"))
          .as("listener cut")
          .isEqualTo(1);
      await()
          .atMost(Duration.ofSeconds(20))
          .until(() -> count("SELECT count(*) FROM (" + readying + ") r") == 1);
      long first = db.queryLong(readying);
      assertThat(db.queryLong(
              "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid = " + first))
          .as("cut while readying")
          .isEqualTo(1);
      // The listener connects again and readies again (waiting on the lock again): the cut was
      // survived.
      await()
          .atMost(Duration.ofSeconds(20))
          .until(
              () -> count("SELECT count(*) FROM (" + readying + ") r WHERE pid <> " + first) == 1);
      assertThat(worker.isListening()).isFalse();
      locker.rollback();
    }
    await().atMost(Duration.ofSeconds(20)).until(worker::isListening);
    UUID id = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    assertThat(awaitState(id, JobState.SUCCEEDED).attempts()).isEqualTo(1);
  }

  private static io.pgjobs.events.JobEventListener eventsListener(List<String> events) {
    io.pgjobs.events.JobEventListener listener =
        new io.pgjobs.events.JobEventListener(db.dataSource(), client.eventsChannel());
    listener.subscribe(batch -> events.add(batch.toString()));
    listener.start();
    await().atMost(Duration.ofSeconds(20)).until(listener::isListening);
    return listener;
  }

  /** Each server-prepared claim statement on {@code c}: {generic plans, custom plans}. */
  private static Map<String, long[]> claimPlans(Connection c) throws Exception {
    Map<String, long[]> plans = new LinkedHashMap<>();
    try (Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery("SELECT name, generic_plans, custom_plans FROM pg_prepared_statements"
                + " WHERE statement LIKE '%WITH claimed AS%' ORDER BY name")) {
      while (rs.next()) {
        plans.put(rs.getString(1), new long[] {rs.getLong(2), rs.getLong(3)});
      }
    }
    return plans;
  }
}
