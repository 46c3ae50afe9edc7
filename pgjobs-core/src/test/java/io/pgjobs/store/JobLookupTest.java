package io.pgjobs.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.JobState;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.json.PayloadCodec;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A lookup by id ({@link JobLookup}) reads the history's partitions from the job's creation (its id's
 * time) on, and everywhere when it finds nothing there: exact for a job that finished "before" its id's
 * time (another clock, an id not made by pgjobs), and the older partitions are not planned for a job
 * that finished as jobs do.
 */
class JobLookupTest extends PgJobsTestBase {
  private static JobLookup lookup() {
    return new JobLookup("pgjobs", new JobRowMapper(new PayloadCodec(PayloadCodec.DEFAULT_MAPPER)));
  }

  private static List<String> plan(String sql) throws Exception {
    List<String> lines = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("EXPLAIN " + sql)) {
      while (rs.next()) {
        lines.add(rs.getString(1));
      }
    }
    return lines;
  }

  @Test
  void aJobIsFoundWhereverItFinishedAndTheOlderPartitionsAreNotPlannedForARecentOne()
      throws Exception {
    UUID recent = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    UUID early = client.enqueue(NUMBERED, new Numbered(2)).job().id();
    UUID waiting = client.enqueue(NUMBERED, new Numbered(3)).job().id();
    UUID foreign = UUID.randomUUID(); // version 4: not made by pgjobs
    start(worker().maintenance(false).register(NUMBERED, (ctx, p) -> {
      if (p.n() == 3) {
        throw new IllegalStateException("stays retrying");
      }
      return null;
    }));
    awaitState(recent, JobState.SUCCEEDED);
    awaitState(early, JobState.SUCCEEDED);
    // One job moved into a partition of two days ago: it "finished" long before its id's time, as a
    // job enqueued on a host whose clock runs ahead would look. And a row whose id is not a UUIDv7.
    db.execute(
        "CREATE TABLE pgjobs.finished_jobs_old PARTITION OF pgjobs.finished_jobs FOR VALUES"
            + " FROM (now() - interval '2 days') TO (now() - interval '1 day')",
        "UPDATE pgjobs.finished_jobs SET finished_at = now() - interval '36 hours' WHERE id = '"
            + early + "'",
        "INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts,"
            + " max_attempts, run_at, created_at, errors, finished_at) VALUES ('" + foreign
            + "', 'numbered', 'default', '{\"n\": 4}', 0, 'succeeded', 1, 1, now(), now(), '[]',"
            + " now() - interval '36 hours')");

    JobLookup lookup = lookup();
    try (Connection c = db.dataSource().getConnection()) {
      assertThat(lookup.get(c, recent).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
      assertThat(lookup.get(c, early).orElseThrow().id())
          .as("finished before its id's time: found by the lookup everywhere")
          .isEqualTo(early);
      assertThat(lookup.get(c, foreign).orElseThrow().id()).isEqualTo(foreign);
      assertThat(lookup.get(c, waiting).orElseThrow().state()).isNotEqualTo(JobState.SUCCEEDED);
      assertThat(lookup.get(c, UuidV7.generate())).isEmpty();
    }

    // The first read, for a job created now: the partition of two days ago is not in its plan.
    String bounded = JobSql.forSchema(JobSql.GET_SINCE, "pgjobs");
    String first = bounded
        .substring(0, bounded.lastIndexOf('?'))
        .replace("?", "'" + recent + "'")
        .concat("now() - interval '5 minutes'");
    assertThat(plan(first)).noneMatch(line -> line.contains("finished_jobs_old"));
    assertThat(plan(JobSql.forSchema(JobSql.GET, "pgjobs").replace("?", "'" + recent + "'")))
        .as("the lookup everywhere plans every partition")
        .anyMatch(line -> line.contains("finished_jobs_old"));
  }
}
