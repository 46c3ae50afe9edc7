/**
 * Test support for pgjobs and its users: {@link io.pgjobs.testkit.TestDatabase} (a throw-away database on
 * a real PostgreSQL) and {@link io.pgjobs.testkit.JvmProcess} (a child JVM on the test class path, for
 * tests that kill worker processes). Independent of pgjobs-core so that core's own tests can use it.
 */
package io.pgjobs.testkit;
