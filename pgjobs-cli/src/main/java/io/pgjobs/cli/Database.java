package io.pgjobs.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.schema.Migrator;
import io.pgjobs.workflow.WorkflowType;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import javax.sql.DataSource;

/**
 * The database a command works on: a connection pool and a {@link JobClient}. Opening it checks the
 * connection first, so an unreachable server fails with one clear line instead of a pool's stack trace.
 */
final class Database implements AutoCloseable {
  private final DatabaseUrl url;
  private final HikariDataSource pool;
  private final JobClient client;
  private final boolean created;
  private final HikariDataSource listenPool;

  private Database(
      DatabaseUrl url,
      HikariDataSource pool,
      JobClient client,
      boolean created,
      HikariDataSource listenPool) {
    this.url = url;
    this.pool = pool;
    this.client = client;
    this.created = created;
    this.listenPool = listenPool;
  }

  /**
   * Opens the configured database.
   *
   * @param create create the database if it does not exist
   * @param knownTypes job types whose defaults and payload validation apply when enqueueing by name
   * @throws CommandFailedException when the server cannot be reached or the login is refused
   */
  static Database open(
      Settings settings, boolean create, Collection<? extends JobType<?>> knownTypes) {
    return open(settings, create, knownTypes, null);
  }

  /**
   * Same, with the client's enqueues counted in {@code metrics} ({@code pgjobs_jobs_enqueued_total}), or
   * not when it is null.
   */
  static Database open(
      Settings settings,
      boolean create,
      Collection<? extends JobType<?>> knownTypes,
      JobMetrics metrics) {
    return open(settings, create, knownTypes, List.of(), metrics);
  }

  /**
   * Same, with {@code knownWorkflows} known to the client as workflows (what the API lists, lists the runs
   * of and starts).
   */
  static Database open(
      Settings settings,
      boolean create,
      Collection<? extends JobType<?>> knownTypes,
      Collection<? extends WorkflowType<?>> knownWorkflows,
      JobMetrics metrics) {
    DatabaseUrl url = settings.databaseUrl();
    boolean created = false;
    try {
      if (create) {
        created = url.createDatabaseIfMissing();
      }
      try (Connection probe = url.connect()) {
        probe.isValid(5);
      }
    } catch (SQLException e) {
      throw new CommandFailedException(Failures.describe(e, url.toString()), e);
    }
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url.jdbcUrl());
    config.setDataSourceProperties(url.properties());
    config.setMaximumPoolSize(settings.poolSize());
    config.setMinimumIdle(1);
    config.setConnectionTimeout(10_000);
    config.setPoolName("pgjobs");
    HikariDataSource pool;
    try {
      pool = new HikariDataSource(config);
    } catch (RuntimeException e) {
      throw new CommandFailedException(
          "cannot connect to the database at " + url + ": " + Failures.describe(e), e);
    }
    JobClient.Builder builder = JobClient.builder(pool)
        .schema(settings.schema())
        .knownTypes(knownTypes)
        .knownWorkflows(knownWorkflows);
    if (metrics != null) {
      builder.metrics(metrics);
    }
    JobClient client = builder.build();
    HikariDataSource listenPool = null;
    if (settings.listenDatabaseUrl().isPresent()) {
      try {
        listenPool = listenPool(settings.listenDatabaseUrl().get());
      } catch (CommandFailedException e) {
        pool.close();
        throw e;
      }
    }
    return new Database(url, pool, client, created, listenPool);
  }

  /**
   * The direct connections of {@code listen_database_url}: one LISTEN connection per worker and one for
   * the API's event stream, held for the process's life.
   */
  private static HikariDataSource listenPool(DatabaseUrl listenUrl) {
    try (Connection probe = listenUrl.connect()) {
      probe.isValid(5);
    } catch (SQLException e) {
      throw new CommandFailedException(
          "listen_database_url: " + Failures.describe(e, listenUrl.toString()), e);
    }
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(listenUrl.jdbcUrl());
    config.setDataSourceProperties(listenUrl.properties());
    config.setMaximumPoolSize(3);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(10_000);
    config.setPoolName("pgjobs-listen");
    try {
      return new HikariDataSource(config);
    } catch (RuntimeException e) {
      throw new CommandFailedException(
          "cannot connect to listen_database_url " + listenUrl + ": " + Failures.describe(e), e);
    }
  }

  /** The direct data source for LISTEN ({@code listen_database_url}), or null when not configured. */
  DataSource listenDataSource() {
    return listenPool;
  }

  /** Creates the schema or applies pending migrations; returns how many were applied. */
  int migrate() {
    try {
      return Migrator.migrate(pool, client.schema());
    } catch (RuntimeException e) {
      throw new CommandFailedException(
          "migration of schema '" + client.schema() + "' at " + url + " failed: "
              + Failures.describe(e),
          e);
    }
  }

  /** True if {@link #open} created the database. */
  boolean created() {
    return created;
  }

  /** Where the database is (password hidden). */
  DatabaseUrl url() {
    return url;
  }

  /** The client. */
  JobClient client() {
    return client;
  }

  /** The pool. */
  DataSource dataSource() {
    return pool;
  }

  @Override
  public void close() {
    if (listenPool != null) {
      listenPool.close();
    }
    pool.close();
  }
}
