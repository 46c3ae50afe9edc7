package io.pgjobs.config;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * A PostgreSQL location written any of the ways people write it: {@code postgres://user:pw@host:5432/db},
 * {@code postgresql://...} (libpq style, as in {@code DATABASE_URL}) or {@code jdbc:postgresql://...}.
 *
 * @param jdbcUrl the JDBC URL without credentials
 * @param user user name, or null
 * @param password password, or null
 * @param database database name
 */
public record DatabaseUrl(String jdbcUrl, String user, String password, String database) {
  /** Where pgjobs looks when nothing is configured. */
  public static final String DEFAULT = "postgresql://postgres@127.0.0.1:5432/pgjobs";

  private static final Pattern DATABASE_NAME = Pattern.compile("[A-Za-z0-9_\\-]{1,63}");
  private static final String ALLOWED =
      "allowed: postgres://user:password@host:port/database, postgresql://... or jdbc:postgresql://host:port/database";

  /**
   * Parses {@code url}.
   *
   * @throws IllegalArgumentException saying what is wrong and what is allowed
   */
  public static DatabaseUrl parse(String url) {
    if (url == null || url.isBlank()) {
      throw new IllegalArgumentException("empty database URL; " + ALLOWED);
    }
    String text = url.trim();
    if (text.startsWith("jdbc:postgresql://")) {
      return fromJdbc(text);
    }
    if (!(text.startsWith("postgres://") || text.startsWith("postgresql://"))) {
      throw new IllegalArgumentException("unsupported database URL '" + redact(text) + "'; " + ALLOWED);
    }
    URI uri;
    try {
      uri = new URI(text);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("malformed database URL '" + redact(text) + "': " + e.getReason() + "; " + ALLOWED);
    }
    if (uri.getHost() == null) {
      throw new IllegalArgumentException("database URL '" + redact(text) + "' has no host; " + ALLOWED);
    }
    String database = uri.getPath() == null || uri.getPath().length() <= 1 ? "postgres" : uri.getPath().substring(1);
    String user = null;
    String password = null;
    if (uri.getRawUserInfo() != null) {
      String[] parts = uri.getRawUserInfo().split(":", 2);
      user = decode(parts[0]);
      password = parts.length > 1 ? decode(parts[1]) : null;
    }
    int port = uri.getPort() == -1 ? 5432 : uri.getPort();
    String host = uri.getHost().contains(":") && !uri.getHost().startsWith("[") ? "[" + uri.getHost() + "]" : uri.getHost();
    String jdbc = "jdbc:postgresql://" + host + ":" + port + "/" + database
        + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
    return new DatabaseUrl(jdbc, user, password, requireDatabase(database, text));
  }

  private static DatabaseUrl fromJdbc(String text) {
    int slash = text.indexOf('/', "jdbc:postgresql://".length());
    if (slash < 0) {
      throw new IllegalArgumentException("database URL '" + redact(text) + "' names no database; " + ALLOWED);
    }
    int query = text.indexOf('?', slash);
    String database = text.substring(slash + 1, query < 0 ? text.length() : query);
    Map<String, String> params = new LinkedHashMap<>();
    StringBuilder rest = new StringBuilder();
    if (query >= 0) {
      for (String pair : text.substring(query + 1).split("&")) {
        String[] kv = pair.split("=", 2);
        if (kv[0].equals("user") || kv[0].equals("password")) {
          params.put(kv[0], kv.length > 1 ? decode(kv[1]) : "");
        } else if (!pair.isEmpty()) {
          rest.append(rest.isEmpty() ? "?" : "&").append(pair);
        }
      }
    }
    String jdbc = text.substring(0, slash + 1) + database + rest;
    return new DatabaseUrl(jdbc, params.get("user"), params.get("password"), requireDatabase(database, text));
  }

  /** Connection properties (user and password) for {@link DriverManager}. */
  public Properties properties() {
    Properties props = new Properties();
    if (user != null) {
      props.setProperty("user", user);
    }
    if (password != null) {
      props.setProperty("password", password);
    }
    return props;
  }

  /** Opens a plain JDBC connection. */
  public Connection connect() throws SQLException {
    return DriverManager.getConnection(jdbcUrl, properties());
  }

  /** The same server, another database. */
  public DatabaseUrl withDatabase(String other) {
    String prefix = jdbcUrl.substring(0, jdbcUrl.indexOf('/', "jdbc:postgresql://".length()) + 1);
    int query = jdbcUrl.indexOf('?', prefix.length());
    return new DatabaseUrl(prefix + other + (query < 0 ? "" : jdbcUrl.substring(query)), user, password, other);
  }

  /**
   * Creates the database if it does not exist, connecting to the server's {@code postgres} database to
   * do so. Returns true if it was created.
   */
  public boolean createDatabaseIfMissing() throws SQLException {
    try (Connection c = connect()) {
      return false;
    } catch (SQLException e) {
      if (!"3D000".equals(e.getSQLState())) { // invalid_catalog_name: the database does not exist
        throw e;
      }
    }
    try (Connection c = withDatabase("postgres").connect()) {
      try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_database WHERE datname = ?")) {
        ps.setString(1, database);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            return false;
          }
        }
      }
      try (Statement st = c.createStatement()) {
        st.execute("CREATE DATABASE \"" + database + "\"");
        return true;
      } catch (SQLException e) {
        if ("42P04".equals(e.getSQLState())) { // duplicate_database: another process was faster
          return false;
        }
        throw e;
      }
    }
  }

  /** The URL with the password hidden, for logs and error messages. */
  @Override
  public String toString() {
    return jdbcUrl + (user == null ? "" : " (user " + user + ")");
  }

  private static String requireDatabase(String database, String url) {
    if (!DATABASE_NAME.matcher(database).matches()) {
      throw new IllegalArgumentException(
          "database name '" + database + "' in '" + redact(url)
              + "' is not allowed; use 1 to 63 letters, digits, _ or -");
    }
    return database;
  }

  private static String decode(String value) {
    return URLDecoder.decode(value, StandardCharsets.UTF_8);
  }

  private static String redact(String url) {
    return url.replaceAll("(//[^:/@]+):[^@/]*@", "$1:***@").replaceAll("password=[^&]*", "password=***");
  }
}
