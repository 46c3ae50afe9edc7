package io.pgjobs.server.events;

/** The SQL of the live event hub. */
final class EventSql {
  private EventSql() {}

  /**
   * What a job looks like to a follower, for many jobs at once (uuid[] twice): id and a fingerprint of
   * the columns a state change moves (state, attempts, run_at, attempted_at, and finished_at once it is
   * finished). After a notification that left jobs out, the hub compares it with the fingerprint it last
   * saw and re-reads only the jobs whose fingerprint changed. Both lookups use the primary keys.
   */
  static final String FINGERPRINTS = """
      SELECT id, concat_ws('|', state, attempts, run_at, attempted_at) AS fingerprint
        FROM {schema}.jobs WHERE id = ANY(?)
      UNION ALL
      SELECT id, concat_ws('|', state, attempts, run_at, attempted_at, finished_at) AS fingerprint
        FROM {schema}.finished_jobs WHERE id = ANY(?)""";

  static String forSchema(String sql, String schema) {
    return sql.replace("{schema}", schema);
  }
}
