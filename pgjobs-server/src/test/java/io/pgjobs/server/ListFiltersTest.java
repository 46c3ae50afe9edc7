package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.JobClient;
import io.pgjobs.JobFilter;
import io.pgjobs.server.ApiTestSupport.Response;
import io.pgjobs.testkit.TestDatabase;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Issue 11, item 4: the job list's filters over finished jobs are served by indexes, text search by a
 * trigram index where the operator created it (none by default: it is off the write path) and by a plain
 * scan where there is none, and a request that times out takes its statement with it in PostgreSQL.
 */
class ListFiltersTest {
  static ApiTestSupport api;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start(b -> b.requestTimeout(Duration.ofSeconds(2)));
    // As an operator who wants fast text search over a long history does (docs/operations.md).
    api.db.execute(CREATE_TEXT_INDEX);
    // 30,000 ordinary finished jobs over the last day, and a few rare ones: enough rows that
    // reading the primary key newest first would be the wrong plan for a filter that few of them
    // match.
    api.db.execute(
        """
        INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
               run_at, created_at, context, errors, finished_at)
        SELECT %s, 'common', 'default', jsonb_build_object('to', 'user' || g || '@example.com'),
               50, 'succeeded', 1, 3, t, t, 'bulk ' || g, '[]', t
          FROM (SELECT g, now() - g * interval '2 seconds' AS t FROM generate_series(1, 30000) AS g) AS s""".formatted(TestDatabase.uuidV7("t")),
        """
        INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
               run_at, created_at, context, errors, finished_at)
        SELECT %s, 'rare_kind', 'rare-queue', jsonb_build_object('code', 'Needle-' || g || ' 50%%_off'),
               50, 'failed', 3, 3, t, t, NULL, '[]', t
          FROM (SELECT g, now() - interval '3 days' - g * interval '1 minute' AS t
                  FROM generate_series(1, 5) AS g) AS s""".formatted(TestDatabase.uuidV7("t")),
        "VACUUM ANALYZE pgjobs.finished_jobs");
  }

  /**
   * The statement docs/operations.md gives, for pg_trgm where the migration put it (the pgjobs schema):
   * the history is partitioned, so the index is built partition by partition.
   */
  static final String CREATE_TEXT_INDEX = "SELECT pgjobs.create_history_text_index()";

  /**
   * Index scans of a partitioned index of the history: the sum over its partitions' indexes (the
   * partitioned index itself has no statistics).
   */
  static String indexScansSql(String index) {
    return "SELECT coalesce(sum(s.idx_scan), 0) FROM pg_stat_user_indexes AS s"
        + " WHERE s.indexrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass('pgjobs."
        + index + "'))";
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  @Test
  void eachFilterReadsItsIndexAndFindsTheRareJobs() {
    long typeBefore = indexScans("finished_jobs_type_id_idx");
    long queueBefore = indexScans("finished_jobs_queue_id_idx");
    long textBefore = indexScans("finished_jobs_text_trgm_idx");

    assertRare(list("type=rare_kind"));
    assertRare(list("queue=rare-queue"));
    assertRare(list("created_before=" + Instant.now().minus(Duration.ofDays(2))));
    assertRare(list("text=" + URLEncoder.encode("needle-", StandardCharsets.UTF_8)));
    // Matched literally, case-insensitively: % and _ are no wildcards.
    assertRare(list("text=" + URLEncoder.encode("50%_OFF", StandardCharsets.UTF_8)));
    assertThat(list("text=" + URLEncoder.encode("50%_of_", StandardCharsets.UTF_8)))
        .isEmpty();
    // A text most jobs contain: the newest matches, found among the newest jobs without the index.
    List<String> expected = new ArrayList<>();
    try (Connection c = api.db.dataSource().getConnection();
        Statement st = c.createStatement();
        var rs = st.executeQuery(
            "SELECT id FROM pgjobs.finished_jobs WHERE payload::text ILIKE '%example.com%'"
                + " ORDER BY id DESC LIMIT 10")) {
      while (rs.next()) {
        expected.add(rs.getString(1));
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
    assertThat(list("text=EXAMPLE.com"))
        .extracting(j -> j.path("id").asString())
        .containsExactlyElementsOf(expected);

    // The server's backend reports its index use to the statistics system when it goes idle (up to
    // 10 s).
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(200))
        .untilAsserted(() -> {
          assertThat(indexScans("finished_jobs_type_id_idx"))
              .as("type index")
              .isGreaterThan(typeBefore);
          assertThat(indexScans("finished_jobs_queue_id_idx"))
              .as("queue index")
              .isGreaterThan(queueBefore);
          assertThat(indexScans("finished_jobs_text_trgm_idx"))
              .as("trigram index")
              .isGreaterThan(textBefore);
        });
  }

  /**
   * created_after and created_before compare the time in the job's id (UUIDv7: when the enqueue was
   * called), to the millisecond the id holds and exclusive at both ends: a job of the bound's millisecond
   * is neither before nor after it. created_at (the enqueue transaction's start, shown with the job) is
   * not what they read.
   */
  @Test
  void creationTimeBoundsAreExclusiveAndReadTheMillisecondInTheJobsId() {
    Instant t = Instant.parse("2026-03-01T12:00:00.500Z");
    long ms = t.toEpochMilli();
    // One job in each of the milliseconds t - 1, t and t + 1; created_at a day off, to show it is
    // not read.
    for (long m : List.of(ms - 1, ms, ms + 1)) {
      api.db.execute("""
          INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                 run_at, created_at, context, errors, finished_at)
          VALUES ('%s'::uuid, 'bounded', 'default', '{}', 50, 'succeeded', 1, 3, now(),
                  now() - interval '1 day', 'ms %d', '[]', now())""".formatted(
              String.format("%012x-7abc-8def-0123456789ab", m).replaceFirst("^(.{8})", "$1-"), m));
    }
    java.util.function.Function<String, List<String>> contexts =
        q -> list("type=bounded&" + q).stream()
            .map(j -> j.path("context").asString())
            .toList();
    assertThat(contexts.apply("created_before=" + t)).containsExactly("ms " + (ms - 1));
    assertThat(contexts.apply("created_after=" + t)).containsExactly("ms " + (ms + 1));
    assertThat(contexts.apply(
            "created_after=" + t.minusMillis(1) + "&created_before=" + t.plusMillis(1)))
        .containsExactly("ms " + ms);
    // A bound inside a millisecond: that millisecond is neither before nor after it (ids hold no
    // finer time).
    assertThat(contexts.apply("created_before=" + t.plusNanos(300_000)))
        .containsExactly("ms " + (ms - 1));
    assertThat(contexts.apply("created_after=" + t.plusNanos(300_000)))
        .containsExactly("ms " + (ms + 1));
    // created_at, a day earlier, is not what they compare.
    assertThat(contexts.apply("created_before=" + t.minus(Duration.ofHours(12))))
        .isEmpty();
    api.db.execute(
        "DELETE FROM pgjobs.finished_jobs WHERE type = 'bounded'"); // the other tests' rows
  }

  @Test
  void scheduledSelectsQueuedJobsNotDueYet() {
    UUID later = api.client
        .enqueue(
            TestTypes.TASK,
            new TestTypes.Task("later"),
            io.pgjobs.EnqueueOptions.builder()
                .queue("sched-test")
                .delay(Duration.ofHours(1))
                .build())
        .job()
        .id();
    UUID now = api.client
        .enqueue(
            TestTypes.TASK,
            new TestTypes.Task("now"),
            io.pgjobs.EnqueueOptions.builder().queue("sched-test").build())
        .job()
        .id();
    assertThat(list("queue=sched-test&scheduled=true"))
        .extracting(j -> j.path("id").asString())
        .containsExactly(later.toString());
    assertThat(list("queue=sched-test&scheduled=false"))
        .extracting(j -> j.path("id").asString())
        .containsExactly(now.toString());
    Response bad = api.get("/jobs?scheduled=maybe");
    assertThat(bad.status()).isEqualTo(400);
    assertThat(bad.body()).contains("scheduled");
  }

  @Test
  void aRequestThatTimesOutHasItsStatementCancelledInPostgresql() throws Exception {
    // Another session holds finished_jobs: the list's statement waits on the lock for as long as it
    // runs.
    try (Connection locker = DriverManager.getConnection(api.db.jdbcUrl());
        Statement st = locker.createStatement()) {
      locker.setAutoCommit(false);
      st.execute("LOCK TABLE pgjobs.finished_jobs IN ACCESS EXCLUSIVE MODE");
      Response r = api.get("/jobs?type=rare_kind&limit=5");
      assertThat(r.status()).isEqualTo(504);
      assertThat(r.json().path("type").asString()).endsWith("request-timeout");
      // Still holding the lock: a list statement still waiting would be the one the 504 left
      // behind.
      await()
          .atMost(Duration.ofSeconds(5))
          .pollInterval(Duration.ofMillis(100))
          .untilAsserted(() -> assertThat(api.db.queryLong("""
              SELECT count(*) FROM pg_stat_activity
               WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
                 AND query LIKE '%finished_jobs%ORDER BY id DESC%'""")).isZero());
      locker.rollback();
    }
    assertRare(list("type=rare_kind"));
  }

  @Test
  void aNewSchemaHasNoTrigramIndexOnTheWritePathAndSearchUsesOneOnceTheOperatorCreatesIt()
      throws Exception {
    try (TestDatabase db = TestDatabase.create();
        var pool = db.newDataSource(2)) {
      JobClient client = JobClient.builder(pool).build();
      client.migrate();
      assertThat(db.queryLong("""
          SELECT count(*) FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
           WHERE e.extname = 'pg_trgm' AND n.nspname = 'pgjobs'""")).as("the migration installs pg_trgm").isEqualTo(1);
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM pg_indexes WHERE schemaname = 'pgjobs' AND indexname = 'finished_jobs_text_trgm_idx'"))
          .as("no trigram index paid by every finished job unless asked for")
          .isZero();
      db.execute("""
          INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                 run_at, created_at, context, errors, finished_at)
          SELECT gen_random_uuid(), 'x', 'default', jsonb_build_object('n', g), 50, 'succeeded', 1, 3, now(), now(),
                 CASE WHEN g = 1 THEN 'the NEEDLE' END, '[]', now()
            FROM generate_series(1, 6000) AS g""", "VACUUM ANALYZE pgjobs.finished_jobs");
      // One match does not fill a page, so the search goes past the probe of the newest 5,000: the
      // table.
      assertThat(client.list(JobFilter.builder().text("needle").build()).jobs()).hasSize(1);

      db.execute(CREATE_TEXT_INDEX);
      long before = db.queryLong(indexScansSql("finished_jobs_text_trgm_idx"));
      // A client started now (an API restarted) uses it at once; a running one within 30 s.
      client = JobClient.builder(pool).build();
      assertThat(client.list(JobFilter.builder().text("needle").build()).jobs()).hasSize(1);
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(200))
          .untilAsserted(
              () -> assertThat(db.queryLong(indexScansSql("finished_jobs_text_trgm_idx")))
                  .isGreaterThan(before));
    }
  }

  @Test
  void migratesAndSearchesWhereTheRoleMayNotCreatePgTrgm() throws Exception {
    String role = "pgjobs_plain_" + UUID.randomUUID().toString().substring(0, 8);
    try (TestDatabase db = TestDatabase.create()) {
      db.execute(
          "CREATE ROLE " + role + " LOGIN",
          "REVOKE CREATE ON DATABASE " + db.name() + " FROM PUBLIC",
          "CREATE SCHEMA pgjobs AUTHORIZATION " + role);
      String url = db.jdbcUrl().replace("user=postgres", "user=" + role);
      var config = new com.zaxxer.hikari.HikariConfig();
      config.setJdbcUrl(url);
      config.setMaximumPoolSize(2);
      try (var pool = new com.zaxxer.hikari.HikariDataSource(config)) {
        JobClient client = JobClient.builder(pool).build();
        client.migrate();
        assertThat(db.queryLong("SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'"))
            .isZero();
        assertThat(db.queryLong("""
            SELECT count(*) FROM pg_indexes WHERE schemaname = 'pgjobs' AND indexname IN
              ('finished_jobs_type_id_idx', 'finished_jobs_queue_id_idx', 'finished_jobs_id_idx')""")).isEqualTo(3);
        assertThat(
                db.queryLong(
                    "SELECT count(*) FROM pg_indexes WHERE schemaname = 'pgjobs' AND indexname = 'finished_jobs_text_trgm_idx'"))
            .isZero();
        db.execute("""
            INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts,
                   run_at, created_at, context, errors, finished_at)
            VALUES (gen_random_uuid(), 'x', 'default', '{"a": "Hay"}', 50, 'succeeded', 1, 3, now(), now(),
                    'the NEEDLE', '[]', now()),
                   (gen_random_uuid(), 'x', 'default', '{"a": "hay"}', 50, 'succeeded', 1, 3, now(), now(),
                    NULL, '[]', now())""");
        assertThat(client.list(JobFilter.builder().text("needle").build()).jobs())
            .hasSize(1);
        assertThat(client.list(JobFilter.builder().text("HAY").build()).jobs()).hasSize(2);
      } finally {
        // The role's objects in this database go first: a closed test database is dropped only when
        // the JVM exits, and a role that owns objects cannot be dropped.
        db.execute("DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '" + role
            + "') THEN EXECUTE 'DROP OWNED BY " + role + "'; END IF; END $$");
      }
    } finally {
      try (Connection admin = DriverManager.getConnection(TestDatabase.DEFAULT_ADMIN_URL);
          Statement st = admin.createStatement()) {
        st.execute("DROP ROLE IF EXISTS " + role);
      }
    }
  }

  private static void assertRare(List<JsonNode> jobs) {
    assertThat(jobs).hasSize(5);
    assertThat(jobs).allSatisfy(j -> assertThat(j.path("type").asString()).isEqualTo("rare_kind"));
    List<String> ids = jobs.stream().map(j -> j.path("id").asString()).toList();
    assertThat(ids).isSortedAccordingTo(java.util.Comparator.reverseOrder());
  }

  private static List<JsonNode> list(String query) {
    Response r = api.get("/jobs?limit=10&" + query);
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    List<JsonNode> jobs = new ArrayList<>();
    r.json().path("jobs").forEach(jobs::add);
    return jobs;
  }

  private static long indexScans(String index) {
    return api.db.queryLong(indexScansSql(index));
  }
}
