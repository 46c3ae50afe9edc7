package io.pgjobs.server;

import io.pgjobs.schema.Migrator;
import io.pgjobs.testkit.DatabaseTemplate;
import io.pgjobs.testkit.TestDatabase;

/** A test database with the {@code pgjobs} schema migrated, copied from a template migrated once per server. */
public final class MigratedDatabase {
  /** The {@code pgjobs} schema at the latest migration (the same template as core's tests use). */
  static final DatabaseTemplate TEMPLATE =
      DatabaseTemplate.of("pgjobs", "io/pgjobs/db/migration", ds -> Migrator.migrate(ds, "pgjobs"));

  private MigratedDatabase() {}

  /** A new database whose {@code pgjobs} schema is up to date. */
  public static TestDatabase create() {
    return TestDatabase.create(TEMPLATE);
  }
}
