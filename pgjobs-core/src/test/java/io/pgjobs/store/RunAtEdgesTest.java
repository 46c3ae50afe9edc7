package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A {@code run_at} at the edges of what PostgreSQL holds ({@code -infinity}, dates BC, years past 9999,
 * {@code infinity}), written into the table by hand or by another program, must not poison a worker's
 * claim cursor: the cursor writes each position it read back into the resumed claim as text, and a
 * position PostgreSQL cannot parse would make every later claim of that queue fail.
 */
class RunAtEdgesTest extends PgJobsTestBase {
  private static final List<String> EDGES = List.of(
      "-infinity",
      "4713-01-01 00:00:00+00 BC",
      "0044-03-15 12:00:00.000001+00 BC",
      "0001-01-01 00:00:00+00",
      "0999-12-31 23:59:59.999999+00",
      "1000-01-01 00:00:00+00",
      "2026-11-27 18:00:00.123456+00",
      "9999-12-31 23:59:59.999999+00",
      "10000-01-01 00:00:00.000001+00",
      "294276-12-31 23:59:59.999999+00",
      "infinity");

  @Test
  void everyTimestampPostgresqlHoldsIsWrittenSoThatItReadsBackTheSame() throws Exception {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement read = c.prepareStatement("SELECT ?::timestamptz");
        PreparedStatement same = c.prepareStatement(
            "SELECT (?::text[])[1]::timestamptz = ?::timestamptz, (?::text[])[1]::timestamptz::text")) {
      for (String edge : EDGES) {
        read.setString(1, edge);
        Instant instant;
        try (ResultSet rs = read.executeQuery()) {
          rs.next();
          instant = JobRowMapper.instant(rs, 1);
        }
        StringBuilder literal = new StringBuilder("{");
        ClaimCursor.appendInstant(literal, instant);
        literal.append('}');
        same.setString(1, literal.toString());
        same.setString(2, edge);
        same.setString(3, literal.toString());
        try (ResultSet rs = same.executeQuery()) {
          rs.next();
          assertThat(rs.getBoolean(1))
              .as("%s written as %s reads back as %s", edge, literal, rs.getString(2))
              .isTrue();
        }
      }
    }
  }

  @Test
  void aWorkerRunsDueJobsAtTheEdgesAndKeepsClaimingAfterThem() {
    List<UUID> due = new ArrayList<>();
    for (String runAt : List.of(
        "-infinity",
        "4713-01-01 00:00:00+00 BC",
        "0044-03-15 12:00:00.000001+00 BC",
        "0001-01-01 00:00:00+00")) {
      UUID id = client.enqueue(NUMBERED, new Numbered(due.size())).job().id();
      db.execute("UPDATE pgjobs.jobs SET run_at = '" + runAt + "' WHERE id = '" + id + "'");
      due.add(id);
    }
    // Never due, each the first claimable job of its own level: the cursor's probe reads their
    // run_at as those levels' positions.
    UUID never = client
        .enqueue(
            NUMBERED, new Numbered(-1), EnqueueOptions.builder().priority(7).build())
        .job()
        .id();
    db.execute("UPDATE pgjobs.jobs SET run_at = 'infinity' WHERE id = '" + never + "'");
    UUID farFuture = client
        .enqueue(
            NUMBERED, new Numbered(-2), EnqueueOptions.builder().priority(3).build())
        .job()
        .id();
    db.execute("UPDATE pgjobs.jobs SET run_at = '294276-12-31 23:59:59.999999+00' WHERE id = '"
        + farFuture + "'");

    Logger poller = (Logger) LoggerFactory.getLogger("io.pgjobs.worker.QueuePoller");
    ListAppender<ILoggingEvent> warnings = new ListAppender<>();
    warnings.start();
    poller.addAppender(warnings);
    try {
      start(worker().pollInterval(Duration.ofMillis(50)).register(NUMBERED, (ctx, p) -> null));
      for (UUID id : due) {
        Job done = awaitState(id, JobState.SUCCEEDED);
        assertThat(done.attempts()).isEqualTo(1);
      }
      // The cursor now holds those positions: later claims of the queue still work, one job at a
      // time (each enqueue is picked up before the next, so each is a claim of its own).
      for (int i = 0; i < 20; i++) {
        UUID id = client.enqueue(NUMBERED, new Numbered(100 + i)).job().id();
        assertThat(awaitState(id, JobState.SUCCEEDED).attempts()).isEqualTo(1);
      }
    } finally {
      poller.detachAppender(warnings);
    }
    // Not one claim failed on the way (before the fix every claim of the queue failed, and the jobs
    // ran only through the retries' full passes, seconds late).
    assertThat(warnings.list)
        .extracting(ILoggingEvent::getFormattedMessage)
        .noneMatch(m -> m.contains("failed"));
    assertThat(client.get(never).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    assertThat(client.get(farFuture).orElseThrow().state()).isEqualTo(JobState.QUEUED);
  }
}
