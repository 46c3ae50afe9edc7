package io.pgjobs.testkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.sql.DataSource;

/**
 * A database that {@link TestDatabase#create(DatabaseTemplate)} copies instead of setting up each test
 * database from nothing: the set-up (typically the migrations) runs once per server and version, and every
 * test class after that gets a copy ({@code CREATE DATABASE ... TEMPLATE}), which costs what an empty
 * database costs.
 *
 * <p>The template lives on the server as {@code pgjobs_tpl_<name>_<version>}, where the version is a hash
 * of the files the set-up reads (say, the migration scripts): a changed script makes a new template, and
 * building it drops the older versions of the same name. Test JVMs running at the same time (parallel
 * forks, other checkouts) build it one at a time under an advisory lock; it is built into a scratch
 * database and renamed when complete, so a template never exists half-built. It does not accept
 * connections (a template must have none while it is copied).
 *
 * <pre>{@code
 * static final DatabaseTemplate MIGRATED = DatabaseTemplate.of("pgjobs", "io/pgjobs/db/migration",
 *     ds -> Migrator.migrate(ds, "pgjobs"));
 * static TestDatabase db = TestDatabase.create(MIGRATED);
 * }</pre>
 */
public final class DatabaseTemplate {
  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_]{0,30}");
  private static final String PREFIX = "pgjobs_tpl_";

  private final String name;
  private final String version;
  private final Consumer<DataSource> setUp;
  private String built; // the template's database once this JVM has seen it on the server

  private DatabaseTemplate(String name, String version, Consumer<DataSource> setUp) {
    this.name = name;
    this.version = version;
    this.setUp = setUp;
  }

  /**
   * A template whose version is the hash of every resource under {@code resourceDirectory} on the class
   * path (names and contents).
   *
   * @param name lower-case letters, digits and underscores, starting with a letter, at most 31 characters
   * @param resourceDirectory a class path directory such as {@code io/pgjobs/db/migration}; it must exist
   * @param setUp builds the template from an empty database (its connections are closed afterwards)
   */
  public static DatabaseTemplate of(
      String name, String resourceDirectory, Consumer<DataSource> setUp) {
    if (name == null || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("template name must match " + NAME + ", got " + name);
    }
    return new DatabaseTemplate(name, fingerprint(resourceDirectory), setUp);
  }

  /** The database name of this template on the server. */
  public String databaseName() {
    return PREFIX + name + "_" + version;
  }

  /** Makes sure the template exists on the server of {@code adminUrl}; returns its database name. */
  synchronized String ensureOn(String adminUrl) {
    if (built != null) {
      return built;
    }
    String target = databaseName();
    String scratch = target + "_new";
    try (Connection c = TestDatabase.connect(adminUrl);
        Statement st = c.createStatement()) {
      // One builder per template name at a time; the lock goes with the session.
      try (PreparedStatement lock = c.prepareStatement("SELECT pg_advisory_lock(?)")) {
        lock.setLong(1, lockKey());
        lock.execute();
      }
      if (!exists(c, target)) {
        st.execute("DROP DATABASE IF EXISTS " + scratch
            + " WITH (FORCE)"); // left by a JVM that died building it
        st.execute("CREATE DATABASE " + scratch);
        try (HikariDataSource ds = dataSource(adminUrl, scratch)) {
          setUp.accept(ds);
        } catch (RuntimeException e) {
          st.execute("DROP DATABASE IF EXISTS " + scratch + " WITH (FORCE)");
          throw e;
        }
        st.execute("ALTER DATABASE " + scratch + " WITH IS_TEMPLATE true ALLOW_CONNECTIONS false");
        st.execute("ALTER DATABASE " + scratch + " RENAME TO " + target);
        dropOlderVersions(c, target);
      }
      built = target;
      return target;
    } catch (SQLException e) {
      throw new IllegalStateException(
          "cannot build the test database template " + target + " on " + adminUrl + ": "
              + e.getMessage(),
          e);
    }
  }

  /** Forgets that the template exists (another checkout's run may have dropped it as an older version). */
  synchronized void forget() {
    built = null;
  }

  private void dropOlderVersions(Connection c, String keep) throws SQLException {
    List<String> older = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT datname FROM pg_database WHERE datistemplate AND datname ~ ? AND datname <> ?")) {
      ps.setString(1, "^" + PREFIX + name + "_[0-9a-f]{16}$");
      ps.setString(2, keep);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          older.add(rs.getString(1));
        }
      }
    }
    try (Statement st = c.createStatement()) {
      for (String db : older) {
        // Waits for a copy in progress; a run that copies it later rebuilds it (TestDatabase
        // retries).
        st.execute("ALTER DATABASE " + db + " WITH IS_TEMPLATE false");
        st.execute("DROP DATABASE IF EXISTS " + db);
      }
    }
  }

  private static boolean exists(Connection c, String db) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_database WHERE datname = ?")) {
      ps.setString(1, db);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  private long lockKey() {
    byte[] hash = sha256((PREFIX + name).getBytes(StandardCharsets.UTF_8));
    long key = 0;
    for (int i = 0; i < 8; i++) {
      key = key << 8 | (hash[i] & 0xff);
    }
    return key;
  }

  private static HikariDataSource dataSource(String adminUrl, String db) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(TestDatabase.withDatabase(adminUrl, db));
    config.setMaximumPoolSize(2);
    config.setMinimumIdle(0);
    config.setPoolName(db);
    return new HikariDataSource(config);
  }

  /** The first 16 hex digits of the SHA-256 of the names and contents of the files under {@code dir}. */
  static String fingerprint(String dir) {
    Map<String, byte[]> files = new TreeMap<>();
    ClassLoader loader = Thread.currentThread().getContextClassLoader();
    if (loader == null) {
      loader = DatabaseTemplate.class.getClassLoader();
    }
    try {
      for (URL url : Collections.list(loader.getResources(dir))) {
        switch (url.getProtocol()) {
          case "file" -> readDirectory(Path.of(url.toURI()), files);
          case "jar" -> readJar(url, dir, files);
          default -> throw new IllegalStateException("cannot list class path directory " + url);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
    if (files.isEmpty()) {
      throw new IllegalArgumentException("no files under class path directory " + dir);
    }
    MessageDigest digest = newDigest();
    files.forEach((file, content) -> {
      digest.update(file.getBytes(StandardCharsets.UTF_8));
      digest.update((byte) 0);
      digest.update(content);
    });
    return HexFormat.of().formatHex(digest.digest()).substring(0, 16).toLowerCase(Locale.ROOT);
  }

  private static void readDirectory(Path root, Map<String, byte[]> files) throws IOException {
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : paths.filter(Files::isRegularFile).toList()) {
        files.put(root.relativize(p).toString().replace('\\', '/'), Files.readAllBytes(p));
      }
    }
  }

  private static void readJar(URL url, String dir, Map<String, byte[]> files) throws IOException {
    JarURLConnection connection = (JarURLConnection) url.openConnection();
    connection.setUseCaches(false);
    String prefix = dir.endsWith("/") ? dir : dir + "/";
    try (JarFile jar = connection.getJarFile()) {
      for (JarEntry entry : Collections.list(jar.entries())) {
        if (!entry.isDirectory() && entry.getName().startsWith(prefix)) {
          try (InputStream in = jar.getInputStream(entry)) {
            files.put(entry.getName().substring(prefix.length()), in.readAllBytes());
          }
        }
      }
    }
  }

  private static byte[] sha256(byte[] bytes) {
    return newDigest().digest(bytes);
  }

  private static MessageDigest newDigest() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
