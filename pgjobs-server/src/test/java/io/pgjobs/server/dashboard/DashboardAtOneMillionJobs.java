package io.pgjobs.server.dashboard;

import io.pgjobs.JobClient;
import io.pgjobs.server.ApiServer;
import io.pgjobs.testkit.TestDatabase;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Records how fast the dashboard's data loads with a million jobs in the tables (not a test: a
 * program that prints figures, run by hand; see docs/bench-journal/dashboard-1m-jobs.md).
 *
 * <p>Two shapes in a throw-away database: (A) 1,000,000 finished jobs spread over the retention day
 * plus 10,000 waiting ones, the steady state of a busy system; (B) 1,000,000 waiting jobs, a backlog.
 * Rows are written with INSERT ... SELECT generate_series. For each shape it prints EXPLAIN ANALYZE of
 * the overview's statements, then times the overview's HTTP requests against a real ApiServer
 * (median of several runs) and the overview page in headless Chromium (until its data has arrived).
 *
 * <pre>
 * ./mvnw -q -pl pgjobs-server -am test-compile dependency:build-classpath \
 *     -Dmdep.outputFile=/tmp/cp.txt -Dmdep.includeScope=test
 * java -cp pgjobs-server/target/test-classes:pgjobs-server/target/classes:$(cat /tmp/cp.txt) \
 *     io.pgjobs.server.dashboard.DashboardAtOneMillionJobs [--filters] [target/dashboard-1m.md]
 * </pre>
 *
 * <p>With {@code --filters}: shape A only, and every filter of the job list timed with its indexes (the three
 * filter indexes and the optional trigram index) and again without them, with the indexes' sizes, build
 * times and what they cost an insert.
 */
public final class DashboardAtOneMillionJobs {
  private static final int RUNS = 7;
  private final StringBuilder out = new StringBuilder();
  private final TestDatabase db;
  private final JobClient client;
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private DashboardAtOneMillionJobs(TestDatabase db, JobClient client) {
    this.db = db;
    this.client = client;
  }

  public static void main(String[] args) throws Exception {
    boolean filtersOnly = Arrays.asList(args).contains("--filters");
    List<String> rest = Arrays.stream(args).filter(a -> !a.equals("--filters")).toList();
    Path report = Path.of(
        !rest.isEmpty()
            ? rest.getFirst()
            : filtersOnly ? "target/list-filters-1m.md" : "target/dashboard-1m.md");
    try (TestDatabase db = TestDatabase.create()) {
      JobClient client =
          JobClient.builder(db.dataSource()).knownTypes(DashboardFixture.TASK).build();
      client.migrate();
      DashboardAtOneMillionJobs bench = new DashboardAtOneMillionJobs(db, client);
      if (filtersOnly) {
        bench.filters();
      } else {
        bench.run();
      }
      Files.createDirectories(report.toAbsolutePath().getParent());
      Files.writeString(report, bench.out);
      System.out.println(bench.out);
      System.out.println("written to " + report.toAbsolutePath());
    }
  }

  private void run() throws Exception {
    line("PostgreSQL: " + query("SELECT version()").getFirst());
    line("CPU cores: " + Runtime.getRuntime().availableProcessors() + ", JVM " + Runtime.version());
    line("");

    line("## Shape A: 1,000,000 finished jobs (24 h) + 10,000 waiting");
    line("");
    long t0 = System.nanoTime();
    insertFinished(1_000_000);
    insertWaiting(10_000);
    line("Rows written in " + ms(System.nanoTime() - t0)
        + " ms (INSERT ... SELECT generate_series, then VACUUM ANALYZE).");
    line("");
    measure();

    line("## Shape B: 1,000,000 waiting jobs (a backlog), no finished ones");
    line("");
    db.execute("TRUNCATE pgjobs.finished_jobs", "TRUNCATE pgjobs.jobs");
    t0 = System.nanoTime();
    insertWaiting(1_000_000);
    line("Rows written in " + ms(System.nanoTime() - t0) + " ms.");
    line("");
    measure();
  }

  // ---------------------------------------------------------------- list filters (--filters)

  private static final List<String> FILTER_INDEXES = List.of(
      "finished_jobs_type_id_idx", "finished_jobs_queue_id_idx", "finished_jobs_text_trgm_idx");

  /** Shape A, then each filter of {@code GET /jobs} with and without its indexes, and what they cost. */
  private void filters() throws Exception {
    line("PostgreSQL: " + query("SELECT version()").getFirst());
    line("CPU cores: " + Runtime.getRuntime().availableProcessors() + ", JVM " + Runtime.version());
    line("pg_trgm installed: "
        + query("SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'").getFirst());
    line("");
    long t0 = System.nanoTime();
    insertFinished(1_000_000);
    insertWaiting(10_000);
    // A rare type and queue: 100 jobs spread over the day.
    db.execute(
        "UPDATE pgjobs.finished_jobs SET type = 'report_export', queue = 'reports'"
            + " WHERE (payload->>'n')::int % 10000 = 17",
        "VACUUM ANALYZE pgjobs.finished_jobs");
    line("Shape A written in " + ms(System.nanoTime() - t0) + " ms.");
    // The trigram index is the operator's to create (docs/operations.md); measured with it here.
    String trgm = trgmSchema();
    if (!trgm.isEmpty()) {
      db.execute(createTextIndex(trgm));
    }
    line("");
    line("### Index sizes at 1,000,000 finished jobs");
    line("");
    line("| index | size |");
    line("|---|---:|");
    for (String row : query("""
        SELECT indexrelname || ' | ' || pg_size_pretty(pg_relation_size(indexrelid))
          FROM pg_stat_user_indexes WHERE relname = 'finished_jobs' ORDER BY indexrelname""")) {
      line("| " + row + " |");
    }
    line("| table (heap) | "
        + query("SELECT pg_size_pretty(pg_relation_size('pgjobs.finished_jobs'))")
            .getFirst() + " |");
    line("");
    java.time.Instant now = java.time.Instant.now();
    List<String[]> cases = List.of(
        new String[] {"`state=failed` (5 %)", "state=failed"},
        new String[] {"`state=cancelled` (1 %)", "state=cancelled"},
        new String[] {"`type=send_email` (25 %)", "type=send_email"},
        new String[] {"`type=report_export` (a rare type: 100 jobs)", "type=report_export"},
        new String[] {"`queue=reports` (a rare queue: 100 jobs)", "queue=reports"},
        new String[] {
          "`created_before=` 23 h ago (the oldest 4 %)",
          "created_before=" + now.minusSeconds(23 * 3600)
        },
        new String[] {
          "`created_after=` + `created_before=`: 5 minutes 12 h ago (0.3 %)",
          "created_after=" + now.minusSeconds(12 * 3600 + 300) + "&created_before="
              + now.minusSeconds(12 * 3600)
        },
        new String[] {"`text=user4242@` (a rare text: 1 job)", "text=user4242%40"},
        new String[] {"`text=nothing-like-it` (no job)", "text=nothing-like-it"},
        new String[] {"`text=example.com` (every job)", "text=example.com"},
        new String[] {"`text=zq` (2 characters: no trigram; no job)", "text=zq"});
    ApiServer server =
        ApiServer.builder(client).host("127.0.0.1").port(0).build().start();
    try {
      String base = "http://127.0.0.1:" + server.port() + "/jobs?limit=50&";
      line("### `GET /jobs?limit=50&…`, median of " + RUNS + " runs (ms), with the filter indexes");
      line("");
      line("| filter | median | min | max |");
      line("|---|---:|---:|---:|");
      for (String[] c : cases) {
        time(c[0], () -> get(base + c[1]));
      }
      line("");
      line("### The same without the filter indexes (text by ILIKE over the table)");
      line("");
      for (String index : FILTER_INDEXES) {
        db.execute("DROP INDEX IF EXISTS pgjobs." + index);
      }
      db.execute("ANALYZE pgjobs.finished_jobs");
      line("| filter | median | min | max |");
      line("|---|---:|---:|---:|");
      for (String[] c : cases) {
        time(c[0], () -> get(base + c[1]));
      }
      line("");
    } finally {
      server.close();
    }
    line("### What the indexes cost");
    line("");
    long without = insertCost();
    line("- `INSERT … SELECT` of 100,000 more finished jobs without the filter indexes: " + without
        + " ms");
    String trgmSchema = trgmSchema();
    List<String> creates = new ArrayList<>(List.of(
        "CREATE INDEX finished_jobs_type_id_idx ON pgjobs.finished_jobs (type, id)",
        "CREATE INDEX finished_jobs_queue_id_idx ON pgjobs.finished_jobs (queue, id)"));
    if (!trgmSchema.isEmpty()) {
      creates.add(createTextIndex(trgmSchema));
    }
    for (String create : creates) {
      long t = System.nanoTime();
      db.execute(create);
      line("- `" + create.replace("pgjobs.", "") + "` at 1,000,000 rows: "
          + ms(System.nanoTime() - t) + " ms");
    }
    long with = insertCost();
    line("- the same 100,000 with them: " + with + " ms");
    if (!trgmSchema.isEmpty()) {
      db.execute("DROP INDEX pgjobs.finished_jobs_text_trgm_idx");
      line("- the same 100,000 with the three B-tree indexes only (no trigram index): "
          + insertCost() + " ms");
    }
    line("");
  }

  /** The schema pg_trgm is installed in, or "" without it. */
  private String trgmSchema() {
    return query("""
        SELECT coalesce((SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                          WHERE e.extname = 'pg_trgm'), '')""").getFirst();
  }

  /** The optional trigram index of the list's text search (the operator's to create). */
  private static String createTextIndex(String trgmSchema) {
    return "CREATE INDEX IF NOT EXISTS finished_jobs_text_trgm_idx ON pgjobs.finished_jobs USING gin "
        + "((payload::text || coalesce(E'\\n' || context, '')) " + trgmSchema + ".gin_trgm_ops)";
  }

  /** Times an INSERT … SELECT of 100,000 finished jobs (older than the others), then deletes them again. */
  private long insertCost() {
    long t = System.nanoTime();
    db.execute("""
        INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts, run_at,
               created_at, attempted_at, locked_by, context, errors, output, finished_at)
        SELECT %s, %s, %s, jsonb_build_object('to', 'user' || g || '@example.com', 'n', g), 50, 'succeeded',
               1, 3, t, t, t, 'worker-1', 'bench ' || g, '[]'::jsonb, '{"ok": true}'::jsonb, t + interval '1 second'
          FROM (SELECT g, now() - interval '2 days' - g * interval '1 millisecond' AS t
                  FROM generate_series(2000001, 2100000) AS g) AS s
        """.formatted(V7, TYPES, QUEUES));
    long took = ms(System.nanoTime() - t);
    db.execute(
        "DELETE FROM pgjobs.finished_jobs WHERE created_at < now() - interval '36 hours'",
        "VACUUM pgjobs.finished_jobs");
    return took;
  }

  // ---------------------------------------------------------------- data

  /** UUIDv7 of a timestamp, so ids are time-ordered like the ones pgjobs writes. */
  private static final String V7 =
      "(lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8'"
          + " || substr(md5(g::text || 'x'), 1, 15))::uuid";

  private static final String TYPES =
      "(ARRAY['send_email', 'resize_image', 'summarize_text', 'webhook_delivery'])[1 + g % 4]";
  private static final String QUEUES =
      "(ARRAY['default', 'emails', 'images', 'webhooks'])[1 + (g / 7) % 4]";

  /** 94 % succeeded, 5 % failed (three error messages), 1 % cancelled, finished over the last 24 h. */
  private void insertFinished(int n) {
    db.execute(
        "SET session_replication_role = replica", // no notify triggers for a bulk load
        """
        INSERT INTO pgjobs.finished_jobs (id, type, queue, payload, priority, state, attempts, max_attempts, run_at,
               created_at, attempted_at, locked_by, context, errors, output, finished_at)
        SELECT %s, %s, %s, jsonb_build_object('to', 'user' || g || '@example.com', 'n', g), 50,
               CASE WHEN g %% 100 < 94 THEN 'succeeded' WHEN g %% 100 < 99 THEN 'failed' ELSE 'cancelled' END,
               1, 3, t, t, t, 'worker-1', 'bench ' || g,
               CASE WHEN g %% 100 BETWEEN 94 AND 98 THEN jsonb_build_array(jsonb_build_object('attempt', 3,
                   'at', '2026-01-01T00:00:00Z', 'kind', 'error', 'errorClass', 'java.io.IOException',
                   'message', 'connection refused ' || (g %% 3), 'stackHead', 'at x', 'worker', 'worker-1'))
                    ELSE '[]'::jsonb END,
               CASE WHEN g %% 100 < 94 THEN '{"ok": true}'::jsonb END,
               t + interval '1 second'
          FROM (SELECT g, now() - (g * (86400000.0 / %d)) * interval '1 millisecond' AS t
                  FROM generate_series(1, %d) AS g) AS s
        """.formatted(V7, TYPES, QUEUES, n, n),
        "SET session_replication_role = origin",
        "VACUUM ANALYZE pgjobs.finished_jobs");
  }

  /** Waiting jobs: 90 % due (created over the last n × 10 ms), 10 % scheduled an hour ahead. */
  private void insertWaiting(int n) {
    db.execute(
        "SET session_replication_role = replica",
        """
        INSERT INTO pgjobs.jobs (id, type, queue, payload, priority, state, attempts, max_attempts, run_at,
               created_at, context)
        SELECT %s, %s, %s, jsonb_build_object('to', 'user' || g || '@example.com', 'n', g), 50, 'queued', 0, 3,
               CASE WHEN g %% 10 = 0 THEN now() + interval '1 hour' ELSE t END, t, 'bench ' || g
          FROM (SELECT g, now() - g * interval '10 milliseconds' AS t FROM generate_series(1, %d) AS g) AS s
        """.formatted(V7, TYPES, QUEUES, n),
        "SET session_replication_role = origin",
        "VACUUM ANALYZE pgjobs.jobs");
  }

  // ---------------------------------------------------------------- measuring

  private void measure() throws Exception {
    // A registered worker (on a queue of its own), so /workers has a row to count running jobs for.
    try (io.pgjobs.worker.JobWorker worker = io.pgjobs.worker.JobWorker.builder(db.dataSource())
        .register(DashboardFixture.TASK, (ctx, task) -> null)
        .queue("bench-idle", 1)
        .build()
        .start()) {
      measureWithWorker();
    }
  }

  private void measureWithWorker() throws Exception {
    line("### EXPLAIN ANALYZE");
    line("");
    explain(
        "queue overview (`AdminSql.QUEUE_OVERVIEW`, behind `GET /queues` and the event stream's snapshot)",
        sql("io.pgjobs.store.AdminSql", "QUEUE_OVERVIEW"));
    explain(
        "throughput, last hour (`AdminSql.STATS_PER_MINUTE`, behind `GET /stats?window=1h`)",
        sql("io.pgjobs.store.AdminSql", "STATS_PER_MINUTE").replace("?::bigint", "3600000"));
    explain(
        "workers (`WorkerSql.LIST`, behind `GET /workers`)",
        sql("io.pgjobs.store.WorkerSql", "LIST"));
    explain(
        "first page of the jobs table (`GET /jobs?limit=50`, as `AdminStore.list` builds it)", """
        SELECT * FROM (
          (SELECT id, created_at FROM pgjobs.jobs ORDER BY id DESC LIMIT 51)
          UNION ALL
          (SELECT id, created_at FROM pgjobs.finished_jobs ORDER BY id DESC LIMIT 51)) AS page
        ORDER BY id DESC LIMIT 51""");

    line("### HTTP, median of " + RUNS + " runs (ms)");
    line("");
    line(
        "A \"fresh server\" run starts a new ApiServer first, so the queue overview is computed, not served from");
    line("the server's cache.");
    line("");
    line("| request | median | min | max |");
    line("|---|---:|---:|---:|");
    time("`GET /queues` on a fresh server (computed)", fresh(base -> get(base + "/queues")));
    time(
        "overview on a fresh server: `/queues` + `/stats?window=1h` + `/workers` in parallel, as the page loads them",
        fresh(base -> CompletableFuture.allOf(
                CompletableFuture.runAsync(() -> get(base + "/queues")),
                CompletableFuture.runAsync(() -> get(base + "/stats?window=1h")),
                CompletableFuture.runAsync(() -> get(base + "/workers")))
            .join()));
    ApiServer server =
        ApiServer.builder(client).host("127.0.0.1").port(0).build().start();
    try {
      String base = "http://127.0.0.1:" + server.port();
      get(base + "/queues");
      time("`GET /queues` again within its cache time", () -> get(base + "/queues"));
      time("`GET /stats?window=1h`", () -> get(base + "/stats?window=1h"));
      time("`GET /workers`", () -> get(base + "/workers"));
      time("`GET /jobs?limit=50` (first page)", () -> get(base + "/jobs?limit=50"));
      time("`GET /jobs?state=failed&limit=50`", () -> get(base + "/jobs?state=failed&limit=50"));
      time(
          "`GET /jobs?text=user4242@&limit=50` (a rare text)",
          () -> get(base + "/jobs?text=user4242@&limit=50"));
      time(
          "`GET /dead-letters` (reads up to 10,000 failed jobs)",
          () -> get(base + "/dead-letters"));
    } finally {
      server.close();
    }
    line("");
    browser();
  }

  /** Runs {@code body} against a new server (an empty overview cache), started and stopped around it. */
  private void withFreshServer(java.util.function.Consumer<String> body) {
    ApiServer server =
        ApiServer.builder(client).host("127.0.0.1").port(0).build().start();
    try {
      body.accept("http://127.0.0.1:" + server.port());
    } finally {
      server.close();
    }
  }

  /**
   * The overview page in headless Chromium: when the last of its three API responses had arrived, after
   * navigation start (Resource Timing). Each round starts a fresh server and loads the page twice: first
   * with an empty overview cache (and a server that has not served the page's files before), then again.
   */
  private void browser() {
    try (DashboardBrowser browser = new DashboardBrowser()) {
      List<Long> first = new ArrayList<>();
      List<Long> again = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        withFreshServer(base -> {
          first.add(overviewLoad(browser, base));
          again.add(overviewLoad(browser, base));
        });
      }
      first.sort(null);
      again.sort(null);
      line(
          "Overview page in headless Chromium, from navigation start until the last of `/queues`, `/stats` and");
      line("`/workers` had answered, 3 rounds on a fresh server each: first load median **"
          + first.get(1) + " ms** " + first + ", second load median **" + again.get(1) + " ms** "
          + again + ".");
      line("");
      browser.assertNoConsoleErrors();
    }
  }

  private static long overviewLoad(DashboardBrowser browser, String base) {
    browser.driver.get("about:blank");
    browser.open(base + "/");
    // Resource Timing lists a request once its response has fully arrived; the first of each
    // counts.
    Number end = browser.waitFor(d -> (Number) browser.script("""
        const first = {};
        for (const e of performance.getEntriesByType('resource')) {
          const m = e.name.match(/\\/(queues|stats|workers)(\\?|$)/);
          if (m && !(m[1] in first)) first[m[1]] = e.responseEnd;
        }
        return Object.keys(first).length === 3 ? Math.max(...Object.values(first)) : null;"""));
    return end.longValue();
  }

  private void explain(String title, String sql) {
    line("**" + title + "**");
    line("");
    line("```");
    for (String row : query("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql)) {
      line(row);
    }
    line("```");
    line("");
  }

  private interface Action {
    void run() throws Exception;
  }

  /** What {@link #time} measures: the whole action, or only the part it reports (nanoseconds). */
  private interface Timed {
    long nanos() throws Exception;
  }

  /** Runs {@code action} once to warm up, then RUNS times timed. */
  private void time(String what, Action action) throws Exception {
    time(what, (Timed) () -> {
      long t = System.nanoTime();
      action.run();
      return System.nanoTime() - t;
    });
  }

  private void time(String what, Timed action) throws Exception {
    action.nanos();
    long[] ms = new long[RUNS];
    for (int i = 0; i < RUNS; i++) {
      ms[i] = action.nanos() / 1_000_000;
    }
    Arrays.sort(ms);
    line("| " + what + " | " + ms[RUNS / 2] + " | " + ms[0] + " | " + ms[RUNS - 1] + " |");
  }

  /** Times {@code body} against a server started just before (so its overview cache is empty). */
  private Timed fresh(java.util.function.Consumer<String> body) {
    return () -> {
      ApiServer server =
          ApiServer.builder(client).host("127.0.0.1").port(0).build().start();
      try {
        get("http://127.0.0.1:" + server.port()
            + "/health/live"); // the connection and Jetty are ready
        long t = System.nanoTime();
        body.accept("http://127.0.0.1:" + server.port());
        return System.nanoTime() - t;
      } finally {
        server.close();
      }
    };
  }

  private void get(String url) {
    send(HttpRequest.newBuilder(URI.create(url)).GET().build());
  }

  private void send(HttpRequest request) {
    try {
      HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        throw new IllegalStateException(
            request.uri() + " answered " + r.statusCode() + ": " + r.body());
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private List<String> query(String sql) {
    List<String> rows = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      while (rs.next()) {
        rows.add(rs.getString(1));
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e.getMessage() + "\n" + sql, e);
    }
    return rows;
  }

  /** A statement of one of core's SQL classes, with the schema filled in. */
  private static String sql(String className, String name) {
    try {
      Field f = Class.forName(className).getDeclaredField(name);
      f.setAccessible(true);
      return ((String) f.get(null)).replace("{schema}", "pgjobs");
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  private static long ms(long nanos) {
    return nanos / 1_000_000;
  }

  private void line(String s) {
    out.append(s).append('\n');
    System.out.println(s);
  }
}
