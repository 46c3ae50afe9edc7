package io.pgjobs.cli;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The ID argument of {@code jobs show|cancel|retry}: a full job id, or a unique prefix of one as the
 * listing shows it ({@code 01a2…}, at least {@value #MIN_PREFIX} hex digits, dashes optional). A prefix
 * is looked up as a range of the primary key of both job tables, so it costs two index probes.
 */
final class JobIdArgument {
  /** Fewest hex digits a prefix may have: {@value}. */
  static final int MIN_PREFIX = 4;

  private static final Pattern PREFIX = Pattern.compile("[0-9a-fA-F-]{1,36}");

  /*
   * The ids in [low, high] of the live and the finished table, at most two (two already mean
   * "ambiguous"). A BETWEEN on the uuid primary key is an index range scan, unlike id::text LIKE.
   * The CLI's only SQL; kept here rather than in core because only this command resolves prefixes.
   */
  private static final String MATCHES = """
      (SELECT id FROM %1$s.jobs WHERE id BETWEEN ?::uuid AND ?::uuid ORDER BY id LIMIT 2)
      UNION
      (SELECT id FROM %1$s.finished_jobs WHERE id BETWEEN ?::uuid AND ?::uuid ORDER BY id LIMIT 2)
      ORDER BY id LIMIT 2
      """;

  private JobIdArgument() {}

  /**
   * The job id {@code text} names.
   *
   * @throws picocli.CommandLine.ParameterException (exit 2) if it is no id or prefix, or the prefix is
   *     ambiguous
   * @throws CommandFailedException (exit 1) if no job has an id starting so
   */
  static UUID resolve(Subcommand command, Database db, String text) {
    String given = text.strip();
    if (given.length() == 36) {
      try {
        return UUID.fromString(given);
      } catch (IllegalArgumentException e) {
        // not a UUID after all: reported below
      }
    }
    String hex = given.replace("-", "").toLowerCase(Locale.ROOT);
    if (!PREFIX.matcher(given).matches() || hex.length() < MIN_PREFIX || hex.length() > 32) {
      throw command.usage("'" + text + "' is not a job id; give the full id (a UUID such as "
          + "0190a2b4-5c6d-7e8f-9a0b-1c2d3e4f5a6b) or a unique prefix of it of at least "
          + MIN_PREFIX
          + " hex digits, as 'pgjobs jobs list' shows it");
    }
    UUID low = uuid(hex + "0".repeat(32 - hex.length()));
    UUID high = uuid(hex + "f".repeat(32 - hex.length()));
    List<UUID> found = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(MATCHES.formatted(db.client().schema()))) {
      ps.setString(1, low.toString());
      ps.setString(2, high.toString());
      ps.setString(3, low.toString());
      ps.setString(4, high.toString());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.add(rs.getObject(1, UUID.class));
        }
      }
    } catch (SQLException e) {
      throw new CommandFailedException(Failures.describe(e, db.url().toString()), e);
    }
    if (found.isEmpty()) {
      throw new CommandFailedException("no job id starts with '" + given
          + "' (finished jobs are pruned after the retention period)");
    }
    if (found.size() > 1) {
      throw command.usage("job id prefix '" + given + "' is ambiguous: " + found.get(0) + ", "
          + found.get(1) + " and maybe more start with it; give more digits or the full id");
    }
    return found.get(0);
  }

  private static UUID uuid(String hex32) {
    return UUID.fromString(hex32.substring(0, 8) + "-" + hex32.substring(8, 12) + "-"
        + hex32.substring(12, 16) + "-" + hex32.substring(16, 20) + "-" + hex32.substring(20));
  }
}
