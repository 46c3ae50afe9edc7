/**
 * Test support for pgjobs and its users: {@link io.pgjobs.testkit.TestDatabase} (a throw-away database on
 * a real PostgreSQL, copied from a migrated {@link io.pgjobs.testkit.DatabaseTemplate}), {@link
 * io.pgjobs.testkit.JobRows} (jobs planted in any state), {@link io.pgjobs.testkit.Await} (the one wait
 * for a job's state), {@link io.pgjobs.testkit.JvmProcess} (a child JVM on the test class path, for tests
 * that kill worker processes), {@link io.pgjobs.testkit.PostgresCluster} (a private primary and streaming
 * standby, for tests that crash the one and promote the other), {@link io.pgjobs.testkit.Tags} (the test
 * pyramid's tiers) and {@link io.pgjobs.testkit.Exclusive} (a server-wide lock for the classes that load
 * the whole machine). Independent of pgjobs-core so that core's own tests can use it.
 */
package io.pgjobs.testkit;
