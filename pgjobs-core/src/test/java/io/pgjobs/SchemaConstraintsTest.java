package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.schema.Migrator;
import io.pgjobs.testkit.Await;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The schema: CHECK constraints guard the invariants; migration is repeatable; the schema name is configurable. */
class SchemaConstraintsTest extends PgJobsTestBase {

  /** A row of pgjobs.jobs, valid unless the arguments make it otherwise (a running row gets a claim token). */
  private static String jobRow(
      String state, int attempts, int maxAttempts, String lockedBy, String progress) {
    return jobRow(
        state, attempts, maxAttempts, lockedBy, progress, state.equals("running") ? "1" : "NULL");
  }

  private static String jobRow(
      String state,
      int attempts,
      int maxAttempts,
      String lockedBy,
      String progress,
      String claimToken) {
    return "INSERT INTO pgjobs.jobs (id, type, queue, payload, priority, state, attempts, max_attempts, run_at,"
        + " created_at, locked_by, progress_percent, claim_token) VALUES (gen_random_uuid(), 't', 'q', '{}', 0, '"
        + state + "', " + attempts + ", " + maxAttempts + ", now(), now(), "
        + (lockedBy == null ? "NULL" : "'" + lockedBy + "'") + ", " + progress + ", " + claimToken
        + ")";
  }

  @Test
  void runningJobWithoutAClaimTokenIsRejected() {
    assertThatThrownBy(() -> sql(jobRow("running", 1, 3, "worker-1", "NULL", "NULL")))
        .isInstanceOf(SQLException.class)
        .hasMessageContaining("jobs_running_has_token");
    assertThat(count("pgjobs.jobs")).isZero();
  }

  /** A row of pgjobs.finished_jobs; {@code output} is JSON text or NULL. */
  private static String finishedRow(String state, String output, String errors) {
    output = output.equals("NULL") ? output : "'" + output + "'";
    return "INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,"
        + " run_at, created_at, errors, output, finished_at) VALUES (gen_random_uuid(), 't', 'q', '{}', 0, '"
        + state + "', 1, 3, now(), now(), '" + errors + "', " + output + ", now())";
  }

  private static void sql(String statement) throws SQLException {
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement()) {
      st.execute(statement);
    }
  }

  @Test
  void validRowsAreAccepted() throws SQLException {
    sql(jobRow("queued", 0, 3, null, "NULL"));
    sql(jobRow("retrying", 2, 3, null, "0"));
    sql(jobRow("running", 3, 3, "worker-1", "100"));
    sql(finishedRow("succeeded", "{\"ok\":true}", "[]"));
    sql(finishedRow("failed", "NULL", "[{\"attempt\":1}]"));
    sql(finishedRow("cancelled", "NULL", "[]"));
    assertThat(count("pgjobs.jobs")).isEqualTo(3);
    assertThat(count("pgjobs.finished_jobs")).isEqualTo(3);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', textBlock = """
      attempts above max_attempts        | queued  |  4 | 3 |          | NULL | jobs_attempts_check
      negative attempts                  | queued  | -1 | 3 |          | NULL | jobs_attempts_check
      max_attempts 0                     | queued  |  0 | 0 |          | NULL | jobs_max_attempts_check
      unknown state                      | bogus   |  0 | 3 |          | NULL | jobs_state_check
      finished state in the hot table    | failed  |  1 | 3 |          | NULL | jobs_state_check
      running without locked_by          | running |  1 | 3 |          | NULL | jobs_running_is_locked
      queued with locked_by              | queued  |  0 | 3 | worker-1 | NULL | jobs_running_is_locked
      progress 101                       | running |  1 | 3 | worker-1 | 101  | jobs_progress_check
      progress -1                        | running |  1 | 3 | worker-1 | -1   | jobs_progress_check
      """)
  void jobRowBreakingAnInvariantIsRejectedByItsCheckConstraint(
      String description,
      String state,
      int attempts,
      int maxAttempts,
      String lockedBy,
      String progress,
      String constraint) {
    long before = count("pgjobs.jobs");
    assertThatThrownBy(() -> sql(jobRow(state, attempts, maxAttempts, lockedBy, progress)))
        .isInstanceOf(SQLException.class)
        .hasMessageContaining(constraint)
        .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("23514"));
    assertThat(count("pgjobs.jobs")).isEqualTo(before);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', textBlock = """
      unknown state         | bogus   | NULL        | []      | finished_jobs_state_check
      hot state             | running | NULL        | []      | finished_jobs_state_check
      output on failure     | failed  | {"a":1}     | []      | finished_jobs_output_only_on_success
      errors not an array   | failed  | NULL        | {}      | finished_jobs_errors_is_array
      """)
  void finishedRowBreakingAnInvariantIsRejectedByItsCheckConstraint(
      String description, String state, String output, String errors, String constraint) {
    assertThatThrownBy(() -> sql(finishedRow(state, output, errors)))
        .isInstanceOf(SQLException.class)
        .hasMessageContaining(constraint);
    assertThat(count("pgjobs.finished_jobs")).isZero();
  }

  @Test
  void otherInvariantsOfTheHotTableAreChecked() {
    assertThatThrownBy(
            () -> sql(
                "INSERT INTO pgjobs.jobs (id, type, queue, payload, priority, state, max_attempts,"
                    + " run_at, created_at, timeout_ms) VALUES (gen_random_uuid(), 't', 'q', '{}', 0, 'queued', 3, now(), now(), 0)"))
        .hasMessageContaining("jobs_timeout_check");
    assertThatThrownBy(
            () -> sql(
                "INSERT INTO pgjobs.jobs (id, type, queue, payload, priority, state, max_attempts,"
                    + " run_at, created_at) VALUES (gen_random_uuid(), '', 'q', '{}', 0, 'queued', 3, now(), now())"))
        .hasMessageContaining("jobs_type_check");
    assertThatThrownBy(
            () -> sql(
                "INSERT INTO pgjobs.jobs (id, type, queue, payload, priority, state, max_attempts,"
                    + " run_at, created_at, errors) VALUES (gen_random_uuid(), 't', 'q', '{}', 0, 'queued', 3, now(), now(), '{}')"))
        .hasMessageContaining("jobs_errors_is_array");
    assertThatThrownBy(() -> sql(
            "INSERT INTO pgjobs.job_keys (idempotency_key, job_id) VALUES ('', gen_random_uuid())"))
        .hasMessageContaining("job_keys_key_check");
    assertThat(count("pgjobs.jobs")).isZero();
  }

  @Test
  void updateThatWouldBreakAnInvariantIsRejectedToo() {
    UUID id = client
        .enqueue(
            NUMBERED, new Numbered(1), EnqueueOptions.builder().maxAttempts(2).build())
        .job()
        .id();
    assertThatThrownBy(() -> sql("UPDATE pgjobs.jobs SET attempts = 3 WHERE id = '" + id + "'"))
        .hasMessageContaining("jobs_attempts_check");
    assertThatThrownBy(() -> sql(
            "UPDATE pgjobs.jobs SET state = 'running', claim_token = 1 WHERE id = '" + id + "'"))
        .hasMessageContaining("jobs_running_is_locked");
    assertThatThrownBy(() -> sql(
            "UPDATE pgjobs.jobs SET state = 'running', locked_by = 'w' WHERE id = '" + id + "'"))
        .hasMessageContaining("jobs_running_has_token");
    assertThat(client.get(id).orElseThrow().state()).isEqualTo(JobState.QUEUED);
  }

  /** An INSERT of a queued job whose column {@code column} holds the SQL literal {@code value}. */
  private static String queuedRowWith(String column, String value) {
    java.util.Map<String, String> row = new java.util.LinkedHashMap<>();
    row.put("id", "gen_random_uuid()");
    row.put("type", "'t'");
    row.put("queue", "'q'");
    row.put("payload", "'{}'");
    row.put("priority", "0");
    row.put("state", "'queued'");
    row.put("max_attempts", "3");
    row.put("run_at", "now()");
    row.put("created_at", "now()");
    row.put(column, value);
    return "INSERT INTO pgjobs.jobs (" + String.join(", ", row.keySet()) + ") VALUES ("
        + String.join(", ", row.values()) + ")";
  }

  /** The rules on one column of the hot table, each at its limit: the last allowed value and the first refused. */
  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', quoteCharacter = '~', textBlock = """
      type          | repeat('x', 255)             | repeat('x', 256)              | jobs_type_check
      type          | 'a'                          | ''                            | jobs_type_check
      queue         | repeat('x', 255)             | repeat('x', 256)              | jobs_queue_check
      queue         | 'a'                          | ''                            | jobs_queue_check
      max_attempts  | 1                            | 0                             | jobs_max_attempts_check
      timeout_ms    | 1                            | 0                             | jobs_timeout_check
      errors        | '[]'                         | '{}'                          | jobs_errors_is_array
      capability    | repeat('c', 64)              | repeat('c', 65)               | jobs_capability_check
      capability    | 'a.b-c_D9'                   | 'gpu!'                        | jobs_capability_check
      trace_context | repeat('t', 1024)            | repeat('t', 1025)             | jobs_trace_context_length
      """)
  void eachSingleColumnRuleHoldsAtItsLimitOnInsert(
      String column, String allowed, String refused, String constraint) throws SQLException {
    sql(queuedRowWith(column, allowed));
    long before = count("pgjobs.jobs");
    assertThatThrownBy(() -> sql(queuedRowWith(column, refused)))
        .isInstanceOf(SQLException.class)
        .hasMessageContaining(constraint)
        .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("23514"));
    assertThat(count("pgjobs.jobs")).isEqualTo(before);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', quoteCharacter = '~', textBlock = """
      progress_percent = 101                        | jobs_progress_check
      progress_percent = -1                         | jobs_progress_check
      errors = 'null'                               | jobs_errors_is_array
      errors = '{}'                                 | jobs_errors_is_array
      queue = ''                                    | jobs_queue_check
      max_attempts = 0, attempts = 0                | jobs_max_attempts_check
      capability = 'no spaces'                      | jobs_capability_check
      trace_context = repeat('t', 1025)             | jobs_trace_context_length
      timeout_ms = -5                               | jobs_timeout_check
      """)
  void eachSingleColumnRuleHoldsOnUpdate(String set, String constraint) {
    UUID id = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    assertThatThrownBy(() -> sql("UPDATE pgjobs.jobs SET " + set + " WHERE id = '" + id + "'"))
        .isInstanceOf(SQLException.class)
        .hasMessageContaining(constraint)
        .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("23514"));
    Job job = client.get(id).orElseThrow();
    assertThat(job.queue()).isEqualTo(NUMBERED.queue());
    assertThat(job.errors()).isEmpty();
  }

  /**
   * Why the single-column rules are domains: PostgreSQL re-reads and plans a table's CHECK expressions
   * for every statement that writes a row, which cost a third of a single-row enqueue when the hot table had
   * twelve (docs/bench-journal/issue-15-part-3.md); a domain's constraints are planned once per connection.
   * This keeps the table CHECKs to the rules over several columns, and fails if a single-column rule goes
   * back to one.
   */
  @Test
  void hotTableKeepsOnlyItsMultiColumnRulesAsTableChecksAndTheRestAsDomains() {
    assertThat(strings(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'pgjobs.jobs'::regclass AND contype = 'c'"
                + " ORDER BY conname"))
        .containsExactly(
            "jobs_attempts_check",
            "jobs_running_has_token",
            "jobs_running_is_locked",
            "jobs_state_check");
    assertThat(count("SELECT sum(length(conbin::text)) FROM pg_constraint"
            + " WHERE conrelid = 'pgjobs.jobs'::regclass AND contype = 'c'"))
        .as("characters of node tree every write of the hot table parses")
        .isLessThan(3_500);
    assertThat(strings("SELECT a.attname || ' ' || c.conname FROM pg_attribute a"
            + " JOIN pg_constraint c ON c.contypid = a.atttypid"
            + " WHERE a.attrelid = 'pgjobs.jobs'::regclass AND a.attnum > 0 ORDER BY a.attname"))
        .containsExactly(
            "capability jobs_capability_check",
            "errors jobs_errors_is_array",
            "limit_key jobs_limit_key_check",
            "max_attempts jobs_max_attempts_check",
            "progress_percent jobs_progress_check",
            "queue jobs_queue_check",
            "timeout_ms jobs_timeout_check",
            "trace_context jobs_trace_context_length",
            "type jobs_type_check");
  }

  private static java.util.List<String> strings(String query) {
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement();
        java.sql.ResultSet rs = st.executeQuery(query)) {
      java.util.List<String> values = new java.util.ArrayList<>();
      while (rs.next()) {
        values.add(rs.getString(1));
      }
      return values;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  // ---------------------------------------------------------------- migration and schema name

  @Test
  void migratingAnUpToDateSchemaAgainIsANoOp() {
    UUID kept = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    long history = count("pgjobs." + Migrator.HISTORY_TABLE);

    client.migrate();
    int applied = Migrator.migrate(db.dataSource(), "pgjobs");

    assertThat(applied).isZero();
    assertThat(count("pgjobs." + Migrator.HISTORY_TABLE)).isEqualTo(history);
    assertThat(client.get(kept)).isPresent();
  }

  /** Runs a worker of {@code schema} (its handler doubles the number) until job {@code id} has succeeded. */
  private static void runsToSuccess(String schema, JobClient schemaClient, UUID id) {
    JobWorker worker = JobWorker.builder(db.dataSource())
        .schema(schema)
        .pollInterval(Duration.ofMillis(50))
        .shutdownGrace(Duration.ofSeconds(2))
        .register(NUMBERED, (ctx, p) -> java.util.Map.of("double", p.n() * 2))
        .build();
    try {
      worker.start();
      Await.awaitState(
          schemaClient::get, id, Job::state, JobState.SUCCEEDED, Duration.ofSeconds(20));
    } finally {
      worker.close();
    }
  }

  private static void customSchemaRunsAJob(String schema) {
    JobClient custom = JobClient.builder(db.dataSource()).schema(schema).build();
    custom.migrate();
    assertThat(custom.schema()).isEqualTo(schema);

    UUID id = custom.enqueue(NUMBERED, new Numbered(21)).job().id();
    runsToSuccess(schema, custom, id);
    assertThat(custom.get(id).orElseThrow().output().get("double").asInt()).isEqualTo(42);
    assertThat(count(schema + ".finished_jobs")).isEqualTo(1);
    assertThat(client.get(id)).as("not in the default schema").isEmpty();
    assertThat(count("pgjobs.jobs") + count("pgjobs.finished_jobs")).isZero();
  }

  @Test
  void customSchemaNameWorksEndToEnd() {
    customSchemaRunsAJob("custom_jobs");
  }

  @Test
  void workerInOneSchemaDoesNotRunJobsOfAnother() {
    JobClient other = JobClient.builder(db.dataSource()).schema("other_jobs").build();
    other.migrate();
    UUID elsewhere = other.enqueue(NUMBERED, new Numbered(1)).job().id();
    UUID here = client.enqueue(NUMBERED, new Numbered(2)).job().id();
    start(worker().pollInterval(Duration.ofMillis(50)).register(NUMBERED, (ctx, p) -> null));

    awaitState(here, JobState.SUCCEEDED);

    assertThat(other.get(elsewhere).orElseThrow().state()).isEqualTo(JobState.QUEUED);
  }

  @Test
  void longestAllowedSchemaNameWorksEndToEnd() {
    String longest = longestAcceptedSchemaName();
    customSchemaRunsAJob(longest);
  }

  /** The longest name the builder accepts, found by asking it. */
  private static String longestAcceptedSchemaName() {
    String name = "s";
    while (true) {
      String longer = name + "x";
      try {
        JobClient.builder(db.dataSource()).schema(longer).build();
      } catch (IllegalArgumentException e) {
        return name;
      }
      name = longer;
      if (name.length() > 200) {
        throw new AssertionError("schema names are not limited");
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"Bad-Name", "UPPER", "1starts_with_digit", "semi;colon", "", "has space"})
  void invalidSchemaNameIsRejectedWithAClearMessage(String schema) {
    assertThatThrownBy(() -> JobClient.builder(db.dataSource()).schema(schema).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("invalid schema name '" + schema + "'")
        .hasMessageContaining("allowed: ")
        .hasMessageContaining("lowercase letters, digits and _");
    assertThatThrownBy(() -> JobWorker.builder(db.dataSource())
            .schema(schema)
            .register(NUMBERED, (ctx, p) -> null)
            .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("invalid schema name");
  }

  @Test
  void nullOrOverlongSchemaNameIsRejected() {
    assertThatThrownBy(() -> JobClient.builder(db.dataSource()).schema(null).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("invalid schema name");
    assertThatThrownBy(
            () -> JobClient.builder(db.dataSource()).schema("s".repeat(64)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("invalid schema name");
    assertThat(count("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'sss%'"))
        .isZero();
  }
}
