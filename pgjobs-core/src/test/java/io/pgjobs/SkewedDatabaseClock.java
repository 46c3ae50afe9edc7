package io.pgjobs;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.testkit.TestDatabase;
import java.time.Duration;

/**
 * A pool on which the database's clock runs {@code behind} the application's: the application's clock
 * is then ahead of the database's by that much, as on a node whose clock drifted. Its connections put
 * schema {@code skew} before {@code pg_catalog} on their search path, where {@code skew.now()} returns
 * the server's time minus {@code behind}: every unqualified {@code now()} of pgjobs' statements reads the
 * skewed clock (column defaults, bound to {@code pg_catalog.now()} when the schema was made, do not:
 * a test sets such columns itself on this pool).
 */
public final class SkewedDatabaseClock implements AutoCloseable {
  private final HikariDataSource dataSource;

  public SkewedDatabaseClock(TestDatabase db, Duration behind) {
    db.execute(
        "CREATE SCHEMA IF NOT EXISTS skew",
        "CREATE OR REPLACE FUNCTION skew.now() RETURNS timestamptz LANGUAGE sql STABLE AS"
            + " $$ SELECT pg_catalog.now() - interval '" + behind.toMillis() + " milliseconds' $$");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setMaximumPoolSize(10);
    config.setMinimumIdle(0);
    config.setConnectionInitSql("SET search_path = skew, pg_catalog, public");
    config.setPoolName(db.name() + "-skewed");
    this.dataSource = new HikariDataSource(config);
  }

  /** The pool whose {@code now()} is the skewed clock. */
  public HikariDataSource dataSource() {
    return dataSource;
  }

  @Override
  public void close() {
    dataSource.close();
  }
}
