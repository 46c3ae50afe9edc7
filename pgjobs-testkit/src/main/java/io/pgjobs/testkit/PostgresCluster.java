package io.pgjobs.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A private PostgreSQL primary with one streaming standby, for tests that crash the primary and promote
 * the standby: a failover as Patroni or pg_auto_failover would run it, without touching the shared test
 * server. Both listen on free ports of 127.0.0.1 and a Unix socket in their own temporary directory,
 * trust every local client (user {@value #USER}), and run with {@code fsync=off} (a test cluster need
 * not survive the machine crashing, only its own processes; an immediate stop keeps everything written
 * to the OS).
 *
 * <p>The binaries are {@code PGJOBS_PG_BIN}, else {@value #DEFAULT_BIN} (Debian's {@code postgresql-15}
 * package, installed with the shared server), else the newest {@code /usr/lib/postgresql/<major>/bin}. {@code initdb} and {@code postgres} refuse to run as root,
 * so when the tests run as root (CI) every command runs as the {@code postgres} OS user through
 * {@code runuser}, and the cluster's directory belongs to that user. Starting both servers takes a
 * couple of seconds: {@code initdb --no-sync}, {@code pg_basebackup -R} (which writes the standby's
 * {@code primary_conninfo}) and two {@code pg_ctl start -w}.
 *
 * <pre>{@code
 * try (PostgresCluster cluster = PostgresCluster.start(Replication.SYNCHRONOUS)) {
 *   cluster.createDatabase("jobs");
 *   String url = cluster.multiHostUrl("jobs"); // postgres://postgres@h:p1,h:p2/jobs?target_session_attrs=read-write
 *   ...
 *   cluster.crashPrimary();   // pg_ctl stop -m immediate
 *   cluster.promoteStandby(); // pg_ctl promote -w
 * }
 * }</pre>
 */
public final class PostgresCluster implements AutoCloseable {
  /** Where Debian installs PostgreSQL 15's server binaries. */
  public static final String DEFAULT_BIN = "/usr/lib/postgresql/15/bin";
  /** The superuser both servers trust. */
  public static final String USER = "postgres";

  private static final Duration COMMAND_DEADLINE = Duration.ofSeconds(60);

  /** How the primary acknowledges commits. */
  public enum Replication {
    /**
     * {@code synchronous_standby_names = '*'}: a commit returns once the standby has flushed its WAL, so a
     * promoted standby holds every acknowledged commit.
     */
    SYNCHRONOUS,
    /**
     * No synchronous standby: a commit returns once the primary has it; what the standby had not received
     * when the primary crashed is lost by a failover.
     */
    ASYNCHRONOUS
  }

  /** One of the two servers. */
  public enum Node {
    /** The server started by initdb, writable until it is crashed or stopped. */
    PRIMARY,
    /** The streaming standby (read-only until {@link #promoteStandby()}). */
    STANDBY
  }

  private final Path bin;
  private final Path dir;
  private final boolean root;
  private final int primaryPort;
  private final int standbyPort;
  private final Thread cleanup = new Thread(this::stopQuietly, "postgres-cluster-cleanup");
  private boolean closed;

  private PostgresCluster(Path bin, Path dir, boolean root, int primaryPort, int standbyPort) {
    this.bin = bin;
    this.dir = dir;
    this.root = root;
    this.primaryPort = primaryPort;
    this.standbyPort = standbyPort;
  }

  /**
   * Starts a primary and a streaming standby and, for {@link Replication#SYNCHRONOUS}, waits until the
   * primary reports the standby as synchronous.
   */
  public static PostgresCluster start(Replication replication) {
    Path bin = binaries();
    if (!Files.isExecutable(bin.resolve("initdb"))) {
      throw new IllegalStateException(
          "PostgreSQL's server binaries are not in " + bin + ": install Debian's"
              + " postgresql-15 package or set PGJOBS_PG_BIN to the directory holding initdb, pg_ctl and pg_basebackup");
    }
    boolean root = "root".equals(System.getProperty("user.name"));
    PostgresCluster cluster;
    try {
      Path dir = Files.createTempDirectory("pgjobs-cluster-");
      if (root) {
        // The postgres OS user must own the data directories and reach them through this one.
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        UserPrincipal postgres =
            dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(USER);
        Files.setOwner(dir, postgres);
      }
      int primaryPort = freePort();
      int standbyPort = freePort();
      while (standbyPort == primaryPort) {
        standbyPort = freePort();
      }
      cluster = new PostgresCluster(bin, dir, root, primaryPort, standbyPort);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot prepare a PostgreSQL cluster directory: " + e.getMessage(), e);
    }
    Runtime.getRuntime().addShutdownHook(cluster.cleanup);
    try {
      cluster.startBoth();
      if (replication == Replication.SYNCHRONOUS) {
        cluster.setSynchronous(true);
      }
      return cluster;
    } catch (RuntimeException e) {
      String logs = cluster.logText();
      cluster.close();
      throw new IllegalStateException(e.getMessage() + "\n" + logs, e);
    }
  }

  /**
   * {@code PGJOBS_PG_BIN}, else {@value #DEFAULT_BIN} if it holds initdb, else the newest
   * {@code /usr/lib/postgresql/<major>/bin} that does (Debian installs one directory per major version).
   */
  private static Path binaries() {
    String configured = System.getenv("PGJOBS_PG_BIN");
    if (configured != null) {
      return Path.of(configured);
    }
    Path preferred = Path.of(DEFAULT_BIN);
    if (Files.isExecutable(preferred.resolve("initdb"))) {
      return preferred;
    }
    try (Stream<Path> majors = Files.list(Path.of("/usr/lib/postgresql"))) {
      return majors
          .map(major -> major.resolve("bin"))
          .filter(dir -> Files.isExecutable(dir.resolve("initdb")))
          .max(Comparator.comparingInt(
              dir -> majorOf(dir.getParent().getFileName().toString())))
          .orElse(preferred);
    } catch (IOException e) {
      return preferred;
    }
  }

  private static int majorOf(String name) {
    try {
      return Integer.parseInt(name);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private void startBoth() {
    Path primary = dataDir(Node.PRIMARY);
    run(List.of(
        bin.resolve("initdb").toString(),
        "-D",
        primary.toString(),
        "-A",
        "trust",
        "-U",
        USER,
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
        "--no-instructions"));
    appendConfig(
        primary,
        List.of(
            "listen_addresses = '127.0.0.1'",
            "unix_socket_directories = '" + dir + "'",
            "port = " + primaryPort,
            "wal_level = replica",
            "max_wal_senders = 5",
            "fsync = off",
            "shared_buffers = 16MB",
            "max_connections = 100",
            // The standby reports what it has flushed every second, not every 10 s, so that lag
            // shows soon.
            "wal_receiver_status_interval = 1s",
            "log_line_prefix = '%m [%p] '"));
    pgCtlStart(Node.PRIMARY);
    Path standby = dataDir(Node.STANDBY);
    // -R writes standby.signal and primary_conninfo; -X stream copies the WAL written meanwhile.
    run(List.of(
        bin.resolve("pg_basebackup").toString(),
        "-h",
        "127.0.0.1",
        "-p",
        String.valueOf(primaryPort),
        "-U",
        USER,
        "-D",
        standby.toString(),
        "-R",
        "-X",
        "stream",
        "-c",
        "fast",
        "--no-sync"));
    appendConfig(standby, List.of("port = " + standbyPort));
    pgCtlStart(Node.STANDBY);
    awaitCondition(
        "the standby streams from the primary",
        () -> queryLong(
                Node.PRIMARY, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
            == 1);
  }

  /** The port {@code node} listens on (kept across crash and promotion). */
  public int port(Node node) {
    return node == Node.PRIMARY ? primaryPort : standbyPort;
  }

  /** A JDBC URL of {@code database} on {@code node} alone (user in the URL). */
  public String jdbcUrl(Node node, String database) {
    return "jdbc:postgresql://127.0.0.1:" + port(node) + "/" + database + "?user=" + USER;
  }

  /**
   * A libpq-style multi-host URL of {@code database} listing the primary, then the standby, with
   * {@code target_session_attrs=read-write}: a client connects to whichever of the two accepts writes,
   * the standby once it is promoted.
   */
  public String multiHostUrl(String database) {
    return "postgres://" + USER + "@127.0.0.1:" + primaryPort + ",127.0.0.1:" + standbyPort + "/"
        + database + "?target_session_attrs=read-write";
  }

  /** The pgJDBC form of {@link #multiHostUrl}: {@code targetServerType=primary}. */
  public String multiHostJdbcUrl(String database) {
    return "jdbc:postgresql://127.0.0.1:" + primaryPort + ",127.0.0.1:" + standbyPort + "/"
        + database + "?user=" + USER + "&targetServerType=primary";
  }

  /** Creates {@code database} on the primary and waits until the standby has replayed it. */
  public void createDatabase(String database) {
    execute(Node.PRIMARY, "CREATE DATABASE \"" + database + "\"");
    awaitStandbyReplayed();
  }

  /**
   * Turns synchronous replication on ({@code synchronous_standby_names = '*'}) or off on the primary,
   * reloads its configuration and waits until the standby's {@code sync_state} says so. Only the primary's
   * configuration changes: a promoted standby has no synchronous standby and never waits for one.
   */
  public void setSynchronous(boolean synchronous) {
    setPrimarySetting("synchronous_standby_names", synchronous ? "*" : "");
    String state = synchronous ? "sync" : "async";
    awaitCondition(
        "the standby's sync_state is " + state,
        () -> queryLong(
                Node.PRIMARY,
                "SELECT count(*) FROM pg_stat_replication WHERE sync_state = '" + state + "'")
            == 1);
  }

  /**
   * {@code ALTER SYSTEM SET name = 'value'} on the primary and a configuration reload (for a setting
   * such as {@code synchronous_commit} that a reload applies).
   */
  public void setPrimarySetting(String name, String value) {
    if (!name.matches("[a-z_]+")) {
      throw new IllegalArgumentException("not a setting name: " + name);
    }
    execute(
        Node.PRIMARY,
        "ALTER SYSTEM SET " + name + " = '" + value.replace("'", "''") + "'",
        "SELECT pg_reload_conf()");
  }

  /** Waits until the standby has replayed all the WAL the primary has written so far. */
  public void awaitStandbyReplayed() {
    String lsn = queryText(Node.PRIMARY, "SELECT pg_current_wal_lsn()::text");
    awaitCondition(
        "the standby replays up to " + lsn,
        () -> queryLong(
                Node.STANDBY, "SELECT (pg_last_wal_replay_lsn() >= '" + lsn + "'::pg_lsn)::int")
            == 1);
  }

  /**
   * Crashes the primary: {@code pg_ctl stop -m immediate} ends every backend at once without a checkpoint,
   * as a power cut would (minus the OS cache). Every client connection to it breaks.
   */
  public void crashPrimary() {
    run(List.of(
        pgCtl(),
        "stop",
        "-D",
        dataDir(Node.PRIMARY).toString(),
        "-m",
        "immediate",
        "-w",
        "-t",
        String.valueOf(COMMAND_DEADLINE.toSeconds())));
  }

  /**
   * Promotes the standby ({@code pg_ctl promote -w}): it leaves recovery and accepts writes, existing
   * sessions included, once this returns.
   */
  public void promoteStandby() {
    run(List.of(
        pgCtl(),
        "promote",
        "-D",
        dataDir(Node.STANDBY).toString(),
        "-w",
        "-t",
        String.valueOf(COMMAND_DEADLINE.toSeconds())));
  }

  /** True if {@code node} answers and is in recovery (a standby). */
  public boolean isInRecovery(Node node) {
    return queryLong(node, "SELECT pg_is_in_recovery()::int") == 1;
  }

  /** Runs statements on {@code node}'s {@code postgres} database. */
  public void execute(Node node, String... statements) {
    try (Connection c = DriverManager.getConnection(jdbcUrl(node, "postgres"));
        Statement st = c.createStatement()) {
      for (String sql : statements) {
        st.execute(sql);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(node + ": " + e.getMessage(), e);
    }
  }

  /** Runs a query returning one number on {@code node}'s {@code postgres} database. */
  public long queryLong(Node node, String sql) {
    return Long.parseLong(queryText(node, sql));
  }

  private String queryText(Node node, String sql) {
    try (Connection c = DriverManager.getConnection(jdbcUrl(node, "postgres"));
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    } catch (SQLException e) {
      throw new IllegalStateException(node + ": " + e.getMessage(), e);
    }
  }

  /** Both servers' logs so far (for failure messages). */
  public String logText() {
    StringBuilder text = new StringBuilder();
    for (Node node : Node.values()) {
      Path log = logFile(node);
      text.append("--- ").append(node).append(" log (").append(log).append(")\n");
      try {
        text.append(Files.exists(log) ? Files.readString(log) : "(none)\n");
      } catch (IOException e) {
        text.append("(unreadable: ").append(e.getMessage()).append(")\n");
      }
    }
    return text.toString();
  }

  /** Stops both servers immediately and removes their files. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    stopQuietly();
    try {
      Runtime.getRuntime().removeShutdownHook(cleanup);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs or has run
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // a temp directory left behind is harmless
    }
  }

  private void stopQuietly() {
    for (Node node : Node.values()) {
      if (Files.exists(dataDir(node).resolve("postmaster.pid"))) {
        try {
          run(List.of(pgCtl(), "stop", "-D", dataDir(node).toString(), "-m", "immediate", "-w"));
        } catch (RuntimeException ignored) {
          // already stopped
        }
      }
    }
  }

  private void pgCtlStart(Node node) {
    run(List.of(
        pgCtl(),
        "start",
        "-D",
        dataDir(node).toString(),
        "-l",
        logFile(node).toString(),
        "-w",
        "-t",
        String.valueOf(COMMAND_DEADLINE.toSeconds())));
  }

  private String pgCtl() {
    return bin.resolve("pg_ctl").toString();
  }

  private Path dataDir(Node node) {
    return dir.resolve(node == Node.PRIMARY ? "primary" : "standby");
  }

  private Path logFile(Node node) {
    return dir.resolve(node == Node.PRIMARY ? "primary.log" : "standby.log");
  }

  private void appendConfig(Path dataDir, List<String> lines) {
    try {
      Files.writeString(
          dataDir.resolve("postgresql.conf"),
          "\n" + String.join("\n", lines) + "\n",
          java.nio.file.StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot write " + dataDir + "/postgresql.conf: " + e.getMessage(), e);
    }
  }

  /**
   * Runs a command (as the postgres OS user when we are root) and fails with its output unless it exits
   * with 0. Output goes to a file, not a pipe: {@code pg_ctl start} leaves a server behind that would hold
   * a pipe open.
   */
  private void run(List<String> command) {
    List<String> full = new ArrayList<>();
    if (root) {
      full.addAll(List.of("runuser", "-u", USER, "--"));
    }
    full.addAll(command);
    Path output = null;
    try {
      output = Files.createTempFile("pgjobs-cluster-command-", ".out");
      Process process = new ProcessBuilder(full)
          .directory(dir.toFile())
          .redirectErrorStream(true)
          .redirectOutput(output.toFile())
          .start();
      if (!process.waitFor(COMMAND_DEADLINE.toSeconds() + 10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + " did not finish within "
            + COMMAND_DEADLINE + ":\n" + Files.readString(output));
      }
      if (process.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " exited with "
            + process.exitValue() + ":\n" + Files.readString(output));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run " + command.get(0) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running " + command.get(0), e);
    } finally {
      if (output != null) {
        output.toFile().delete();
      }
    }
  }

  private static void awaitCondition(String what, java.util.function.BooleanSupplier condition) {
    long deadline = System.nanoTime() + COMMAND_DEADLINE.toNanos();
    RuntimeException last = null;
    while (System.nanoTime() < deadline) {
      try {
        if (condition.getAsBoolean()) {
          return;
        }
      } catch (RuntimeException e) {
        last = e;
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting until " + what, e);
      }
    }
    throw new IllegalStateException("not within " + COMMAND_DEADLINE + ": " + what
        + (last == null ? "" : " (" + last.getMessage() + ")"));
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      s.setReuseAddress(true);
      return s.getLocalPort();
    }
  }
}
