package io.pgjobs.testkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A real PgBouncer in front of a {@link TestDatabase}, in <em>transaction</em> pooling mode with a small
 * server pool, so that consecutive transactions of one client connection really do land on different
 * PostgreSQL backends. It listens on a free port of 127.0.0.1 (no Unix socket), trusts every client, and
 * is killed on {@link #close()}. {@link #kill()} and {@link #restart()} model an outage of the pooler.
 *
 * <p>The binary is {@code PGJOBS_PGBOUNCER} or {@value #DEFAULT_BINARY} (Debian's {@code pgbouncer}
 * package, which {@code .ci/run} installs); without it {@link #start} fails with a message saying so.
 * PgBouncer refuses to run as root, so when the tests run as root (CI) it is told to switch to the
 * {@code postgres} OS user, or {@code nobody} where there is none ({@code user = ...}); its files are then
 * made readable by that user. It writes no files of its own (no Unix socket, no pid file; its log goes to
 * a file the test JVM opened).
 *
 * <pre>{@code
 * static TestDatabase db = TestDatabase.create();
 * static PgBouncer bouncer = PgBouncer.start(db, 4);
 * DataSource pooled = bouncer.newDataSource(10); // prepareThreshold=0
 * }</pre>
 */
public final class PgBouncer implements AutoCloseable {
  /** Where Debian installs PgBouncer. */
  public static final String DEFAULT_BINARY = "/usr/sbin/pgbouncer";
  /** The database alias clients connect to. */
  public static final String ALIAS = "pgjobs";

  private static final Duration START_DEADLINE = Duration.ofSeconds(20);
  private static final Pattern HOST_PORT =
      Pattern.compile("^jdbc:postgresql://([^/:?]+)(?::(\\d+))?/");

  private final Path dir;
  private final Path config;
  private final Path log;
  private final int port;
  private final String user;
  private final List<HikariDataSource> pools = new ArrayList<>();
  private Process process;

  private PgBouncer(Path dir, Path config, Path log, int port, String user) {
    this.dir = dir;
    this.config = config;
    this.log = log;
    this.port = port;
    this.user = user;
  }

  /**
   * Starts PgBouncer in transaction mode in front of {@code db}, with at most {@code serverPoolSize}
   * PostgreSQL connections, and waits until it answers a query.
   */
  public static PgBouncer start(TestDatabase db, int serverPoolSize) {
    if (serverPoolSize < 1 || serverPoolSize > 100) {
      throw new IllegalArgumentException(
          "server pool size must be between 1 and 100, was " + serverPoolSize);
    }
    Path binary = Path.of(System.getenv().getOrDefault("PGJOBS_PGBOUNCER", DEFAULT_BINARY));
    if (!Files.isExecutable(binary)) {
      throw new IllegalStateException("PgBouncer is not installed at " + binary
          + ": install Debian's package (`apt-get install pgbouncer`,"
          + " as .ci/run does) or set PGJOBS_PGBOUNCER to its path");
    }
    Matcher m = HOST_PORT.matcher(db.jdbcUrl());
    if (!m.find()) {
      throw new IllegalArgumentException("cannot read host and port from " + db.jdbcUrl());
    }
    String pgHost = m.group(1);
    String pgPort = m.group(2) == null ? "5432" : m.group(2);
    String user = userOf(db.jdbcUrl());
    boolean root = "root".equals(System.getProperty("user.name"));
    // The free port is found by binding and closing it; another process may take it before
    // PgBouncer binds it, so a start that fails for that reason is tried again on another port.
    for (int attempt = 1; ; attempt++) {
      PgBouncer bouncer = prepare(db, serverPoolSize, pgHost, pgPort, user, root);
      try {
        bouncer.launch(binary);
        return bouncer;
      } catch (IllegalStateException e) {
        bouncer.close();
        if (attempt >= 3 || !e.getMessage().contains("in use")) {
          throw e;
        }
      }
    }
  }

  private static PgBouncer prepare(
      TestDatabase db,
      int serverPoolSize,
      String pgHost,
      String pgPort,
      String user,
      boolean root) {
    try {
      Path dir = Files.createTempDirectory("pgjobs-pgbouncer-");
      int port = freePort();
      Path config = dir.resolve("pgbouncer.ini");
      Path users = dir.resolve("userlist.txt");
      Path log = dir.resolve("pgbouncer.log");
      Files.writeString(users, "\"" + user + "\" \"\"\n");
      Files.writeString(
          config,
          String.join(
              "\n",
              "[databases]",
              ALIAS + " = host=" + pgHost + " port=" + pgPort + " dbname=" + db.name(),
              "[pgbouncer]",
              "listen_addr = 127.0.0.1",
              "listen_port = " + port,
              // No Unix socket: nothing to clean up, and no clash with a system PgBouncer's.
              "unix_socket_dir =",
              "auth_type = trust",
              "auth_file = " + users,
              "pool_mode = transaction",
              "default_pool_size = " + serverPoolSize,
              "min_pool_size = 0",
              "reserve_pool_size = 0",
              "max_client_conn = 500",
              // pgjdbc sends extra_float_digits at startup when a URL sets
              // assumeMinServerVersion=9.0 or later; PgBouncer 1.18 rejects startup parameters it
              // does not know.
              "ignore_startup_parameters = extra_float_digits",
              // A killed PostgreSQL backend must not leave the pool unable to connect for long.
              "server_login_retry = 1",
              "log_connections = 0",
              "log_disconnections = 0",
              root ? "user = " + unprivilegedUser() : "",
              ""));
      if (root) {
        // PgBouncer drops to the postgres user; it must still read its files.
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        for (Path p : List.of(config, users)) {
          Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-r--r--"));
        }
      }
      return new PgBouncer(dir, config, log, port, user);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start PgBouncer: " + e.getMessage(), e);
    }
  }

  private void launch(Path binary) {
    try {
      process = new ProcessBuilder(binary.toString(), config.toString())
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run " + binary + ": " + e.getMessage(), e);
    }
    awaitAccepting();
  }

  private void awaitAccepting() {
    long deadline = System.nanoTime() + START_DEADLINE.toNanos();
    SQLException last = null;
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            "PgBouncer exited with " + process.exitValue() + ":\n" + logText());
      }
      try (Connection c = DriverManager.getConnection(jdbcUrl());
          Statement st = c.createStatement()) {
        st.execute("SELECT 1");
        return;
      } catch (SQLException e) {
        last = e;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for PgBouncer", e);
      }
    }
    throw new IllegalStateException("PgBouncer on port " + port + " did not answer within "
        + START_DEADLINE + " (" + (last == null ? "" : last.getMessage()) + "):\n" + logText());
  }

  /** The port PgBouncer listens on (kept across {@link #restart()}). */
  public int port() {
    return port;
  }

  /**
   * A JDBC URL through PgBouncer, with {@code prepareThreshold=0}: transaction pooling cannot keep the
   * named server-side statements pgjdbc would otherwise prepare after five uses.
   */
  public String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + ALIAS + "?user=" + user
        + "&prepareThreshold=0";
  }

  /** A new HikariCP pool of client connections through PgBouncer (closed with it). */
  public HikariDataSource newDataSource(int maxPoolSize) {
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(jdbcUrl());
    c.setMaximumPoolSize(maxPoolSize);
    c.setMinimumIdle(0);
    c.setConnectionTimeout(5_000);
    c.setPoolName("pgbouncer-" + port + "-" + (pools.size() + 1));
    HikariDataSource pool = new HikariDataSource(c);
    synchronized (pools) {
      pools.add(pool);
    }
    return pool;
  }

  /** True while the PgBouncer process runs. */
  public boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** Kills PgBouncer (SIGKILL) and waits for it to exit: every client connection breaks at once. */
  public synchronized void kill() {
    if (process == null) {
      return;
    }
    process.destroyForcibly();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException(
            "PgBouncer (pid " + process.pid() + ") did not exit after SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for PgBouncer to exit", e);
    }
  }

  /** Starts PgBouncer again on the same port (after {@link #kill()}) and waits until it answers. */
  public synchronized void restart() {
    if (isRunning()) {
      throw new IllegalStateException("PgBouncer is still running; kill() it first");
    }
    launch(Path.of(System.getenv().getOrDefault("PGJOBS_PGBOUNCER", DEFAULT_BINARY)));
  }

  /** PgBouncer's log so far (for failure messages). */
  public String logText() {
    try {
      return Files.exists(log) ? Files.readString(log) : "(no log)";
    } catch (IOException e) {
      return "(log unreadable: " + e.getMessage() + ")";
    }
  }

  /** Closes its pools, kills PgBouncer and removes its files. */
  @Override
  public void close() {
    synchronized (pools) {
      pools.forEach(HikariDataSource::close);
      pools.clear();
    }
    kill();
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // a temp directory left behind is harmless
    }
  }

  /** The OS user PgBouncer switches to when started as root: postgres (Debian's), else nobody. */
  private static String unprivilegedUser() {
    try {
      boolean postgres = Files.readAllLines(Path.of("/etc/passwd")).stream()
          .anyMatch(l -> l.startsWith("postgres:"));
      return postgres ? "postgres" : "nobody";
    } catch (IOException e) {
      return "nobody";
    }
  }

  private static String userOf(String jdbcUrl) {
    Matcher m = Pattern.compile("[?&]user=([^&]+)").matcher(jdbcUrl);
    return m.find() ? m.group(1) : "postgres";
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      s.setReuseAddress(true);
      return s.getLocalPort();
    }
  }
}
