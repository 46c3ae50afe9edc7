package io.pgjobs.config;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * A PostgreSQL location written any of the ways people write it: {@code postgres://user:pw@host:5432/db},
 * {@code postgresql://...} (libpq style, as in {@code DATABASE_URL}) or {@code jdbc:postgresql://...}.
 *
 * <p>User name and password are percent-decoded ({@code %40} is '@'; a '+' stays a plus). A password may
 * hold '@' and ':' as they are: the last '@' before the host ends it, as libpq reads it. '/', '?', '#'
 * and '%' must be written {@code %2F}, {@code %3F}, {@code %23} and {@code %25}. No message and no
 * {@link #toString()} ever shows any part of a password.
 *
 * <p>For a primary with standbys, list several hosts as libpq does: {@code postgres://u@h1:5432,h2:5432/db},
 * with bracketed IPv6 addresses ({@code [::1]:5432,[fe80::2]}) or as query parameters
 * ({@code postgres://u@/db?host=h1,h2&port=5432,5433}; one port for all hosts or one per host). libpq's
 * {@code target_session_attrs} becomes pgJDBC's {@code targetServerType}: {@code read-write} and
 * {@code primary} → {@code primary}, {@code read-only} and {@code standby} → {@code secondary},
 * {@code prefer-standby} → {@code preferSecondary}, {@code any} → {@code any}. With
 * {@code target_session_attrs=read-write} every new connection goes to whichever host accepts writes, so
 * after a failover new connections reach the promoted standby.
 *
 * @param jdbcUrl the JDBC URL without credentials
 * @param user user name, or null
 * @param password password, or null
 * @param database database name
 */
public record DatabaseUrl(String jdbcUrl, String user, String password, String database) {
  /** Where pgjobs looks when nothing is configured. */
  public static final String DEFAULT = "postgresql://postgres@127.0.0.1:5432/pgjobs";

  private static final Pattern HOST = Pattern.compile("[A-Za-z0-9_.\\-]{1,253}");
  private static final Pattern IPV6 =
      Pattern.compile("\\[[0-9A-Fa-f:.]{2,45}(%[A-Za-z0-9_.\\-]+)?]");
  /** libpq's {@code target_session_attrs} values and pgJDBC's {@code targetServerType} for each. */
  private static final Map<String, String> TARGET_SERVER_TYPES = orderedMap(
      "any",
      "any",
      "read-write",
      "primary",
      "read-only",
      "secondary",
      "primary",
      "primary",
      "standby",
      "secondary",
      "prefer-standby",
      "preferSecondary");
  /** Query parameters of a libpq URL that pgJDBC spells differently or takes in the host list. */
  private static final java.util.Set<String> LIBPQ_PARAMETERS =
      java.util.Set.of("host", "port", "target_session_attrs");

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
      throw new IllegalArgumentException(
          "unsupported database URL '" + redact(text) + "'; " + ALLOWED);
    }
    // Split by hand rather than with java.net.URI: a password may hold '@' (the last '@' of the
    // authority separates the user info from the host, as libpq and browsers read it) and URI would
    // see no host.
    String rest = text.substring(text.indexOf("//") + 2);
    int at = lastAtOfUserInfo(rest);
    if (at < 0 && rest.indexOf('@') >= 0) {
      // An '@' after a '/', '?' or '#': most likely a password holding one of those unencoded.
      throw new IllegalArgumentException(
          "database URL '" + redact(text) + "' has an '@' after its host; if the user"
              + " name or password holds '/', '?', '#' or '%', write them as %2F, %3F, %23 and %25 (and '@' as %40 outside"
              + " them); " + ALLOWED);
    }
    String userInfo = at < 0 ? null : rest.substring(0, at);
    String afterUserInfo = rest.substring(at + 1);
    int authorityEnd = indexOfAny(afterUserInfo, "/?#");
    String authority = authorityEnd < 0 ? afterUserInfo : afterUserInfo.substring(0, authorityEnd);
    String tail = authorityEnd < 0 ? "" : afterUserInfo.substring(authorityEnd);
    if (tail.indexOf('#') >= 0) {
      throw new IllegalArgumentException("database URL '" + redact(text)
          + "' has a fragment (#); write '#' in a" + " password as %23; " + ALLOWED);
    }
    int queryStart = tail.indexOf('?');
    String path = queryStart < 0 ? tail : tail.substring(0, queryStart);
    String rawQuery = queryStart < 0 ? null : tail.substring(queryStart + 1);
    // libpq's host and port parameters replace the authority's hosts and ports; the other
    // parameters go to pgJDBC as they are, but for target_session_attrs, which pgJDBC names
    // targetServerType.
    Map<String, String> libpq = new LinkedHashMap<>();
    StringBuilder forwarded = new StringBuilder();
    if (rawQuery != null) {
      for (String pair : rawQuery.split("&")) {
        String[] kv = pair.split("=", 2);
        if (LIBPQ_PARAMETERS.contains(kv[0])) {
          libpq.put(kv[0], kv.length > 1 ? decodeParameter(kv[0], kv[1], text) : "");
        } else if (!pair.isEmpty()) {
          forwarded.append(forwarded.isEmpty() ? "?" : "&").append(pair);
        }
      }
    }
    List<String> hosts = new ArrayList<>();
    List<String> ports = new ArrayList<>();
    if (libpq.containsKey("host")) {
      for (String host : libpq.get("host").split(",", -1)) {
        // In the query an IPv6 address is written without brackets; pgJDBC wants them.
        hosts.add(host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host);
        ports.add(null);
      }
    } else {
      for (String hostPort : authority.split(",", -1)) {
        splitHostPort(hostPort, text, hosts, ports);
      }
    }
    if (libpq.containsKey("port")) {
      List<String> queryPorts = List.of(libpq.get("port").split(",", -1));
      if (queryPorts.size() != 1 && queryPorts.size() != hosts.size()) {
        throw new IllegalArgumentException(
            "database URL '" + redact(text) + "' has " + queryPorts.size() + " ports for "
                + hosts.size() + " hosts; give one port for all hosts or one per host");
      }
      for (int i = 0; i < hosts.size(); i++) {
        ports.set(i, queryPorts.size() == 1 ? queryPorts.get(0) : queryPorts.get(i));
      }
    }
    StringBuilder hostList = new StringBuilder();
    for (int i = 0; i < hosts.size(); i++) {
      String host = hosts.get(i);
      if (host.isEmpty()) {
        throw new IllegalArgumentException(
            "database URL '" + redact(text) + "' has no host"
                + (hosts.size() > 1
                    ? " (host " + (i + 1) + " of " + hosts.size() + " is empty)"
                    : "")
                + "; " + ALLOWED
                + " (in the user name or password write '/' as %2F, '?' as %3F, '#' as %23 and '%' as %25)");
      }
      if (host.startsWith("/")) {
        throw new IllegalArgumentException(
            "database URL '" + redact(text) + "' names the Unix-domain socket directory '"
                + host
                + "' as a host; pgJDBC connects over TCP only: give a host name or address (127.0.0.1 for this"
                + " machine)");
      }
      if (host.startsWith("[")
          ? !IPV6.matcher(host).matches()
          : !HOST.matcher(host).matches()) {
        throw new IllegalArgumentException(
            "database URL '" + redact(text) + "' has an invalid host '" + host + "'; " + ALLOWED
                + " (in the user name or password write '/' as %2F, '?' as %3F, '#' as %23 and '%' as %25)");
      }
      hostList.append(i == 0 ? "" : ",").append(host).append(':').append(port(ports.get(i), text));
    }
    if (libpq.containsKey("target_session_attrs")) {
      if (forwarded.indexOf("targetServerType=") >= 0) {
        throw new IllegalArgumentException("database URL '" + redact(text)
            + "' has both target_session_attrs and" + " targetServerType; give one of them");
      }
      String attrs = libpq.get("target_session_attrs");
      String serverType = TARGET_SERVER_TYPES.get(attrs);
      if (serverType == null) {
        throw new IllegalArgumentException(
            "target_session_attrs '" + attrs + "' in database URL '" + redact(text)
                + "' is not allowed; allowed: " + String.join(", ", TARGET_SERVER_TYPES.keySet()));
      }
      forwarded
          .append(forwarded.isEmpty() ? "?" : "&")
          .append("targetServerType=")
          .append(serverType);
    }
    String database =
        path.length() <= 1 ? "postgres" : decode(path.substring(1), "database name", text);
    String user = null;
    String password = null;
    if (userInfo != null) {
      int colon = userInfo.indexOf(':');
      user = decode(colon < 0 ? userInfo : userInfo.substring(0, colon), "user name", text);
      password = colon < 0 ? null : decode(userInfo.substring(colon + 1), "password", text);
    }
    String jdbc = "jdbc:postgresql://" + hostList + "/" + database + forwarded;
    return new DatabaseUrl(jdbc, user, password, requireDatabase(database, text));
  }

  /** Splits one {@code host}, {@code host:port}, {@code [v6]} or {@code [v6]:port} of the authority. */
  private static void splitHostPort(
      String hostPort, String url, List<String> hosts, List<String> ports) {
    if (hostPort.startsWith("[")) {
      int close = hostPort.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException(
            "database URL '" + redact(url) + "' has an unclosed '[' in its host; " + ALLOWED);
      }
      String after = hostPort.substring(close + 1);
      if (!after.isEmpty() && !after.startsWith(":")) {
        throw new IllegalArgumentException(
            "database URL '" + redact(url) + "' has an invalid host; " + ALLOWED);
      }
      hosts.add(hostPort.substring(0, close + 1));
      ports.add(after.isEmpty() ? null : after.substring(1));
    } else {
      int colon = hostPort.lastIndexOf(':');
      hosts.add(colon < 0 ? hostPort : hostPort.substring(0, colon));
      ports.add(colon < 0 ? null : hostPort.substring(colon + 1));
    }
  }

  /** The port of {@code portText}, 5432 when it is absent or empty. */
  private static int port(String portText, String url) {
    if (portText == null || portText.isEmpty()) {
      return 5432;
    }
    int port;
    try {
      port = Integer.parseInt(portText);
    } catch (NumberFormatException e) {
      port = -1;
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("database URL '" + redact(url) + "' has an invalid port '"
          + portText + "'; allowed: 1 to 65535");
    }
    return port;
  }

  private static DatabaseUrl fromJdbc(String text) {
    int slash = text.indexOf('/', "jdbc:postgresql://".length());
    if (slash < 0) {
      throw new IllegalArgumentException(
          "database URL '" + redact(text) + "' names no database; " + ALLOWED);
    }
    int query = text.indexOf('?', slash);
    String database = text.substring(slash + 1, query < 0 ? text.length() : query);
    Map<String, String> params = new LinkedHashMap<>();
    StringBuilder rest = new StringBuilder();
    if (query >= 0) {
      for (String pair : text.substring(query + 1).split("&")) {
        String[] kv = pair.split("=", 2);
        if (kv[0].equals("user") || kv[0].equals("password")) {
          params.put(kv[0], kv.length > 1 ? decodeParameter(kv[0], kv[1], text) : "");
        } else if (!pair.isEmpty()) {
          rest.append(rest.isEmpty() ? "?" : "&").append(pair);
        }
      }
    }
    String jdbc = text.substring(0, slash + 1) + database + rest;
    return new DatabaseUrl(
        jdbc, params.get("user"), params.get("password"), requireDatabase(database, text));
  }

  private static Map<String, String> orderedMap(String... keysAndValues) {
    Map<String, String> map = new LinkedHashMap<>();
    for (int i = 0; i < keysAndValues.length; i += 2) {
      map.put(keysAndValues[i], keysAndValues[i + 1]);
    }
    return java.util.Collections.unmodifiableMap(map);
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
    return new DatabaseUrl(
        prefix + other + (query < 0 ? "" : jdbcUrl.substring(query)), user, password, other);
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
      try (PreparedStatement ps =
          c.prepareStatement("SELECT 1 FROM pg_database WHERE datname = ?")) {
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
    return redact(jdbcUrl) + (user == null ? "" : " (user " + user + ")");
  }

  private static String requireDatabase(String database, String url) {
    if (!DATABASE_NAME.matcher(database).matches()) {
      throw new IllegalArgumentException("database name '" + database + "' in '" + redact(url)
          + "' is not allowed; use 1 to 63 letters, digits, _ or -");
    }
    return database;
  }

  /** Decodes a JDBC URL parameter as the PostgreSQL driver does ('+' is a space); errors never show it. */
  private static String decodeParameter(String name, String value, String url) {
    try {
      return URLDecoder.decode(value, StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("the " + name + " parameter of database URL '"
          + redact(url) + "' has a '%' not followed by two hex digits; write '%' as %25");
    }
  }

  /**
   * Percent-decodes one part of the URL (not '+', which stays a plus as in RFC 3986). A bad escape is
   * reported without the part's text, which may be a password.
   */
  private static String decode(String value, String what, String url) {
    if (value.indexOf('%') < 0) {
      return value;
    }
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '%') {
        int hi = i + 2 < value.length() ? Character.digit(value.charAt(i + 1), 16) : -1;
        int lo = i + 2 < value.length() ? Character.digit(value.charAt(i + 2), 16) : -1;
        if (hi < 0 || lo < 0) {
          throw new IllegalArgumentException("the " + what + " in database URL '" + redact(url)
              + "' has a '%' not followed by two hex digits; write '%' as %25");
        }
        bytes.write(hi * 16 + lo);
        i += 2;
      } else {
        byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
        if (Character.isHighSurrogate(c) && i + 1 < value.length()) {
          b = value.substring(i, i + 2).getBytes(StandardCharsets.UTF_8);
          i++;
        }
        bytes.writeBytes(b);
      }
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  /**
   * Where the user info ends in {@code rest} (the URL after {@code //}): the last '@' before the path,
   * or -1. The path starts at the first '/', '?' or '#' after that '@'; a password may therefore hold
   * '@' and ':' as they are, but '/', '?', '#' and '%' must be percent-encoded.
   */
  private static int lastAtOfUserInfo(String rest) {
    int firstSeparator = indexOfAny(rest, "/?#");
    String authority = firstSeparator < 0 ? rest : rest.substring(0, firstSeparator);
    return authority.lastIndexOf('@');
  }

  private static int indexOfAny(String text, String chars) {
    for (int i = 0; i < text.length(); i++) {
      if (chars.indexOf(text.charAt(i)) >= 0) {
        return i;
      }
    }
    return -1;
  }

  /**
   * {@code url} with every part that may be a password replaced by {@code ***}: everything between
   * {@code ://} and the last '@' of the URL, query included (the user name before the first ':' is kept),
   * and {@code password=} parameters. Errs on the side of hiding too much: a password holding '/' or
   * '?' that was not percent-encoded is still hidden.
   */
  static String redact(String url) {
    String text = url.replaceAll("(?i)(password=)[^&]*", "$1***");
    int scheme = text.indexOf("://");
    if (scheme < 0) {
      return text;
    }
    String rest = text.substring(scheme + 3);
    int at = rest.lastIndexOf('@');
    if (at < 0) {
      return text;
    }
    String userInfo = rest.substring(0, at);
    int colon = userInfo.indexOf(':');
    int slash = userInfo.indexOf('/');
    String shown = colon < 0 && slash < 0
        ? userInfo
        : colon >= 0 && (slash < 0 || colon < slash)
            ? userInfo.substring(0, colon) + ":***"
            : "***";
    return text.substring(0, scheme + 3) + shown + rest.substring(at);
  }
}
