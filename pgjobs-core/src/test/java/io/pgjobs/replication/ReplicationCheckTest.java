package io.pgjobs.replication;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.testkit.PostgresCluster;
import io.pgjobs.testkit.PostgresCluster.Node;
import io.pgjobs.testkit.PostgresCluster.Replication;
import io.pgjobs.testkit.Tags;
import io.pgjobs.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The start-up warning about what a failover can lose, read from a real primary with a streaming standby
 * ({@link PostgresCluster}) as its replication settings change, and from a single server.
 */
@Tag(Tags.PROCESS)
class ReplicationCheckTest {
  @Test
  void onlyAPrimaryThatAcknowledgesBeforeItsStandbyIsWarnedAbout() throws SQLException {
    try (PostgresCluster cluster = PostgresCluster.start(Replication.ASYNCHRONOUS)) {
      assertThat(warning(cluster, Node.PRIMARY))
          .hasValueSatisfying(w -> assertThat(w)
              .contains(
                  "1 standby(s) replicate asynchronously",
                  "failover",
                  "can lose",
                  "guarantees.md"));

      cluster.setSynchronous(true);
      assertThat(warning(cluster, Node.PRIMARY))
          .as("a synchronous standby, commits wait for it")
          .isEmpty();

      cluster.setPrimarySetting("synchronous_commit", "local");
      assertThat(warning(cluster, Node.PRIMARY))
          .hasValueSatisfying(w ->
              assertThat(w).contains("synchronous_commit is local", "before any standby has it"));

      cluster.setPrimarySetting("synchronous_commit", "off");
      assertThat(warning(cluster, Node.PRIMARY))
          .hasValueSatisfying(w -> assertThat(w).contains("synchronous_commit is off"));
    }
  }

  @Test
  void aSingleServerWithoutStandbysIsNotWarnedAbout() throws SQLException {
    String admin =
        System.getenv().getOrDefault("PGJOBS_TEST_DATABASE_URL", TestDatabase.DEFAULT_ADMIN_URL);
    try (Connection c = DriverManager.getConnection(admin)) {
      assertThat(ReplicationCheck.commitLossWarning(c)).isEmpty();
    }
  }

  private static Optional<String> warning(PostgresCluster cluster, Node node) throws SQLException {
    try (Connection c = DriverManager.getConnection(cluster.jdbcUrl(node, "postgres"))) {
      return ReplicationCheck.commitLossWarning(c);
    }
  }
}
