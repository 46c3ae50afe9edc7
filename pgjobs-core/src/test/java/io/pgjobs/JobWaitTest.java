package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.FlowControlTest.Work;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Why one job waits ({@link JobClient#limitsWait}, issue 29): each limit that can hold a job back, computed
 * for the job's own partition. Jobs are made running by SQL, as a limited claim leaves them (state, lock,
 * key); no worker runs here, so no maintenance rescues them and no claim changes what is counted.
 */
class JobWaitTest extends PgJobsTestBase {
  private static final JobType<Work> WORK = FlowControlTest.WORK;

  @BeforeEach
  void noLimits() {
    db.execute("TRUNCATE pgjobs.queues, pgjobs.queue_rates");
  }

  private static UUID enqueue(String account) {
    return client.enqueue(WORK, new Work(account, 1, 0, 0)).job().id();
  }

  /** Makes the job running as a limited claim would, counted under {@code key}. */
  private static void running(UUID id, String key) {
    db.execute(
        "UPDATE pgjobs.jobs SET state = 'running', locked_by = 'job-wait-test', attempts = 1,"
            + " claim_token = 1, heartbeat_at = now(), attempted_at = now(), limit_key = '" + key
            + "'"
            + " WHERE id = '" + id + "'");
  }

  /** Records a start just now under a rate of one an hour: the next one is allowed in an hour. */
  private static void startedJustNow(int kind, String partition) {
    db.execute("INSERT INTO pgjobs.queue_rates (queue, kind, partition, tat) VALUES ('limited', "
        + kind + ", '" + partition + "', now() + interval '1 hour')");
  }

  @Test
  void aJobWaitsAtTheGlobalLimitWhileTheQueueRunsAsManyAsItAllows() {
    client.setLimits("limited", QueueLimits.builder().globalConcurrency(1).build());
    UUID first = enqueue("a");
    UUID second = enqueue("a");
    assertThat(client.limitsWait(second))
        .as("nothing runs: it waits for a lane only")
        .contains(new JobWait(second, "limited", "", null));

    running(first, "");
    assertThat(client.limitsWait(second))
        .contains(new JobWait(second, "limited", "", QueueLimitsStatus.AT_GLOBAL_LIMIT));
    assertThat(client.limitsWait(first)).as("running, not waiting").isEmpty();
    assertThat(client.limitsPartition(first)).contains("");
  }

  @Test
  void aJobIsRateLimitedWhileTheQueuesRateAllowsNoStart() {
    client.setLimits(
        "limited", QueueLimits.builder().rate(1, Duration.ofHours(1)).build());
    UUID id = enqueue("a");
    assertThat(client.limitsWait(id).orElseThrow().waitingFor()).isNull();

    startedJustNow(0, "");
    assertThat(client.limitsWait(id).orElseThrow().waitingFor())
        .isEqualTo(QueueLimitsStatus.RATE_LIMITED);
  }

  @Test
  void aJobWaitsForItsBusyPartitionEvenWhenItIsNotAmongTheBusiestReported() {
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .partitionBy("input.account")
            .partitionConcurrency(1)
            .build());
    // 60 partitions busier than "zz" push it out of the 50 the queue's status reports.
    List<Work> others = new ArrayList<>();
    for (int p = 0; p < 60; p++) {
      for (int i = 0; i < 3; i++) {
        others.add(new Work(String.format("p%02d", p), i, 0, 0));
      }
    }
    client.enqueueAll(WORK, others, EnqueueOptions.DEFAULTS);
    UUID runningJob = enqueue("zz");
    UUID waiting = enqueue("zz");
    UUID free = enqueue("free");
    running(runningJob, "zz");

    assertThat(client.limitsStatus("limited").orElseThrow().partitions())
        .extracting(QueueLimitsStatus.Partition::partition)
        .doesNotContain("zz");
    assertThat(client.limitsWait(waiting))
        .contains(new JobWait(waiting, "limited", "zz", QueueLimitsStatus.PARTITION_BUSY));
    assertThat(client.limitsWait(free))
        .as("another partition with room waits for a lane only")
        .contains(new JobWait(free, "limited", "free", null));
    assertThat(client.limitsPartition(runningJob)).contains("zz");
  }

  @Test
  void aJobIsPartitionRateLimitedWhileItsPartitionsRateAllowsNoStart() {
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .partitionBy("input.account")
            .partitionRate(1, Duration.ofHours(1), 1)
            .build());
    UUID a = enqueue("a");
    UUID b = enqueue("b");
    startedJustNow(1, "a");

    assertThat(client.limitsWait(a))
        .contains(new JobWait(a, "limited", "a", JobWait.PARTITION_RATE_LIMITED));
    assertThat(client.limitsWait(b).orElseThrow().waitingFor())
        .as("b's rate has room")
        .isNull();
  }

  @Test
  void theQueuesLimitsComeBeforeThePartitionsAsTheClaimAppliesThem() {
    client.setLimits(
        "limited",
        QueueLimits.builder()
            .globalConcurrency(1)
            .partitionBy("input.account")
            .partitionConcurrency(1)
            .build());
    UUID first = enqueue("a");
    UUID second = enqueue("a");
    running(first, "a");
    assertThat(client.limitsWait(second).orElseThrow().waitingFor())
        .isEqualTo(QueueLimitsStatus.AT_GLOBAL_LIMIT);
  }

  @Test
  void nothingForAMissingJobAJobThatDoesNotWaitOrAnUnlimitedQueue() {
    assertThat(client.limitsWait(UUID.randomUUID())).isEmpty();
    assertThat(client.limitsPartition(UUID.randomUUID())).isEmpty();

    UUID unlimited = enqueue("a");
    assertThat(client.limitsWait(unlimited)).as("unlimited queue").isEmpty();
    assertThat(client.limitsPartition(unlimited)).isEmpty();

    client.setLimits("limited", QueueLimits.builder().globalConcurrency(1).build());
    UUID later = client
        .enqueue(
            WORK,
            new Work("a", 2, 0, 0),
            EnqueueOptions.builder()
                .runAt(Instant.now().plus(Duration.ofHours(1)))
                .build())
        .job()
        .id();
    assertThat(client.limitsWait(later)).as("scheduled for later").isEmpty();
    assertThat(client.limitsWait(unlimited)).as("due now the queue is limited").isPresent();
  }
}
