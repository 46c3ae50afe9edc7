package io.pgjobs.server.api;

import io.pgjobs.JobClient;
import io.pgjobs.replication.DatabaseRole;
import io.pgjobs.server.problem.ApiProblem;
import java.sql.Connection;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code /health/live} (the process answers) and {@code /health/ready} (it can reach the database and the
 * database takes writes: a read-only standby answers 503 {@code database-read-only} with the reason, so a
 * load balancer sends no requests to a server that can only refuse them).
 * Both are open even when tokens are configured.
 */
public final class HealthApi {
  private static final Logger log = LoggerFactory.getLogger(HealthApi.class);
  private static final int DATABASE_CHECK_SECONDS = 2;

  private final JobClient client;

  /** Checks {@code client}'s database. */
  public HealthApi(JobClient client) {
    this.client = client;
  }

  /** Registers the routes. */
  public void register(Routes routes) {
    routes.get("/health/live", ctx -> Reply.ok(new HealthView("up", Map.of())));
    routes.get("/health/ready", ctx -> ready());
  }

  private Reply ready() {
    String problem;
    Optional<String> readOnly = Optional.empty();
    try (Connection c = client.dataSource().getConnection()) {
      problem = c.isValid(DATABASE_CHECK_SECONDS)
          ? null
          : "the connection did not answer within " + DATABASE_CHECK_SECONDS + " s";
      if (problem == null) {
        readOnly = DatabaseRole.readOnlyReason(c);
      }
    } catch (Exception e) {
      problem = "cannot connect (" + e.getClass().getSimpleName() + ")";
    }
    if (problem != null) {
      log.warn("not ready: {}", problem);
      throw ApiProblem.unavailable("the database is unavailable: " + problem);
    }
    if (readOnly.isPresent()) {
      log.warn("not ready: {}", readOnly.get());
      throw ApiProblem.databaseReadOnly(readOnly.get());
    }
    return Reply.ok(new HealthView("up", Map.of("database", "up")));
  }

  /**
   * Health.
   *
   * @param status {@code up}
   * @param checks each dependency checked, with its status
   */
  public record HealthView(String status, Map<String, String> checks) {}
}
