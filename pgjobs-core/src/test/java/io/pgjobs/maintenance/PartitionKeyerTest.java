package io.pgjobs.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.QueueLimits;
import io.pgjobs.store.LimitsStore;
import io.pgjobs.testkit.Tags;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The leader keys waiting jobs of partitioned queues that came without their partition key, without
 * reading every waiting job of those queues every second: it looks each second while it finds such jobs
 * and right after a rule changes, and otherwise at gaps that double up to a minute.
 */
@Tag(Tags.SLOW) // waits out gaps of one and two seconds
class PartitionKeyerTest extends PgJobsTestBase {
  private static final JobType<Numbered> KEYED =
      JobType.of("keyed-work", Numbered.class).withQueue("by-n");

  /** A job as a client that had not read the queue's rule yet would have enqueued it: without a key. */
  private static UUID unkeyed(int n) {
    UUID id =
        client.enqueue(KEYED, new Numbered(n), EnqueueOptions.DEFAULTS).job().id();
    db.execute("UPDATE pgjobs.jobs SET limit_key = NULL WHERE id = '" + id + "'");
    return id;
  }

  private static boolean keyed(UUID id) {
    return count(
            "SELECT count(*) FROM pgjobs.jobs WHERE id = '" + id + "' AND limit_key IS NOT NULL")
        == 1;
  }

  @Test
  void unkeyedJobsAreKeyedAndQuietLooksForThemBackOffWhileARuleChangeBringsOneAtOnce()
      throws Exception {
    client.setLimits(
        "by-n",
        QueueLimits.builder().partitionBy("input.n").partitionConcurrency(2).build());
    PartitionKeyer keyer =
        new PartitionKeyer(new LimitsStore(db.dataSource(), "pgjobs"), Duration.ZERO);

    UUID first = unkeyed(1);
    keyer.run(); // the rules are new to it: it looks at once
    assertThat(keyed(first)).isTrue();
    assertThat(count(
            "SELECT count(*) FROM pgjobs.jobs WHERE id = '" + first + "' AND limit_key = '1'"))
        .as("the key the rule gives: the payload's field n")
        .isEqualTo(1);
    assertThat(keyer.looks()).isEqualTo(1);
    assertThat(keyer.gap()).isEqualTo(Duration.ofSeconds(1));

    // Within the gap a run does not read the waiting jobs: a job left without its key stays so.
    UUID second = unkeyed(2);
    keyer.run();
    assertThat(keyer.looks()).isEqualTo(1);
    assertThat(keyed(second)).isFalse();

    // At the gap's end it looks, and keys it; having found one, it looks again a second later.
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).until(() -> {
      keyer.run();
      return keyed(second);
    });
    assertThat(keyer.looks()).isEqualTo(2);
    assertThat(keyer.gap()).isEqualTo(Duration.ofSeconds(1));

    // Looks that find nothing space out: 1 s, then 2 s.
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).until(() -> {
      keyer.run();
      return keyer.looks() == 3;
    });
    assertThat(keyer.gap()).isEqualTo(Duration.ofSeconds(2));
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).until(() -> {
      keyer.run();
      return keyer.looks() == 4;
    });
    assertThat(keyer.gap()).isEqualTo(Duration.ofSeconds(4));

    // A change of a partitioned queue's limits: the next run looks, whatever the gap.
    UUID third = unkeyed(3);
    client.setLimits(
        "by-n",
        QueueLimits.builder().partitionBy("input.n").partitionConcurrency(3).build());
    db.execute("UPDATE pgjobs.jobs SET limit_key = NULL WHERE id = '" + third + "'");
    keyer.run();
    assertThat(keyer.looks()).isEqualTo(5);
    assertThat(keyed(third)).isTrue();
  }
}
