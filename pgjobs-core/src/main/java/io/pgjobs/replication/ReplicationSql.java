package io.pgjobs.replication;

/** All SQL of this package: read-only checks of the server's role and replication settings. */
final class ReplicationSql {
  private ReplicationSql() {}

  /**
   * Whether the server is in recovery (a standby) and whether this session's transactions are
   * read-only: the latter is also true on a primary with {@code default_transaction_read_only = on}.
   */
  static final String ROLE = """
      SELECT pg_is_in_recovery() AS in_recovery,
             current_setting('transaction_read_only') = 'on' AS read_only
      """;

  /**
   * What decides whether a commit is on a standby before the primary acknowledges it:
   * {@code synchronous_commit} of this session (the server's default unless the role or database
   * overrides it), {@code synchronous_standby_names}, and the standbys attached now with their sync state
   * (pg_stat_replication shows other sessions' rows only to superusers and pg_read_all_stats; without that
   * right a non-superuser sees the rows with null columns, which still counts them).
   */
  static final String SETTINGS = """
      SELECT current_setting('synchronous_commit') AS synchronous_commit,
             current_setting('synchronous_standby_names') AS synchronous_standby_names,
             (SELECT count(*) FROM pg_stat_replication) AS standbys,
             (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')) AS synchronous_standbys
      """;
}
