package io.pgjobs.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.PgJobsTestBase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A worker stops claiming while more successes wait to be written than the completer's backlog limit
 * (10,000 by default); once the completer catches up it claims again at once, not after its poll
 * interval. Waiting out the interval left every lane idle: W3G's fan-in drain stood still for a second
 * (the poll interval) each time the dependency trigger slowed the completer enough to reach the limit.
 */
class CompletionBacklogTest extends PgJobsTestBase {
  /** More than the backlog limit, so that the worker reaches it while its successes cannot be written. */
  private static final int JOBS = 20_000;

  @Test
  void aWorkerBackloggedByItsCompletionsClaimsAgainAsSoonAsTheyAreWrittenNotAtItsPollInterval()
      throws Exception {
    List<Numbered> payloads = new ArrayList<>(JOBS);
    for (int i = 0; i < JOBS; i++) {
      payloads.add(new Numbered(i));
    }
    AtomicInteger started = new AtomicInteger();
    try (Connection holder = db.dataSource().getConnection()) {
      holder.setAutoCommit(false);
      try (Statement st = holder.createStatement()) {
        // Successes insert into the history: a SHARE lock on it holds every success batch (claims
        // do not touch it), so the lanes go on running jobs and the successes pile up.
        st.execute("LOCK TABLE pgjobs.finished_jobs IN SHARE MODE");
      }
      client.enqueueAll(NUMBERED, payloads, EnqueueOptions.DEFAULTS);
      // An hour: a poller that waited out its interval after the backlog would not claim again in
      // this test. No notification wakes it either: every job was enqueued (and announced) before
      // it stopped.
      start(worker()
          .pollInterval(Duration.ofHours(1))
          .queue("default", 50)
          .register(NUMBERED, (ctx, p) -> {
            started.incrementAndGet();
            return null;
          }));
      // Every job it claimed has started (none waits in its buffer, so no lane will wake the
      // poller) and the successes of 10,000 wait: the poller has stopped claiming.
      await("the worker stops claiming at its completer's backlog limit, its lanes idle")
          .atMost(Duration.ofSeconds(60))
          .until(() -> started.get() >= 10_000
              && count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running'")
                  == started.get());
      assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state IN ('queued', 'retrying')"))
          .as(
              "jobs left waiting, to be claimed once the backlog clears (started: %d)",
              started.get())
          .isPositive();
      holder.rollback(); // the successes are written; the backlog clears
    }
    await("every job run and written, long before the poll interval")
        .atMost(Duration.ofSeconds(60))
        .until(() -> count("pgjobs.jobs") == 0);
    assertThat(started.get()).as("each job started once").isEqualTo(JOBS);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'"))
        .isEqualTo(JOBS);
  }
}
