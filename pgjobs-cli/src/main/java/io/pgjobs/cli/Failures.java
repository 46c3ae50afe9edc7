package io.pgjobs.cli;

import io.pgjobs.InvalidJobException;
import java.sql.SQLException;

/** Turns an exception into the one-line message a person sees (no stack traces). */
final class Failures {
  private Failures() {}

  /** One line saying what went wrong. */
  static String describe(Throwable e) {
    if (e instanceof CommandFailedException || e instanceof InvalidJobException) {
      return e.getMessage();
    }
    SQLException sql = sqlCause(e);
    if (sql != null) {
      return describe(sql, null);
    }
    String message = e.getMessage();
    return message == null || message.isBlank() ? e.getClass().getSimpleName() : oneLine(message);
  }

  /** A database problem, with the database's location when known. */
  static String describe(SQLException e, String where) {
    String state = e.getSQLState() == null ? "" : e.getSQLState();
    String at = where == null ? "" : " at " + where;
    String message =
        oneLine(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
    java.net.UnknownHostException unknownHost = unknownHost(e);
    if (unknownHost != null) {
      return "cannot connect to the database" + at + ": unknown host '" + unknownHost.getMessage()
          + "' (the name does not resolve; check the host in the database URL)";
    }
    if (state.startsWith("08")) {
      return "cannot connect to the database" + at + ": " + message;
    }
    if (state.equals("3D000")) {
      return message + " (run 'pgjobs migrate' to create it)";
    }
    if (state.startsWith("28")) {
      return "the database refused the login" + at + ": " + message;
    }
    if (state.equals("42P01") || state.equals("3F000")) {
      return "the pgjobs tables are missing (" + message + "); run 'pgjobs migrate' first";
    }
    return "database error" + at + ": " + message;
  }

  private static java.net.UnknownHostException unknownHost(Throwable e) {
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (t instanceof java.net.UnknownHostException u && u.getMessage() != null) {
        return u;
      }
    }
    return null;
  }

  private static SQLException sqlCause(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql) {
        return sql;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return null;
  }

  private static String oneLine(String text) {
    String line = text.strip().replaceAll("\\s*\\R\\s*", " ");
    return line.length() > 500 ? line.substring(0, 500) + "…" : line;
  }
}
