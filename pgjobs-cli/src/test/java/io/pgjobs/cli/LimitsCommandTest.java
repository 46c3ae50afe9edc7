package io.pgjobs.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.QueueLimits;
import io.pgjobs.testkit.TestDatabase;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** {@code pgjobs limits ...} in-process against a real database: output, effects and exit codes. */
class LimitsCommandTest {
  static TestDatabase db;
  static JobClient client;
  static Map<String, String> env;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create();
    client = JobClient.builder(db.dataSource()).build();
    env = Map.of("DATABASE_URL", db.jdbcUrl());
    assertThat(run("migrate").exitCode()).isZero();
  }

  @AfterAll
  static void dropDatabase() {
    if (db != null) {
      db.close();
    }
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE pgjobs.jobs, pgjobs.finished_jobs, pgjobs.job_keys");
    db.execute("DELETE FROM pgjobs.queue_rates");
    db.execute("DELETE FROM pgjobs.queues");
  }

  static CommandRun run(String... args) {
    return CommandRun.of(env, args);
  }

  /** Queues with any limit or partition rule stored. */
  private static long limited() {
    return db.queryLong("SELECT count(*) FROM pgjobs.queues WHERE global_concurrency IS NOT NULL"
        + " OR rate_limit IS NOT NULL OR partition_by IS NOT NULL"
        + " OR partition_concurrency IS NOT NULL OR partition_rate_limit IS NOT NULL");
  }

  private static CommandRun ok(String... args) {
    CommandRun r = run(args);
    assertThat(r.exitCode()).as(r.toString()).isZero();
    return r;
  }

  private static void assertUsage(CommandRun r, String... messages) {
    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.err()).as(r.toString()).contains(messages);
    assertThat(r.err()).doesNotContain("\tat ");
  }

  @Test
  void setShowListAndClearLimits() {
    CommandRun set = ok(
        "limits",
        "set",
        "webhooks",
        "--global-concurrency",
        "50",
        "--rate",
        "100/1m,burst=20",
        "--partition-by",
        "input.host",
        "--partition-concurrency",
        "2",
        "--partition-rate",
        "5/s");
    assertThat(set.out())
        .contains("limits of queue webhooks set: at most 50 running, 100/1m (burst 20);"
            + " per input.host: 2 running, 5/1s (burst 2)");
    assertThat(client.limits("webhooks"))
        .contains(QueueLimits.builder()
            .globalConcurrency(50)
            .rate(100, Duration.ofMinutes(1), 20)
            .partitionBy("input.host")
            .partitionConcurrency(2)
            .partitionRate(5, Duration.ofSeconds(1))
            .build());
    ok("limits", "set", "reports", "--rate", "10/500ms");
    assertThat(client.limits("reports"))
        .contains(QueueLimits.builder().rate(10, Duration.ofMillis(500)).build());

    // Jobs waiting in two partitions: show lists them, busiest first.
    for (int i = 0; i < 3; i++) {
      client.enqueue(
          "webhook_delivery",
          Map.of("host", "a.example"),
          EnqueueOptions.builder().queue("webhooks").build());
    }
    client.enqueue(
        "webhook_delivery",
        Map.of("host", "b.example"),
        EnqueueOptions.builder().queue("webhooks").build());

    CommandRun show = ok("limits", "show", "webhooks");
    assertThat(show.out())
        .contains("queue:       webhooks")
        .contains("limits:      at most 50 running")
        .contains("set by:      api")
        .contains("running:     0 of 50")
        .contains("waiting:     4")
        .contains("partitions (busiest 2):");
    assertThat(show.out()).containsPattern("(?m)^  a\\.example +0/2 +3 ");
    assertThat(show.out().indexOf("a.example")).isLessThan(show.out().indexOf("b.example"));

    JsonNode json =
        JobFormat.JSON.readTree(ok("limits", "show", "webhooks", "--json").out());
    assertThat(json.path("queue").asString()).isEqualTo("webhooks");
    assertThat(json.path("limits").path("global_concurrency").asInt()).isEqualTo(50);
    assertThat(json.path("limits").path("rate").path("period_ms").asLong()).isEqualTo(60_000);
    assertThat(json.path("limits").path("rate").path("burst").asInt()).isEqualTo(20);
    assertThat(json.path("limits").path("partition_by").asString()).isEqualTo("input.host");
    assertThat(json.path("waiting").asLong()).isEqualTo(4);
    assertThat(json.path("partitions").get(0).path("partition").asString()).isEqualTo("a.example");

    CommandRun list = ok("limits", "list");
    assertThat(list.out().lines().findFirst().orElseThrow())
        .startsWith("QUEUE")
        .contains("RUNNING", "WAITING", "WAITING FOR", "SET BY", "LIMITS");
    assertThat(list.out()).containsPattern("(?m)^reports +0 +0 +- +api +10/500ms \\(burst 4\\)$");
    assertThat(list.out()).containsPattern("(?m)^webhooks +0/50 +4 +.*api +at most 50 running");
    JsonNode listed = JobFormat.JSON.readTree(ok("limits", "list", "--json").out());
    assertThat(listed.path("queues")).hasSize(2);

    assertThat(ok("limits", "clear", "webhooks").out())
        .contains("limits of queue webhooks cleared");
    assertThat(client.limits("webhooks")).isEmpty();
    assertThat(ok("limits", "show", "webhooks").out()).contains("queue webhooks: no limits");
    assertThat(JobFormat.JSON
            .readTree(ok("limits", "show", "webhooks", "--json").out())
            .path("limits")
            .isNull())
        .isTrue();
    ok("limits", "clear", "reports");
    assertThat(ok("limits", "list").out()).contains("no limited queues");
    assertThat(limited()).isZero();
  }

  @Test
  void setReplacesEveryLimit() {
    ok("limits", "set", "q", "--global-concurrency", "5", "--rate", "1/1s");
    ok("limits", "set", "q", "--partition-by", "type", "--partition-concurrency", "1");
    assertThat(client.limits("q"))
        .contains(
            QueueLimits.builder().partitionBy("type").partitionConcurrency(1).build());
  }

  @Test
  void badFlagsExit2SayingWhatIsAllowedAndStoreNothing() {
    ok("limits", "set", "kept", "--global-concurrency", "7");
    QueueLimits kept = client.limits("kept").orElseThrow();

    // Concurrency: zero, negative, absurd, not a number.
    for (String flag : new String[] {"--global-concurrency", "--partition-concurrency"}) {
      String[] rule =
          flag.startsWith("--partition") ? new String[] {"--partition-by", "type"} : new String[0];
      for (String bad : new String[] {"0", "-3", "100001", "99999999999999"}) {
        assertUsage(
            run(concat(new String[] {"limits", "set", "kept", flag, bad}, rule)),
            "invalid " + flag,
            "allowed: 1 to 100000 jobs at once");
      }
      assertUsage(
          run(concat(new String[] {"limits", "set", "kept", flag, "two"}, rule)),
          "invalid " + flag + " 'two': not a whole number; allowed: 1 to 100000");
    }

    // Rates: malformed, zero, absurd, bad period, bad burst.
    for (String flag : new String[] {"--rate", "--partition-rate"}) {
      String[] rule =
          flag.startsWith("--partition") ? new String[] {"--partition-by", "type"} : new String[0];
      String[][] cases = {
        {"100", "write <limit>/<period>[,burst=<n>], like 100/1m"},
        {"100 per minute", "write <limit>/<period>[,burst=<n>]"},
        {"/1s", "write <limit>/<period>[,burst=<n>]"},
        {"100/1m,burst", "write <limit>/<period>[,burst=<n>]"},
        {"100/1m,bursts=3", "write <limit>/<period>[,burst=<n>]"},
        {"x/1s", "the limit 'x' is not a whole number"},
        {"0/1s", "the limit must be 1 to 1000000 starts per period, was 0"},
        {"-5/1s", "the limit must be 1 to 1000000 starts per period, was -5"},
        {"1000001/1s", "the limit must be 1 to 1000000 starts per period, was 1000001"},
        {"5/fortnight", "the period 'fortnight' is not a duration; allowed: 1ms to 24h"},
        {"5/0s", "the period must be whole milliseconds from 1ms to 24h, was 0s"},
        {"5/2d", "the period must be whole milliseconds from 1ms to 24h, was 2d"},
        {"5/1s,burst=0", "the burst must be 1 to 1000000, was 0"},
        {"5/1s,burst=many", "the burst 'many' is not a whole number"},
      };
      for (String[] c : cases) {
        assertUsage(
            run(concat(new String[] {"limits", "set", "kept", flag, c[0]}, rule)),
            "invalid " + flag + " '" + c[0] + "'",
            c[1]);
      }
    }

    // Partition rules.
    for (String bad : new String[] {"host", "input.", "input.a b", "payload.host", "INPUT.host"}) {
      assertUsage(
          run("limits", "set", "kept", "--partition-by", bad, "--partition-concurrency", "2"),
          "invalid --partition-by: must be 'type', 'partition' or 'input.<field>'",
          "was '" + bad + "'");
    }
    // Partition limits without a rule.
    assertUsage(
        run("limits", "set", "kept", "--partition-concurrency", "2"),
        "--partition-concurrency needs --partition-by");
    assertUsage(
        run("limits", "set", "kept", "--partition-rate", "5/1s"),
        "--partition-rate needs --partition-by");
    // Nothing at all, or a bad queue.
    assertUsage(run("limits", "set", "kept"), "no limit given", "pgjobs limits clear kept");
    assertUsage(
        run("limits", "set", "bad queue", "--global-concurrency", "2"),
        "invalid queue name 'bad queue'; allowed: 1 to 255 characters");
    assertUsage(run("limits", "show", "x".repeat(256)), "invalid queue name");
    assertUsage(run("limits", "clear", "a b"), "invalid queue name");
    assertUsage(run("limits"), "a subcommand is required (list, show, set, clear)");

    // A good flag beside a bad one stores nothing either.
    assertUsage(
        run("limits", "set", "other", "--global-concurrency", "3", "--rate", "0/1s"),
        "invalid --rate");
    assertThat(client.limits("kept")).contains(kept);
    assertThat(client.limits("other")).isEmpty();
    assertThat(limited()).isEqualTo(1);
  }

  @Test
  void anUnreachableDatabaseExits1InOneLine() {
    CommandRun r = CommandRun.of(
        Map.of("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none"), "limits", "list");
    assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
    assertThat(r.err()).contains("cannot connect to the database").doesNotContain("\tat ");
  }

  private static String[] concat(String[] a, String[] b) {
    String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return all;
  }
}
