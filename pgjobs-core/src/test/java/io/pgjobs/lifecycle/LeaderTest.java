package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.Job;
import io.pgjobs.JobError;
import io.pgjobs.JobState;
import io.pgjobs.lifecycle.Lifecycle.Work;
import io.pgjobs.lifecycle.WorkerProcesses.WorkerProcess;
import io.pgjobs.maintenance.Maintenance;
import io.pgjobs.testkit.Tags;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Maintenance leadership through the {@code pgjobs.leases} row 'maintenance': one leader at a time, and
 * a new one within the lease's time to live when the old one goes away, which then does the rescuing.
 */
@Tag(Tags.PROCESS)
class LeaderTest extends LifecycleTestBase {
  /** Renewed every second: two seconds of slack before a busy machine makes a lease lapse. */
  private static final Duration TTL = Duration.ofSeconds(3);

  private static final Duration LONG =
      Duration.ofSeconds(60); // a child JVM starting on a loaded machine

  private final List<Maintenance> nodes = new ArrayList<>();

  @AfterEach
  void closeNodes() {
    nodes.forEach(Maintenance::close);
  }

  private Maintenance startNode(String holder, DataSource dataSource) {
    Maintenance node = Maintenance.builder(dataSource)
        .holderId(holder)
        .leaseTtl(TTL)
        .staleThreshold(Duration.ofSeconds(2))
        .rescueInterval(Duration.ofMillis(200))
        .build();
    nodes.add(node);
    return node.start();
  }

  private static String leaseHolder() {
    return queryString(
        "SELECT holder FROM pgjobs.leases WHERE name = 'maintenance' AND expires_at > now()");
  }

  private static void awaitRescued(UUID id, String deadWorker) {
    Job rescued = awaitState(id, JobState.RETRYING, LONG);
    assertThat(rescued.lockedBy()).isNull();
    assertThat(rescued.attempts()).isEqualTo(1);
    assertThat(rescued.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("worker_lost");
      assertThat(e.worker()).isEqualTo(deadWorker);
    });
  }

  /** Waits until exactly one of the two leads, and checks it stays so, with the same leader, for 3 s. */
  private static Maintenance awaitSingleStableLeader(Maintenance a, Maintenance b) {
    await().atMost(LONG).until(() -> a.isLeader() || b.isLeader());
    Maintenance leader = a.isLeader() ? a : b;
    await("exactly one leader, and always the same")
        .during(Duration.ofSeconds(3))
        .atMost(Duration.ofSeconds(6))
        .until(() -> leader.isLeader() && !(leader == a ? b : a).isLeader());
    return leader;
  }

  @Test
  void exactlyOneOfTwoNodesLeadsAndClosingItHandsTheLeadOver() {
    Maintenance a = startNode("node-a", db.newDataSource(2));
    Maintenance b = startNode("node-b", db.newDataSource(2));

    Maintenance leader = awaitSingleStableLeader(a, b);
    Maintenance follower = leader == a ? b : a;
    String leaderId = leader == a ? "node-a" : "node-b";
    String followerId = leader == a ? "node-b" : "node-a";
    assertThat(leaseHolder()).isEqualTo(leaderId);
    assertThat(count("pgjobs.leases")).isEqualTo(1);
    assertThat(leader.passes()).as("the leader runs the tasks").isPositive();
    assertThat(follower.passes()).as("the follower does not").isZero();

    long closedAt = System.nanoTime();
    leader.close();

    await("the follower takes over").atMost(Duration.ofSeconds(5)).until(follower::isLeader);
    System.out.printf(
        "leader closed: follower leads after %d ms%n", (System.nanoTime() - closedAt) / 1_000_000);
    assertThat(leader.isLeader()).isFalse();
    assertThat(leaseHolder()).isEqualTo(followerId);
    UUID stale = plantStaleRunningJob("ghost-worker");
    awaitRescued(stale, "ghost-worker");
  }

  @Test
  void leaderThatLosesTheDatabaseIsReplacedWithinTheLeaseTtl() {
    HikariDataSource poolA = db.newDataSource(2);
    HikariDataSource poolB = db.newDataSource(2);
    Maintenance a = startNode("cut-a", poolA);
    Maintenance b = startNode("cut-b", poolB);
    Maintenance leader = awaitSingleStableLeader(a, b);
    Maintenance follower = leader == a ? b : a;
    String followerId = leader == a ? "cut-b" : "cut-a";

    // Cut the leader off: it can neither renew nor give up its lease, which expires by itself.
    long cutAt = System.nanoTime();
    (leader == a ? poolA : poolB).close();

    await("the follower takes over once the lease expires")
        .atMost(Duration.ofSeconds(10))
        .until(follower::isLeader);
    Duration takeover = Duration.ofNanos(System.nanoTime() - cutAt);
    System.out.printf("leader cut off: follower leads after %d ms%n", takeover.toMillis());
    assertThat(takeover)
        .as("within the TTL plus one renew interval, and some slack")
        .isLessThan(Duration.ofSeconds(8));
    await("the cut-off node stops acting as leader")
        .atMost(Duration.ofSeconds(5))
        .until(() -> !leader.isLeader());
    assertThat(leaseHolder()).isEqualTo(followerId);
    UUID stale = plantStaleRunningJob("ghost-worker");
    awaitRescued(stale, "ghost-worker");
  }

  @Test
  void killedLeaderProcessIsReplacedAndItsAbandonedJobIsRescued() {
    WorkerProcess leaderProcess = processes.start(
        "leader-jvm",
        db.jdbcUrl(),
        "concurrency=2",
        "staleMs=2000",
        "leaseTtlMs=3000",
        "heartbeatMs=200");
    await().atMost(LONG).until(() -> "leader-jvm".equals(leaseHolder()));
    UUID abandoned = client
        .enqueue(Lifecycle.WORK, Work.blockingFirstAttempt(Duration.ofSeconds(60)))
        .job()
        .id();
    await().atMost(LONG).until(() -> "running".equals(storedState(abandoned)));
    Maintenance standby = startNode("standby", db.newDataSource(2));
    await("the standby does not lead while the leader lives")
        .during(Duration.ofMillis(2_500))
        .atMost(Duration.ofSeconds(5))
        .until(() -> !standby.isLeader() && "leader-jvm".equals(leaseHolder()));

    long killedAt = System.nanoTime();
    leaderProcess.kill();

    await("the standby takes over").atMost(Duration.ofSeconds(15)).until(standby::isLeader);
    Duration takeover = Duration.ofNanos(System.nanoTime() - killedAt);
    System.out.printf("leader process killed: standby leads after %d ms%n", takeover.toMillis());
    assertThat(takeover)
        .as("within its 3 s lease plus one renew interval, and some slack")
        .isLessThan(Duration.ofSeconds(8));
    assertThat(leaseHolder()).isEqualTo("standby");
    awaitRescued(abandoned, "leader-jvm");
    assertThat(errors(abandoned)).extracting(JobError::attempt).containsExactly(1);
    await("the dead worker's registration is removed")
        .atMost(LONG)
        .until(() -> count("SELECT count(*) FROM pgjobs.workers WHERE id = 'leader-jvm'") == 0);
  }
}
