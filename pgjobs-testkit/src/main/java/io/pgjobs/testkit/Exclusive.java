package io.pgjobs.testkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test class that must not run while another {@code @Exclusive} class of any test JVM on the same
 * PostgreSQL server runs: test classes run in parallel JVMs, and a class that keeps dozens of connections
 * open or keeps both cores busy for a minute would starve the others (or run out of the server's
 * connections). The lock is a PostgreSQL advisory lock taken on a connection of its own before the class's
 * {@code @BeforeAll} and released when the class is done, so it covers every JVM, fork and checkout that
 * tests against the server, and a JVM that dies releases it.
 *
 * <p>An exclusive class is also tagged {@link Tags#EXCLUSIVE}: {@code ./run-tests} runs those classes one
 * after another in a test JVM of their own, beside the other tests, so that no test JVM sits idle waiting
 * for the lock.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(Exclusive.Lock.class)
@Tag(Tags.EXCLUSIVE)
public @interface Exclusive {

  /** Takes and releases the lock. */
  final class Lock implements BeforeAllCallback {
    /** The advisory lock's key: the first 8 bytes of "pgjobs-testkit-exclusive". */
    static final long KEY = key("pgjobs-testkit-exclusive");

    @Override
    public void beforeAll(ExtensionContext context) throws SQLException {
      if (context.getParent().flatMap(ExtensionContext::getTestClass).isPresent()) {
        return; // a @Nested class: its enclosing class holds the lock already
      }
      Connection c = TestDatabase.connect(TestDatabase.adminUrl());
      try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_lock(?)")) {
        ps.setLong(1, KEY);
        ps.execute();
      } catch (SQLException | RuntimeException e) {
        c.close();
        throw e;
      }
      // Closed (and the lock released) when the class's context closes, after its @AfterAll.
      context
          .getStore(ExtensionContext.Namespace.create(Lock.class))
          .put("connection", (AutoCloseable) c::close);
    }

    private static long key(String text) {
      byte[] bytes = text.getBytes(StandardCharsets.US_ASCII);
      long key = 0;
      for (int i = 0; i < 8; i++) {
        key = key << 8 | bytes[i];
      }
      return key;
    }
  }
}
