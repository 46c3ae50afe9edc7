package io.pgjobs.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.Job;
import io.pgjobs.JobFilter;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.SkewedDatabaseClock;
import io.pgjobs.recurring.Recurring;
import io.pgjobs.recurring.RecurringStore;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The recurring firer decides which slots are due, and which were missed, by the database's clock: a
 * leader whose own clock runs ahead neither fires slots that are still in the future nor skips due
 * ones as missed.
 */
class RecurringFirerTest extends PgJobsTestBase {
  private static final Duration MISSED_AFTER = Duration.ofMinutes(1);

  @Test
  void leaderWhoseClockRunsAheadFiresEachDueSlotAndNoneEarly() throws Exception {
    db.execute("DELETE FROM pgjobs.recurring");
    try (SkewedDatabaseClock skewed = new SkewedDatabaseClock(db, Duration.ofMinutes(5))) {
      DataSource ds = skewed.dataSource();
      RecurringStore store = new RecurringStore(ds, "pgjobs");
      store.declare(
          List.of(Recurring.of("tick", "* * * * * *", "UTC", NUMBERED, new Numbered(1))),
          Set.of(NUMBERED.name()));
      execute(
          ds,
          "UPDATE pgjobs.recurring SET last_slot = date_trunc('second', now()) - interval '10 seconds'");
      Instant from = instant(ds, "SELECT last_slot FROM pgjobs.recurring");

      new RecurringFirer(store, Duration.ofSeconds(1), MISSED_AFTER).run();

      Instant to = instant(ds, "SELECT last_slot FROM pgjobs.recurring");
      Instant databaseNow = instant(ds, "SELECT now()");
      assertThat(to)
          .as("newest slot handled, against the database's now " + databaseNow)
          .isBeforeOrEqualTo(databaseNow)
          .isAfterOrEqualTo(from.plusSeconds(10));
      List<String> expected = new ArrayList<>();
      for (Instant slot = from.plusSeconds(1); !slot.isAfter(to); slot = slot.plusSeconds(1)) {
        expected.add("recurring tick @ " + slot);
      }
      List<Job> jobs = client
          .list(JobFilter.builder().text("recurring tick @").limit(1000).build())
          .jobs();
      assertThat(jobs)
          .as("one job per due slot, none skipped as missed")
          .extracting(Job::context)
          .containsExactlyInAnyOrderElementsOf(expected);
    }
  }

  private static void execute(DataSource ds, String sql) throws Exception {
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  private static Instant instant(DataSource ds, String sql) throws Exception {
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getTimestamp(1).toInstant();
    }
  }
}
