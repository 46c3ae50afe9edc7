package io.pgjobs.schema;

import io.pgjobs.testkit.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.flywaydb.core.Flyway;

/**
 * Test support for the schema's migrations: the pre-release migration history (kept as test resources), and
 * {@code pg_dump --schema-only} of one schema as a list of statements to compare.
 */
final class SchemaDump {
  /** The migration history from before the first release, V1 to V24, reset into today's V1. */
  static final String PRE_RELEASE_LOCATION = "classpath:io/pgjobs/db/legacy-migration";

  private SchemaDump() {}

  /** Migrates {@code schema} of {@code db} with the pre-release history, up to {@code target} ("latest" for all). */
  static void migratePreRelease(TestDatabase db, String schema, String target) {
    Flyway.configure(Migrator.class.getClassLoader())
        .dataSource(db.dataSource())
        .schemas(schema)
        .defaultSchema(schema)
        .createSchemas(true)
        .table(Migrator.HISTORY_TABLE)
        .locations(PRE_RELEASE_LOCATION)
        .target(target)
        .loggers("slf4j")
        .load()
        .migrate();
  }

  /**
   * The DDL of {@code schema} in {@code db} as pg_dump writes it, without Flyway's history table, one entry
   * per statement: pg_dump's comments, its {@code SET} lines and its per-run {@code \restrict} key left out.
   * Objects come in pg_dump's order (by kind, then name), so two schemas built in different orders compare
   * equal when they hold the same objects.
   */
  static List<String> statements(TestDatabase db, String schema) {
    Map<String, String> url = parse(db.jdbcUrl());
    List<String> command = new ArrayList<>(List.of(
        pgDump(db).toString(),
        "--schema-only",
        "--no-owner",
        "--no-privileges",
        "--host=" + url.get("host"),
        "--port=" + url.get("port"),
        "--dbname=" + url.get("database"),
        "--schema=" + schema,
        "--exclude-table=" + schema + "." + Migrator.HISTORY_TABLE));
    if (url.containsKey("user")) {
      command.add("--username=" + url.get("user"));
    }
    command.add("--no-password");
    ProcessBuilder builder = new ProcessBuilder(command);
    if (url.containsKey("password")) {
      builder.environment().put("PGPASSWORD", url.get("password"));
    }
    String out;
    String err;
    int exit;
    try {
      Path errors = Files.createTempFile("pg_dump", ".err");
      try {
        builder.redirectError(errors.toFile());
        Process p = builder.start();
        p.getOutputStream().close();
        out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          throw new IllegalStateException("pg_dump did not finish within 60 s: " + command);
        }
        exit = p.exitValue();
        err = Files.readString(errors);
      } finally {
        Files.deleteIfExists(errors);
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + command + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    if (exit != 0) {
      throw new IllegalStateException(
          "pg_dump exited with " + exit + ": " + err.strip() + " (" + command + ")");
    }
    return normalise(out);
  }

  /** pg_dump's script as its statements, each with its lines joined by newlines. */
  static List<String> normalise(String dump) {
    List<String> statements = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    for (String line : dump.split("\n", -1)) {
      boolean noise = line.startsWith("--")
          || line.startsWith("SET ")
          || line.startsWith("SELECT pg_catalog.set_config(")
          || line.startsWith("\\restrict ")
          || line.startsWith("\\unrestrict ");
      if (noise) {
        continue;
      }
      if (line.isBlank()) {
        if (!current.isEmpty()) {
          statements.add(current.toString());
          current.setLength(0);
        }
        continue;
      }
      if (!current.isEmpty()) {
        current.append('\n');
      }
      current.append(line);
    }
    if (!current.isEmpty()) {
      statements.add(current.toString());
    }
    return statements;
  }

  /**
   * The extensions of {@code db} and the schema each is in: pg_dump leaves extensions out of a dump of one
   * schema, but pgjobs' migration installs pg_trgm where it may.
   */
  static List<String> extensions(TestDatabase db) {
    List<String> rows = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(
            "SELECT extname || ' in ' || extnamespace::regnamespace FROM pg_extension ORDER BY extname")) {
      while (rs.next()) {
        rows.add(rs.getString(1));
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return rows;
  }

  /**
   * A pg_dump that can dump the server: the one of the server's major version under /usr/lib/postgresql
   * (Debian and Ubuntu), else the newest there, else the first on the PATH.
   */
  static Path pgDump(TestDatabase db) {
    int serverMajor =
        (int) (db.queryLong("SELECT current_setting('server_version_num')::int") / 10_000);
    Path debian = Path.of("/usr/lib/postgresql");
    if (Files.isDirectory(debian)) {
      Path exact = debian.resolve(String.valueOf(serverMajor)).resolve("bin/pg_dump");
      if (Files.isExecutable(exact)) {
        return exact;
      }
      try (Stream<Path> versions = Files.list(debian)) {
        var newest = versions
            .filter(v -> v.getFileName().toString().matches("\\d+"))
            .filter(v -> Integer.parseInt(v.getFileName().toString()) >= serverMajor)
            .map(v -> v.resolve("bin/pg_dump"))
            .filter(Files::isExecutable)
            .max(Comparator.comparingInt(
                p -> Integer.parseInt(p.getParent().getParent().getFileName().toString())));
        if (newest.isPresent()) {
          return newest.get();
        }
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "pg_dump"))) {
        return Path.of(dir, "pg_dump");
      }
    }
    throw new IllegalStateException(
        "no pg_dump found (for PostgreSQL " + serverMajor
            + "): looked in /usr/lib/postgresql/*/bin and on the PATH; install the PostgreSQL client tools");
  }

  /** host, port, database, and the user and password parameters of a jdbc:postgresql:// URL. */
  private static Map<String, String> parse(String jdbcUrl) {
    URI uri = URI.create(jdbcUrl.substring("jdbc:".length()));
    Map<String, String> parts = new HashMap<>();
    parts.put("host", uri.getHost() == null ? "127.0.0.1" : uri.getHost());
    parts.put("port", String.valueOf(uri.getPort() < 0 ? 5432 : uri.getPort()));
    parts.put("database", uri.getPath().substring(1));
    if (uri.getRawQuery() != null) {
      for (String pair : uri.getRawQuery().split("&")) {
        int eq = pair.indexOf('=');
        if (eq > 0) {
          String key = pair.substring(0, eq);
          if (key.equals("user") || key.equals("password")) {
            parts.put(key, URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
          }
        }
      }
    }
    return parts;
  }
}
