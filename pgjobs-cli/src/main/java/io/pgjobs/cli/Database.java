package io.pgjobs.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.schema.Migrator;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
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

  private Database(DatabaseUrl url, HikariDataSource pool, JobClient client, boolean created) {
    this.url = url;
    this.pool = pool;
    this.client = client;
    this.created = created;
  }

  /**
   * Opens the configured database.
   *
   * @param create create the database if it does not exist
   * @param knownTypes job types whose defaults and payload validation apply when enqueueing by name
   * @throws CommandFailedException when the server cannot be reached or the login is refused
   */
  static Database open(Settings settings, boolean create, Collection<? extends JobType<?>> knownTypes) {
    return open(settings, create, knownTypes, null);
  }

  /**
   * Same, with the client's enqueues counted in {@code metrics} ({@code pgjobs_jobs_enqueued_total}), or
   * not when it is null.
   */
  static Database open(
      Settings settings, boolean create, Collection<? extends JobType<?>> knownTypes, JobMetrics metrics) {
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
      throw new CommandFailedException("cannot connect to the database at " + url + ": " + Failures.describe(e), e);
    }
    JobClient.Builder builder = JobClient.builder(pool).schema(settings.schema()).knownTypes(knownTypes);
    if (metrics != null) {
      builder.metrics(metrics);
    }
    JobClient client = builder.build();
    return new Database(url, pool, client, created);
  }

  /** Creates the schema or applies pending migrations; returns how many were applied. */
  int migrate() {
    try {
      return Migrator.migrate(pool, client.schema());
    } catch (RuntimeException e) {
      throw new CommandFailedException("migration of schema '" + client.schema() + "' at " + url + " failed: "
          + Failures.describe(e), e);
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
    pool.close();
  }
}
