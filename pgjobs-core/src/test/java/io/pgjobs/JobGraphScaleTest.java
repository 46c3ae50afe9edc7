package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.testkit.Tags;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 30, acceptance 4: a fan-in of 100,000 parents and one callback, the parents run by two workers at
 * once (their completion batches race to count down the callback's row): the callback is unblocked
 * exactly once, after the last parent, and runs once. The times are printed for docs/BENCHMARKS.md.
 */
@Tag(Tags.SLOW)
class JobGraphScaleTest extends PgJobsTestBase {
  /** A parent or the callback. */
  public record Part(int n) {}

  static final JobType<Part> PART = JobType.of("fan-in-part", Part.class).withQueue("fan-in");

  private static final int PARENTS = 100_000;

  @Test
  void aFanInOfOneHundredThousandParentsUnblocksItsCallbackExactlyOnce() {
    JobGraph.Builder graph = JobGraph.builder();
    Dependency[] all = new Dependency[PARENTS];
    for (int i = 0; i < PARENTS; i++) {
      graph.add("p" + i, PART, new Part(i));
      all[i] = Dependency.on("p" + i);
    }
    graph.add("callback", PART, new Part(-1), all);
    long enqueueStart = System.nanoTime();
    Map<String, UUID> ids = client.enqueueGraph(graph.build()).ids();
    long enqueueNanos = System.nanoTime() - enqueueStart;
    UUID callback = ids.get("callback");
    assertThat(count("SELECT waiting_on FROM pgjobs.jobs WHERE id = '" + callback + "'"))
        .isEqualTo(PARENTS);

    AtomicInteger callbackRuns = new AtomicInteger();
    AtomicInteger parentsRun = new AtomicInteger();
    AtomicInteger parentsBeforeCallback = new AtomicInteger(-1);
    long drainStart = System.nanoTime();
    for (String id : new String[] {"fan-in-a", "fan-in-b"}) {
      start(worker().workerId(id).queue("fan-in", 20).register(PART, (ctx, part) -> {
        if (part.n() < 0) {
          parentsBeforeCallback.compareAndSet(-1, parentsRun.get());
          callbackRuns.incrementAndGet();
        } else {
          parentsRun.incrementAndGet();
        }
        return null;
      }));
    }
    Job done = awaitState(callback, JobState.SUCCEEDED, Duration.ofMinutes(5));
    long drainNanos = System.nanoTime() - drainStart;

    assertThat(callbackRuns.get()).as("runs of the callback").isEqualTo(1);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(parentsBeforeCallback.get())
        .as("parents run when the callback started")
        .isEqualTo(PARENTS);
    assertThat(
            count(
                "SELECT count(*) FROM pgjobs.finished_jobs WHERE queue = 'fan-in' AND state = 'succeeded'"))
        .isEqualTo(PARENTS + 1);
    assertThat(count("SELECT count(*) FROM pgjobs.job_dependencies WHERE child_id = '" + callback
            + "' AND parent_state = 'succeeded'"))
        .as("edges resolved, each once")
        .isEqualTo(PARENTS);
    System.out.printf(
        "fan-in of %,d: enqueued in %.1f s, all parents and the callback run in %.1f s (%,.0f jobs/s)%n",
        PARENTS, enqueueNanos / 1e9, drainNanos / 1e9, (PARENTS + 1) / (drainNanos / 1e9));
  }
}
