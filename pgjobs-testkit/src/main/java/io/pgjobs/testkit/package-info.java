/**
 * Test support for pgjobs and its users: {@link io.pgjobs.testkit.TestDatabase} (a throw-away database on
 * a real PostgreSQL), {@link io.pgjobs.testkit.JvmProcess} (a child JVM on the test class path, for
 * tests that kill worker processes) and {@link io.pgjobs.testkit.PostgresCluster} (a private primary and
 * streaming standby, for tests that crash the one and promote the other). Independent of pgjobs-core so that core's own tests can use it.
 */
package io.pgjobs.testkit;
