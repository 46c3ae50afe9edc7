package io.pgjobs.replication;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Says at start when the primary acknowledges commits before a standby has them, and so what a failover
 * to a standby can lose: jobs enqueued, claims, completions and retries acknowledged in the last moments
 * before the primary failed. pgjobs cannot prevent that loss; synchronous replication
 * ({@code synchronous_standby_names} naming a standby, {@code synchronous_commit} on or stronger) does.
 * See docs/guarantees.md, "Failover".
 */
public final class ReplicationCheck {
  private static final Logger log = LoggerFactory.getLogger(ReplicationCheck.class);

  private ReplicationCheck() {}

  /**
   * The warning for {@code connection}'s server, or empty when a failover to a standby cannot lose an
   * acknowledged commit (a synchronous standby is configured and commits wait for it), or when no
   * standby is attached and none is configured (a single server: nothing to fail over to).
   *
   * @throws SQLException if the query fails
   */
  public static Optional<String> commitLossWarning(Connection connection) throws SQLException {
    try (Statement st = connection.createStatement();
        ResultSet rs = st.executeQuery(ReplicationSql.SETTINGS)) {
      rs.next();
      String synchronousCommit = rs.getString("synchronous_commit").toLowerCase(Locale.ROOT);
      String standbyNames = rs.getString("synchronous_standby_names").trim();
      long standbys = rs.getLong("standbys");
      long synchronousStandbys = rs.getLong("synchronous_standbys");
      String loss =
          "a failover to a standby can lose jobs enqueued, claimed, completed or retried in the last"
              + " moments before the primary failed (acknowledged to the caller but never on the standby); jobs a lost"
              + " worker held come back only after the dead-worker threshold. See docs/guarantees.md, \"Failover\"";
      if (synchronousCommit.equals("off") || synchronousCommit.equals("local")) {
        if (standbys == 0 && standbyNames.isEmpty()) {
          return Optional
              .empty(); // off on a single server loses commits in a crash, not in a failover
        }
        return Optional.of("synchronous_commit is " + synchronousCommit
            + ": the primary acknowledges a commit" + " before any standby has it, so " + loss);
      }
      if (standbyNames.isEmpty() && standbys > 0) {
        return Optional.of(
            standbys + " standby(s) replicate asynchronously (synchronous_standby_names is empty):"
                + " the primary acknowledges a commit before a standby has it, so " + loss);
      }
      if (!standbyNames.isEmpty() && synchronousStandbys == 0) {
        return Optional.of(
            "synchronous_standby_names is '" + standbyNames + "' but no synchronous standby is"
                + " attached now: commits wait until one is (the primary may appear stuck), and a standby promoted"
                + " meanwhile may miss commits the old primary had");
      }
      return Optional.empty();
    }
  }

  /**
   * Logs {@link #commitLossWarning(Connection)} as a WARN on {@code dataSource}'s server, if there is one.
   * Never fails: a check that cannot run is logged at DEBUG (the caller's own start reports a database
   * that is away).
   *
   * @return the warning logged, or empty
   */
  public static Optional<String> warnIfCommitsCanBeLost(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      Optional<String> warning = commitLossWarning(c);
      warning.ifPresent(w -> log.warn("replication: {}", w));
      return warning;
    } catch (SQLException | RuntimeException e) {
      log.debug("replication settings could not be read: {}", e.toString());
      return Optional.empty();
    }
  }
}
