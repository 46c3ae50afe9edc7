package io.pgjobs.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.recurring.Recurring;
import io.pgjobs.recurring.RecurringStore;
import io.pgjobs.testkit.TestDatabase;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code pgjobs recurring ...} in-process against a real database: output, effects and exit codes. */
class RecurringCommandTest {
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
    db.execute("DELETE FROM pgjobs.recurring");
    db.execute("TRUNCATE pgjobs.jobs, pgjobs.finished_jobs, pgjobs.job_keys");
  }

  static CommandRun run(String... args) {
    return CommandRun.of(env, args);
  }

  private static long stored() {
    return db.queryLong("SELECT count(*) FROM pgjobs.recurring");
  }

  private static void assertUsage(CommandRun r, String message) {
    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.err()).as(r.toString()).contains(message);
    assertThat(r.err()).doesNotContain("\tat ");
  }

  @Test
  void addListPauseResumeRunNowAndRemoveASchedule() {
    CommandRun added = run(
        "recurring",
        "add",
        "nightly",
        "--cron",
        "0 3 * * *",
        "--zone",
        "Europe/Berlin",
        "--type",
        "report",
        "--allow-unknown-type",
        "--payload",
        "{\"kind\":\"daily\"}",
        "--missed",
        "catch_up",
        "--catch-up",
        "2");
    assertThat(added.exitCode()).as(added.toString()).isZero();
    assertThat(added.out())
        .contains("added recurring schedule nightly", "0 3 * * * (Europe/Berlin)", "next: ");

    CommandRun list = run("recurring", "list");
    assertThat(list.exitCode()).as(list.toString()).isZero();
    assertThat(list.out())
        .contains("nightly  active  0 3 * * * (Europe/Berlin)  report on default  [api]")
        .contains("last run: none yet");
    assertThat(list.out()
            .lines()
            .filter(l -> l.startsWith("  next: "))
            .findFirst()
            .orElseThrow()
            .split(", "))
        .hasSize(5);

    assertThat(run("recurring", "pause", "nightly").out())
        .contains("recurring schedule nightly paused");
    assertThat(run("recurring", "list").out()).contains("nightly  paused");
    assertThat(run("recurring", "resume", "nightly").out())
        .contains("recurring schedule nightly resumed");

    CommandRun now = run("recurring", "run-now", "nightly");
    assertThat(now.exitCode()).as(now.toString()).isZero();
    Job job = client.get(now.firstId()).orElseThrow();
    assertThat(job.type()).isEqualTo("report");
    assertThat(job.payload().path("kind").asString()).isEqualTo("daily");
    assertThat(job.idempotencyKey()).startsWith("recurring:nightly:now:");
    assertThat(run("recurring", "list").out()).contains("last run: " + job.id() + " queued");

    CommandRun removed = run("recurring", "remove", "nightly");
    assertThat(removed.exitCode()).as(removed.toString()).isZero();
    assertThat(stored()).isZero();
    assertThat(run("recurring", "list").out()).contains("no recurring schedules");
  }

  @Test
  void badFlagsExit2NamingTheFlagAndWhatIsAllowedAndStoreNothing() {
    assertUsage(
        run("recurring", "add", "x", "--cron", "0 3 32 * *", "--type", "r", "--allow-unknown-type"),
        "--cron: invalid cron expression '0 3 32 * *': field 3 (day of month) '32'");
    assertUsage(
        run(
            "recurring",
            "add",
            "x",
            "--cron",
            "@hourly",
            "--zone",
            "Mars/Olympus",
            "--type",
            "r",
            "--allow-unknown-type"),
        "--zone: unknown time zone 'Mars/Olympus'; allowed: an IANA zone");
    assertUsage(
        run("recurring", "add", "x", "--cron", "* * *", "--type", "r", "--allow-unknown-type"),
        "has 3 fields; allowed: 5");
    assertUsage(
        run("recurring", "add", "x", "--type", "r"),
        "Missing required option: '--cron=<expression>'");
    assertUsage(
        run("recurring", "add", "x", "--cron", "@daily"),
        "Missing required option: '--type=<type>'");
    assertUsage(
        run("recurring", "add", "--cron", "@daily", "--type", "r"),
        "Missing required parameter: 'NAME'");
    assertUsage(
        run(
            "recurring",
            "add",
            "x",
            "--cron",
            "@daily",
            "--type",
            "r",
            "--allow-unknown-type",
            "--missed",
            "never"),
        "--missed: must be skip, latest or catch_up, was 'never'");
    assertUsage(
        run(
            "recurring",
            "add",
            "x",
            "--cron",
            "@daily",
            "--type",
            "r",
            "--allow-unknown-type",
            "--catch-up",
            "3"),
        "--catch-up goes with --missed catch_up");
    assertUsage(
        run(
            "recurring",
            "add",
            "x",
            "--cron",
            "@daily",
            "--type",
            "r",
            "--allow-unknown-type",
            "--missed",
            "catch_up",
            "--catch-up",
            "0"),
        "--catch-up: must be between 1 and 1000, was 0");
    assertUsage(
        run(
            "recurring",
            "add",
            "x",
            "--cron",
            "@daily",
            "--type",
            "r",
            "--allow-unknown-type",
            "--max-attempts",
            "0"),
        "--max-attempts: must be between 1 and 1000, was 0");
    assertUsage(
        run(
            "recurring",
            "add",
            "x",
            "--cron",
            "@daily",
            "--type",
            "r",
            "--allow-unknown-type",
            "--payload",
            "[1]"),
        "--payload must be a JSON object");
    assertUsage(
        run(
            "recurring",
            "add",
            "x",
            "--cron",
            "@daily",
            "--type",
            "r",
            "--allow-unknown-type",
            "--priority",
            "urgent"),
        "invalid --priority 'urgent'");
    assertUsage(
        run("recurring", "add", "a/b", "--cron", "@daily", "--type", "r", "--allow-unknown-type"),
        "NAME: invalid name 'a/b'");
    assertUsage(
        run("recurring", "add", "x", "--cron", "@daily", "--type", "no_such_type"),
        "unknown job type 'no_such_type'; known types: ");
    assertUsage(run("recurring"), "pgjobs recurring: a subcommand is required");
    assertThat(stored()).isZero();
  }

  @Test
  void unknownNamesDuplicatesAndCodeSchedulesExit1WithAClearMessage() throws Exception {
    assertThat(run(
                "recurring",
                "add",
                "dup",
                "--cron",
                "@daily",
                "--type",
                "r",
                "--allow-unknown-type")
            .exitCode())
        .isZero();
    CommandRun duplicate =
        run("recurring", "add", "dup", "--cron", "@hourly", "--type", "r", "--allow-unknown-type");
    assertThat(duplicate.exitCode()).isEqualTo(1);
    assertThat(duplicate.err()).contains("a recurring schedule named 'dup' exists already");

    for (String command : List.of("remove", "pause", "resume", "run-now")) {
      CommandRun r = run("recurring", command, "ghost");
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
      assertThat(r.err()).contains("no recurring schedule named 'ghost'");
    }

    new RecurringStore(db.dataSource(), "pgjobs")
        .declare(
            List.of(Recurring.of(
                "in-code",
                "@hourly",
                "UTC",
                JobType.of("r", tools.jackson.databind.JsonNode.class),
                tools.jackson.databind.node.JsonNodeFactory.instance.objectNode())),
            Set.of("r"));
    CommandRun remove = run("recurring", "remove", "in-code");
    assertThat(remove.exitCode()).isEqualTo(1);
    assertThat(remove.err()).contains("recurring schedule 'in-code' is declared in code");
    assertThat(run("recurring", "pause", "in-code").exitCode()).isZero();
    assertThat(run("recurring", "list").out()).contains("in-code  paused").contains("[code]");
  }
}
