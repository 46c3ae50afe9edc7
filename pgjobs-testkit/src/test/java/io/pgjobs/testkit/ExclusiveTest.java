package io.pgjobs.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** An {@link Exclusive} class holds the server-wide advisory lock while it runs, its nested classes too. */
@Exclusive
class ExclusiveTest {
  static long holders() throws SQLException {
    try (Connection c = TestDatabase.connect(TestDatabase.adminUrl());
        Statement st = c.createStatement();
        var rs =
            st.executeQuery("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                + " AND ((classid::bigint << 32) | objid::bigint) = " + Exclusive.Lock.KEY)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void holdsTheLockWhileItRuns() throws SQLException {
    assertThat(holders()).isEqualTo(1);
  }

  @Nested
  class Inside {
    @Test
    void nestedClassRunsUnderTheSameLock() throws SQLException {
      assertThat(holders()).isEqualTo(1);
    }
  }
}
