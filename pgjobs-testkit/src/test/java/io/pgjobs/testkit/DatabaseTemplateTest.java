package io.pgjobs.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Test databases copied from a template built once per server and version. */
class DatabaseTemplateTest {
  private static final String FILES = "io/pgjobs/testkit/template-files";

  private final String name = "tk_" + UUID.randomUUID().toString().substring(0, 8);
  private final AtomicInteger setUps = new AtomicInteger();
  private final List<TestDatabase> databases = new ArrayList<>();

  @AfterEach
  void dropEverything() throws SQLException {
    databases.forEach(TestDatabase::close);
    try (Connection c = TestDatabase.connect(TestDatabase.adminUrl());
        Statement st = c.createStatement();
        var rs = st.executeQuery(
            "SELECT datname FROM pg_database WHERE datname LIKE 'pgjobs_tpl_" + name + "%'")) {
      List<String> left = new ArrayList<>();
      while (rs.next()) {
        left.add(rs.getString(1));
      }
      for (String db : left) {
        st.execute("ALTER DATABASE " + db + " WITH IS_TEMPLATE false");
        st.execute("DROP DATABASE " + db);
      }
    }
  }

  private DatabaseTemplate template(Consumer<DataSource> setUp) {
    return DatabaseTemplate.of(name, FILES, ds -> {
      setUps.incrementAndGet();
      setUp.accept(ds);
    });
  }

  private static void plant(DataSource ds) {
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement()) {
      st.execute("CREATE TABLE planted (n int)");
      st.execute("INSERT INTO planted VALUES (42)");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private TestDatabase copy(DatabaseTemplate template) {
    TestDatabase db = TestDatabase.create(template);
    databases.add(db);
    return db;
  }

  @Test
  void copyHoldsWhatTheSetUpMade() {
    TestDatabase db = copy(template(DatabaseTemplateTest::plant));
    assertThat(db.queryLong("SELECT n FROM planted")).isEqualTo(42);
  }

  @Test
  void copiesAreIndependent() {
    DatabaseTemplate template = template(DatabaseTemplateTest::plant);
    TestDatabase a = copy(template);
    TestDatabase b = copy(template);
    a.execute("DELETE FROM planted");
    assertThat(b.queryLong("SELECT count(*) FROM planted")).isEqualTo(1);
    assertThat(a.name()).isNotEqualTo(b.name());
  }

  @Test
  void setUpRunsOncePerServer() {
    // Two instances stand for two test JVMs: the second finds the template on the server.
    copy(template(DatabaseTemplateTest::plant));
    copy(template(DatabaseTemplateTest::plant));
    assertThat(setUps).hasValue(1);
  }

  @Test
  void concurrentJvmsBuildItOnce() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<TestDatabase>> copies = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        DatabaseTemplate own = template(DatabaseTemplateTest::plant);
        copies.add(pool.submit((Callable<TestDatabase>) () -> TestDatabase.create(own)));
      }
      for (Future<TestDatabase> f : copies) {
        databases.add(f.get());
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(setUps).hasValue(1);
    assertThat(databases)
        .allSatisfy(
            db -> assertThat(db.queryLong("SELECT count(*) FROM planted")).isEqualTo(1));
  }

  @Test
  void templateRefusesConnections() {
    DatabaseTemplate template = template(DatabaseTemplateTest::plant);
    copy(template);
    String url = TestDatabase.withDatabase(TestDatabase.adminUrl(), template.databaseName());
    assertThatThrownBy(() -> java.sql.DriverManager.getConnection(url).close())
        .isInstanceOf(SQLException.class)
        .hasMessageContaining("not currently accepting connections");
  }

  @Test
  void failedSetUpLeavesNoTemplate() {
    DatabaseTemplate broken = template(ds -> {
      throw new IllegalStateException("migration failed");
    });
    assertThatThrownBy(() -> copy(broken)).hasMessageContaining("migration failed");
    DatabaseTemplate fixed = template(DatabaseTemplateTest::plant);
    assertThat(copy(fixed).queryLong("SELECT n FROM planted")).isEqualTo(42);
    assertThat(setUps).hasValue(2);
  }

  @Test
  void newVersionDropsTheOlder() throws SQLException {
    DatabaseTemplate current = template(DatabaseTemplateTest::plant);
    String older = "pgjobs_tpl_" + name + "_0000000000000000";
    try (Connection c = TestDatabase.connect(TestDatabase.adminUrl());
        Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + older + " IS_TEMPLATE true");
    }
    copy(current);
    assertThat(databases
            .get(0)
            .queryLong("SELECT count(*) FROM pg_database WHERE datname = '" + older + "'"))
        .isZero();
  }

  @Test
  void versionFollowsTheFiles() {
    assertThat(DatabaseTemplate.fingerprint(FILES))
        .hasSize(16)
        .isEqualTo(DatabaseTemplate.fingerprint(FILES));
    assertThat(DatabaseTemplate.fingerprint(FILES))
        .isNotEqualTo(DatabaseTemplate.fingerprint("io/pgjobs/testkit/other-files"));
  }

  @Test
  void badNameIsRefused() {
    assertThatThrownBy(() -> DatabaseTemplate.of("Bad-Name", FILES, ds -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Bad-Name");
    assertThatThrownBy(() -> DatabaseTemplate.of("fine", "io/pgjobs/testkit/missing", ds -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("io/pgjobs/testkit/missing");
  }
}
