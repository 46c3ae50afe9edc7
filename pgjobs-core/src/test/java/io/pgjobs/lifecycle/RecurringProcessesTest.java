package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.lifecycle.WorkerProcesses.WorkerProcess;
import io.pgjobs.testkit.Tags;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A schedule every second declared by three worker processes: exactly one job per slot, no gap and no
 * double, while the maintenance leader that fires the slots is killed with {@code kill -9} halfway.
 */
@Tag(Tags.PROCESS)
class RecurringProcessesTest extends LifecycleTestBase {
  private static final String[] SETTINGS = {"concurrency=4", "recurring=tick", "leaseTtlMs=2000"};

  private static List<Instant> slots() throws Exception {
    List<Instant> slots = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(
            "SELECT context FROM pgjobs.jobs WHERE context LIKE 'recurring tick @ %'"
                + " UNION ALL SELECT context FROM pgjobs.finished_jobs WHERE context LIKE 'recurring tick @ %'")) {
      while (rs.next()) {
        slots.add(Instant.parse(rs.getString(1).substring("recurring tick @ ".length())));
      }
    }
    slots.sort(null);
    return slots;
  }

  @Test
  void oneJobPerSlotWithNoGapNorDoubleWhileTheLeaderIsKilled() throws Exception {
    Map<String, WorkerProcess> workers = new HashMap<>();
    for (int i = 0; i < 3; i++) {
      workers.put("tick-w" + i, processes.start("tick-w" + i, db.jdbcUrl(), SETTINGS));
    }
    await("slots fire").atMost(Duration.ofSeconds(120)).until(() -> slots().size() >= 5);
    String leader = queryString("SELECT holder FROM pgjobs.leases WHERE name = ?", "maintenance");
    assertThat(workers).containsKey(leader);
    int beforeKill = slots().size();
    workers.get(leader).kill();
    // The lease (2 s) expires, another process leads and fires the slots it finds due, then goes
    // on.
    await("slots fire again after the leader's death")
        .atMost(Duration.ofSeconds(60))
        .until(() -> slots().size() >= beforeKill + 8);

    List<Instant> slots = slots();
    assertThat(slots).as("no slot twice").doesNotHaveDuplicates();
    Instant first = slots.get(0);
    assertThat(first.getNano()).as("slots are whole seconds").isZero();
    for (int i = 0; i < slots.size(); i++) {
      assertThat(slots.get(i)).as("slot %d: no gap", i).isEqualTo(first.plusSeconds(i));
    }
    System.out.printf(
        "recurring: %d slots from %s to %s, leader %s killed after %d%n",
        slots.size(), first, slots.get(slots.size() - 1), leader, beforeKill);
  }
}
