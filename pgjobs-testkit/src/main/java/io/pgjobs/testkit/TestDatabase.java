package io.pgjobs.testkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * A fresh database on a real PostgreSQL server, dropped on {@link #close()}. Tests never share state
 * through leftovers: each test class creates its own.
 *
 * <p>The server comes from {@code PGJOBS_TEST_DATABASE_URL} (a JDBC URL of any database on it, used to
 * create and drop the test database), default
 * {@value #DEFAULT_ADMIN_URL}.
 *
 * <pre>{@code
 * static TestDatabase db = TestDatabase.create();
 * DataSource ds = db.dataSource();
 * }</pre>
 */
public final class TestDatabase implements AutoCloseable {
  /** The server used when {@code PGJOBS_TEST_DATABASE_URL} is not set. */
  public static final String DEFAULT_ADMIN_URL =
      "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";

  private static final String INVALID_CATALOG_NAME = "3D000";

  private final String adminUrl;
  private final String name;
  private final String url;
  private final List<HikariDataSource> pools = new ArrayList<>();
  private final HikariDataSource dataSource;

  private TestDatabase(String adminUrl, String name) {
    this.adminUrl = adminUrl;
    this.name = name;
    this.url = withDatabase(adminUrl, name);
    this.dataSource = newDataSource(20);
  }

  /** Creates a new, empty database named {@code pgjobs_test_<random>}. */
  public static TestDatabase create() {
    String admin = adminUrl();
    String name = randomName();
    try (Connection c = connect(admin);
        Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new IllegalStateException(
          "cannot create a test database on " + admin + ": " + e.getMessage(), e);
    }
    return new TestDatabase(admin, name);
  }

  /**
   * Creates a new database named {@code pgjobs_test_<random>} as a copy of {@code template}'s database
   * ({@code CREATE DATABASE ... TEMPLATE}), which is built on the server first if it is not there yet. A
   * copy costs what an empty database costs; the template's set-up (migrations) runs once per server and
   * template version, not once per test class.
   */
  public static TestDatabase create(DatabaseTemplate template) {
    String admin = adminUrl();
    String name = randomName();
    for (int attempt = 1; ; attempt++) {
      String source = template.ensureOn(admin);
      try (Connection c = connect(admin);
          Statement st = c.createStatement()) {
        st.execute("CREATE DATABASE " + name + " TEMPLATE " + source);
        return new TestDatabase(admin, name);
      } catch (SQLException e) {
        if (INVALID_CATALOG_NAME.equals(e.getSQLState()) && attempt == 1) {
          template
              .forget(); // dropped as an older version by a run of other migrations: build it again
          continue;
        }
        throw new IllegalStateException(
            "cannot create a test database from template " + source + " on " + admin + ": "
                + e.getMessage(),
            e);
      }
    }
  }

  static String adminUrl() {
    return System.getenv().getOrDefault("PGJOBS_TEST_DATABASE_URL", DEFAULT_ADMIN_URL);
  }

  /** A connection to the admin URL, failing with a message that says what to check. */
  static Connection connect(String admin) {
    try {
      return DriverManager.getConnection(admin);
    } catch (SQLException e) {
      throw new IllegalStateException(
          "cannot connect to the test server " + admin
              + " (is PostgreSQL running? set PGJOBS_TEST_DATABASE_URL): " + e.getMessage(),
          e);
    }
  }

  private static String randomName() {
    return "pgjobs_test_"
        + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
  }

  /**
   * SQL for a UUIDv7 whose time is the timestamp expression {@code ts} (48 bits of its Unix milliseconds,
   * version 7, the rest random), as pgjobs makes job ids: for rows a test writes into the job tables
   * directly, whose creation time the list's filters read from the id.
   */
  public static String uuidV7(String ts) {
    return "overlay(overlay(replace(gen_random_uuid()::text, '-', '') placing lpad(to_hex(floor("
        + "extract(epoch FROM " + ts
        + ") * 1000)::bigint), 12, '0') from 1 for 12) placing '7' from 13"
        + " for 1)::uuid";
  }

  /** The database's name. */
  public String name() {
    return name;
  }

  /** A JDBC URL of the database (with the user of the admin URL). */
  public String jdbcUrl() {
    return url;
  }

  /** A shared pool of 20 connections to the database. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** A new pool of its own (closed with the database), for tests that model separate processes. */
  public HikariDataSource newDataSource(int maxPoolSize) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(maxPoolSize);
    config.setMinimumIdle(0);
    config.setPoolName(name + "-" + (pools.size() + 1));
    HikariDataSource pool = new HikariDataSource(config);
    synchronized (pools) {
      pools.add(pool);
    }
    return pool;
  }

  /** Runs SQL statements (for setting up tables a test's handlers write to). */
  public void execute(String... statements) {
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement()) {
      for (String sql : statements) {
        st.execute(sql);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  /** Runs a query returning one number. */
  public long queryLong(String sql) {
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement();
        var rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  /** The process id of {@code connection}'s server backend ({@code pg_backend_pid()}). */
  public static long backendPid(Connection connection) throws SQLException {
    try (Statement st = connection.createStatement();
        var rs = st.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Closes every pool and drops the database, ending any session still connected to it. */
  @Override
  public void close() {
    synchronized (pools) {
      pools.forEach(HikariDataSource::close);
      pools.clear();
    }
    try (Connection c = DriverManager.getConnection(adminUrl);
        Statement st = c.createStatement()) {
      st.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    } catch (SQLException e) {
      throw new IllegalStateException(
          "cannot drop test database " + name + ": " + e.getMessage(), e);
    }
  }

  static String withDatabase(String jdbcUrl, String database) {
    // jdbc:postgresql://host:port/db?params  ->  same with another db
    int slash = jdbcUrl.indexOf('/', "jdbc:postgresql://".length());
    if (!jdbcUrl.startsWith("jdbc:postgresql://") || slash < 0) {
      throw new IllegalArgumentException(
          "expected jdbc:postgresql://host:port/database..., got " + jdbcUrl);
    }
    int query = jdbcUrl.indexOf('?', slash);
    return jdbcUrl.substring(0, slash + 1) + database + (query < 0 ? "" : jdbcUrl.substring(query));
  }
}
