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
    TestDatabase db = TestDatabase.create(TEMPLATE);
    // The template keeps the history partitions of the hour it was migrated in (V7 makes that
    // hour's and
    // the next two), and it is kept on the server for as long as the migrations do not change: a
    // copy
    // made three hours later had no partition for now, its finished jobs went to the default
    // partition,
    // and the first maintenance pass then failed to attach this hour's partition over them (a
    // fresh-clone
    // run at 18:01 UTC, template from 15:50: jobs stuck, outcomes unwritable). Make them as a
    // migration
    // made now would.
    db.execute("SELECT pgjobs.ensure_history_partitions(interval '1 hour', interval '2 hours')");
    return db;
  }
}
