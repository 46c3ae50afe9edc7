package io.pgjobs.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.Priority;
import io.pgjobs.cli.demo.DemoJobs;
import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.testkit.TestDatabase;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The commands run in-process against a real database: output, effects and exit codes. */
class PgJobsCommandTest {
  static TestDatabase db;
  static JobClient client;
  static Map<String, String> env;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create();
    client = JobClient.builder(db.dataSource()).knownTypes(DemoJobs.types()).build();
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
  void emptyTables() {
    db.execute(
        "TRUNCATE pgjobs.jobs, pgjobs.finished_jobs, pgjobs.job_keys, pgjobs.workers, pgjobs.leases");
  }

  static CommandRun run(String... args) {
    return CommandRun.of(env, args);
  }

  private static Job job(UUID id) {
    return client.get(id).orElseThrow();
  }

  // ---------------------------------------------------------------- migrate

  @Test
  void migrateCreatesAMissingDatabaseAndItsSchemaAndIsThenUpToDate() throws Exception {
    String name = "pgjobs_cli_migrate_" + UUID.randomUUID().toString().substring(0, 8);
    String url = "postgresql://postgres@127.0.0.1:5432/" + name;
    try {
      CommandRun first = CommandRun.of(Map.of("DATABASE_URL", url), "migrate");
      assertThat(first.exitCode()).as(first.toString()).isZero();
      assertThat(first.out())
          .contains("created database " + name)
          .contains("schema 'pgjobs' migrated");

      try (Connection c = DatabaseUrl.parse(url).connect();
          Statement st = c.createStatement();
          ResultSet rs = st.executeQuery(
              "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'pgjobs'"
                  + " AND table_name IN ('jobs', 'finished_jobs')")) {
        rs.next();
        assertThat(rs.getInt(1)).isEqualTo(2);
      }

      CommandRun again =
          CommandRun.of(Map.of("DATABASE_URL", url), "migrate", "--schema", "pgjobs");
      assertThat(again.exitCode()).as(again.toString()).isZero();
      assertThat(again.out())
          .doesNotContain("created database")
          .contains("schema 'pgjobs' is up to date");
    } finally {
      db.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }
  }

  @Test
  void migrateIntoAnotherSchemaGivenByTheEnvironment() {
    CommandRun migrate =
        CommandRun.of(Map.of("DATABASE_URL", db.jdbcUrl(), "PGJOBS_SCHEMA", "tenant_a"), "migrate");

    assertThat(migrate.exitCode()).as(migrate.toString()).isZero();
    assertThat(db.queryLong(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'tenant_a'"))
        .isPositive();
  }

  /**
   * A schema a pre-release build migrated (its Flyway history starts with V1__create_jobs.sql; the core's
   * PreReleaseSchemaRefusedTest builds one with the real pre-release files) is refused with the SQL to drop it.
   */
  @Test
  void migrateRefusesASchemaOfAPreReleaseBuildNamingTheSqlToDropIt() {
    db.execute(
        "CREATE SCHEMA pre_release",
        "CREATE TABLE pre_release.pgjobs_schema_history (installed_rank int PRIMARY KEY, version text,"
            + " description text, type text, script text, checksum int, success boolean)",
        "INSERT INTO pre_release.pgjobs_schema_history VALUES"
            + " (1, '1', 'create jobs', 'SQL', 'V1__create_jobs.sql', 1, true),"
            + " (2, '24', 'snooze count', 'SQL', 'V24__snooze_count.sql', 2, true)");

    CommandRun migrate = CommandRun.of(
        Map.of("DATABASE_URL", db.jdbcUrl(), "PGJOBS_SCHEMA", "pre_release"), "migrate");

    assertThat(migrate.exitCode()).as(migrate.toString()).isEqualTo(PgJobsCommand.FAILED);
    assertThat(migrate.err())
        .contains("schema \"pre_release\" was created by a pre-release pgjobs")
        .contains("reached version 24")
        .contains("DROP SCHEMA \"pre_release\" CASCADE;");
    assertThat(db.queryLong(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'pre_release'"))
        .as("nothing created")
        .isEqualTo(1);
  }

  // ---------------------------------------------------------------- enqueue and jobs

  @Test
  void enqueuePrintsTheNewJobAndShowPrintsEveryField() {
    CommandRun enqueue = run(
        "enqueue",
        "summarize_text",
        "--payload",
        "{\"text\":\"One. Two.\",\"sentences\":1}",
        "--queue",
        "texts",
        "--priority",
        "high",
        "--max-attempts",
        "7",
        "--context",
        "from a test");

    assertThat(enqueue.exitCode()).as(enqueue.toString()).isZero();
    UUID id = enqueue.firstId();
    assertThat(enqueue.out())
        .startsWith("enqueued job " + id + " (type summarize_text, queue texts, priority 75,");
    Job job = job(id);
    assertThat(job.state()).isEqualTo(JobState.QUEUED);
    assertThat(job.priority()).isEqualTo(Priority.HIGH);
    assertThat(job.maxAttempts()).isEqualTo(7);
    assertThat(job.context()).isEqualTo("from a test");

    CommandRun show = run("jobs", "show", id.toString());
    assertThat(show.exitCode()).as(show.toString()).isZero();
    assertThat(show.out())
        .contains("id:              " + id)
        .contains("type:            summarize_text")
        .contains("queue:           texts")
        .contains("state:           queued")
        .contains("attempts:        0 of 7")
        .contains("context:         from a test")
        .contains("payload:         {\"text\":\"One. Two.\",\"sentences\":1}");

    CommandRun json = run("jobs", "show", id.toString(), "--json");
    assertThat(json.out())
        .contains("\"id\" : \"" + id + "\"")
        .contains("\"state\" : \"queued\"")
        .as("the API's representation")
        .contains("\"max_attempts\" : 7", "\"scheduled\" : false", "\"timeout_ms\"")
        .doesNotContain("maxAttempts");
  }

  @Test
  void showListsWhatAJobOfAGraphWaitsFor() {
    java.util.Map<String, UUID> ids = client
        .enqueueGraph(io.pgjobs.JobGraph.builder()
            .add(
                "first",
                "report",
                java.util.Map.of(),
                io.pgjobs.EnqueueOptions.builder().queue("nobody-serves-this").build())
            .add(
                "second",
                "report",
                java.util.Map.of(),
                io.pgjobs.EnqueueOptions.builder().queue("nobody-serves-this").build(),
                io.pgjobs.Dependency.on("first").runAnyway())
            .build())
        .ids();

    CommandRun show = run("jobs", "show", ids.get("second").toString());
    assertThat(show.exitCode()).as(show.toString()).isZero();
    assertThat(show.out())
        .contains("state:           blocked")
        .contains(
            "waits for:\n  " + ids.get("first") + " report: not ended, runs anyway if it fails");
    assertThat(run("jobs", "show", ids.get("first").toString()).out()).doesNotContain("waits for:");
  }

  @Test
  void workflowsShowListsARunsStepsAndSignalStoresTheFirstOfAName() {
    UUID run = run(
            "enqueue",
            "approval_flow",
            "--allow-unknown-type",
            "--queue",
            "nobody-serves-this",
            "-q")
        .firstId();
    db.execute("INSERT INTO pgjobs.workflow_steps (run_id, name, seq, kind, state, result)"
        + " VALUES ('" + run + "', 'prepare', 1, 'step', 'done', '\"ready\"')");

    CommandRun show = run("workflows", "show", run.toString());
    assertThat(show.exitCode()).as(show.toString()).isZero();
    assertThat(show.out())
        .contains("run " + run + " of workflow approval_flow: queued, attempt 0 of")
        .containsPattern("1  prepare +step +done +\"ready\"");

    CommandRun signal =
        run("workflows", "signal", run.toString(), "approved", "--payload", "{\"by\":\"ada\"}");
    assertThat(signal.exitCode()).as(signal.toString()).isZero();
    assertThat(signal.out()).contains("signal 'approved' sent to run " + run);
    assertThat(run("workflows", "signal", run.toString(), "approved").out())
        .contains("was not stored");
    assertThat(run("workflows", "signal", run.toString(), "x", "--payload", "{nope")
            .exitCode())
        .isEqualTo(2);
  }

  /**
   * {@code workflows list}: without --workflow the runs of the workflows this pgjobs knows (the demo's
   * demo_digest, the test provider's echo_flow), newest first, and no plain job nor run of another
   * workflow; --workflow names any workflow, --state filters, --limit pages with a cursor; bad flags exit 2.
   */
  @Test
  void workflowsListShowsRunsNewestFirstByWorkflowAndStateAPageAtATime() {
    UUID digest1 = client
        .enqueue(
            io.pgjobs.cli.demo.DigestWorkflow.TYPE.jobType(),
            new io.pgjobs.cli.demo.DigestWorkflow.Digest(
                "One. Two.", "ada@example.com", "http://127.0.0.1:1/hook", "s"))
        .job()
        .id();
    UUID echo = client
        .enqueue(EchoJobs.ECHO_FLOW.jobType(), new EchoJobs.Echo("hi"))
        .job()
        .id();
    UUID digest2 = client
        .enqueue(
            io.pgjobs.cli.demo.DigestWorkflow.TYPE.jobType(),
            new io.pgjobs.cli.demo.DigestWorkflow.Digest(
                "Three. Four.", "bob@example.com", "http://127.0.0.1:1/hook", "s"))
        .job()
        .id();
    UUID other = run("enqueue", "approval_flow", "--allow-unknown-type", "--payload", "{}", "-q")
        .firstId();
    UUID plain = run(
            "enqueue", "summarize_text", "--payload", "{\"text\":\"A. B.\",\"sentences\":1}", "-q")
        .firstId();
    client.cancel(digest1);

    CommandRun all = run("workflows", "list");
    assertThat(all.exitCode()).as(all.toString()).isZero();
    assertThat(all.out())
        .containsPattern("ID +WORKFLOW +STATE +ATTEMPTS +CREATED +FINISHED")
        .containsPattern(digest2 + " +demo_digest +queued +0/3 +\\S+ +-")
        .containsPattern(echo + " +echo_flow +queued")
        .containsPattern(digest1 + " +demo_digest +cancelled +0/3 +\\S+ +\\d{4}-")
        .doesNotContain(other.toString())
        .doesNotContain(plain.toString())
        .doesNotContain("next page");
    assertThat(all.out().indexOf(digest2.toString()))
        .as("newest first")
        .isLessThan(all.out().indexOf(echo.toString()));
    assertThat(all.out().indexOf(echo.toString()))
        .isLessThan(all.out().indexOf(digest1.toString()));

    CommandRun named = run("workflows", "list", "--workflow", "approval_flow");
    assertThat(named.exitCode()).as(named.toString()).isZero();
    assertThat(named.out()).contains(other.toString()).doesNotContain(digest2.toString());

    CommandRun cancelled =
        run("workflows", "list", "--workflow", "demo_digest", "--state", "cancelled");
    assertThat(cancelled.out()).contains(digest1.toString()).doesNotContain(digest2.toString());
    assertThat(run("workflows", "list", "--workflow", "demo_digest", "--state", "failed")
            .out())
        .contains("no runs of demo_digest");

    CommandRun first = run("workflows", "list", "--workflow", "demo_digest", "--limit", "1");
    assertThat(first.out()).contains(digest2.toString()).doesNotContain(digest1.toString());
    java.util.regex.Matcher cursor =
        java.util.regex.Pattern.compile("next page: --cursor (\\S+)").matcher(first.out());
    assertThat(cursor.find()).as(first.toString()).isTrue();
    CommandRun second = run(
        "workflows",
        "list",
        "--workflow",
        "demo_digest",
        "--limit",
        "1",
        "--cursor",
        cursor.group(1));
    assertThat(second.out()).contains(digest1.toString()).doesNotContain(digest2.toString());

    Map<String[], String> bad = new java.util.LinkedHashMap<>();
    bad.put(new String[] {"--limit", "0"}, "invalid --limit: must be between 1 and 1000, was 0");
    bad.put(new String[] {"--limit", "ten"}, "--limit");
    bad.put(new String[] {"--state", "sleeping"}, "invalid --state");
    bad.put(new String[] {"--workflow", "has space"}, "invalid --workflow 'has space'");
    bad.put(new String[] {"--cursor", "nope"}, "invalid --cursor");
    bad.forEach((flags, message) -> {
      String[] args = new String[flags.length + 2];
      args[0] = "workflows";
      args[1] = "list";
      System.arraycopy(flags, 0, args, 2, flags.length);
      CommandRun refused = run(args);
      assertThat(refused.exitCode()).as(refused.toString()).isEqualTo(PgJobsCommand.USAGE);
      assertThat(refused.err()).as(refused.toString()).contains(message);
    });
  }

  /**
   * {@code workflows cancel}: a waiting run gets its cancellation asked (exit 0, once; a second ask says so),
   * an ended or unknown run exits 1, a bad id 2.
   */
  @Test
  void workflowsCancelAsksAWaitingRunToCompensateAndRefusesAnEndedOrUnknownRun() {
    UUID waiting = run("enqueue", "approval_flow", "--allow-unknown-type", "--payload", "{}", "-q")
        .firstId();
    CommandRun cancel = run("workflows", "cancel", waiting.toString());
    assertThat(cancel.exitCode()).as(cancel.toString()).isZero();
    assertThat(cancel.out())
        .contains("cancellation of run " + waiting + " asked: it compensates its done steps");
    assertThat(job(waiting).state())
        .as("not ended at once: its execution compensates")
        .isEqualTo(JobState.QUEUED);
    CommandRun again = run("workflows", "cancel", waiting.toString().substring(0, 13));
    assertThat(again.exitCode()).as(again.toString()).isZero();
    assertThat(again.out()).contains("had already been asked");

    UUID ended = run("enqueue", "approval_flow", "--allow-unknown-type", "--payload", "{}", "-q")
        .firstId();
    client.cancel(ended);
    CommandRun late = run("workflows", "cancel", ended.toString());
    assertThat(late.exitCode()).as(late.toString()).isEqualTo(PgJobsCommand.FAILED);
    assertThat(late.err()).contains("run " + ended + " has ended (cancelled)");

    CommandRun unknown = run("workflows", "cancel", UUID.randomUUID().toString());
    assertThat(unknown.exitCode()).as(unknown.toString()).isEqualTo(PgJobsCommand.FAILED);
    assertThat(unknown.err()).contains("not found");

    CommandRun badId = run("workflows", "cancel", "xyz");
    assertThat(badId.exitCode()).as(badId.toString()).isEqualTo(PgJobsCommand.USAGE);
  }

  @Test
  void enqueueWithDelayOrRunAtSchedulesTheJob() {
    UUID delayed =
        run("enqueue", "report", "--allow-unknown-type", "--delay", "10m", "-q").firstId();
    Instant at = Instant.parse("2031-02-03T04:05:06Z");
    UUID timed = run(
            "enqueue",
            "report",
            "--allow-unknown-type",
            "--run-at",
            "2031-02-03T05:05:06+01:00",
            "-q")
        .firstId();

    assertThat(job(delayed).isScheduled()).isTrue();
    assertThat(job(delayed).runAt()).isAfter(Instant.now().plus(Duration.ofMinutes(9)));
    assertThat(job(timed).runAt()).isEqualTo(at);
    assertThat(run("jobs", "show", timed.toString()).out())
        .contains("state:           queued (scheduled)");
  }

  @Test
  void enqueueWithTheSameIdempotencyKeyReturnsTheFirstJob() {
    CommandRun first =
        run("enqueue", "report", "--allow-unknown-type", "--idempotency-key", "nightly-2031-01-01");
    CommandRun second =
        run("enqueue", "report", "--allow-unknown-type", "--idempotency-key", "nightly-2031-01-01");

    assertThat(second.exitCode()).isZero();
    assertThat(second.firstId()).isEqualTo(first.firstId());
    assertThat(second.out())
        .contains("already exists for idempotency key 'nightly-2031-01-01'")
        .contains("nothing new was enqueued");
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs")).isEqualTo(1);
  }

  @Test
  void enqueueCountEnqueuesInBulkWithAProgressLine() {
    CommandRun bulk = run(
        "enqueue",
        "summarize_text",
        "--payload",
        "{\"text\":\"Hello.\",\"sentences\":1}",
        "--count",
        "2500",
        "--priority",
        "-5");

    assertThat(bulk.exitCode()).as(bulk.toString()).isZero();
    assertThat(bulk.out())
        .contains("enqueued 1000 of 2500 (40%)")
        .contains("enqueued 2000 of 2500 (80%)")
        .contains("enqueued 2500 of 2500 (100%)")
        .contains("enqueued 2500 jobs of type summarize_text");
    assertThat(db.queryLong(
            "SELECT count(*) FROM pgjobs.jobs WHERE type = 'summarize_text' AND priority = -5"))
        .isEqualTo(2500);
  }

  @Test
  void enqueueRejectsAnInvalidDemoPayloadWithExit2ListingEveryField() {
    CommandRun bad =
        run("enqueue", "send_email", "--payload", "{\"to\":\"nobody\",\"subject\":\"\"}");

    assertThat(bad.exitCode()).isEqualTo(2);
    assertThat(bad.err())
        .contains("invalid --payload for job type 'send_email':")
        .contains("to: must be an e-mail address (name@host), was 'nobody'")
        .contains("subject: must not be blank")
        .contains("body: is required");
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs")).isZero();
  }

  @Test
  void enqueueRejectsAPayloadMemberTheTypeLacksWithExit2LikeAnyBadValue() {
    CommandRun bad = run(
        "enqueue",
        "summarize_text",
        "--payload",
        "{\"text\":\"Hi.\",\"sentences\":1,\"lenght\":3}");

    assertThat(bad.exitCode()).as(bad.err()).isEqualTo(2);
    assertThat(bad.err())
        .contains("invalid --payload for job type 'summarize_text':")
        .contains("lenght");
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs")).isZero();
  }

  @Test
  void listShowsJobsNewestFirstFiltersThemAndPrintsACursorForTheNextPage() {
    UUID a = run("enqueue", "report", "--allow-unknown-type", "-q").firstId();
    UUID b = run("enqueue", "report", "--allow-unknown-type", "-q", "--queue", "other")
        .firstId();
    UUID c = run(
            "enqueue", "summarize_text", "-q", "--payload", "{\"text\":\"Hi.\",\"sentences\":1}")
        .firstId();
    run("jobs", "cancel", b.toString());

    CommandRun all = run("jobs", "list");
    assertThat(all.exitCode()).isZero();
    assertThat(all.out().lines().toList()).hasSize(4);
    assertThat(all.out().lines().findFirst().orElseThrow())
        .startsWith("ID")
        .contains("TYPE", "QUEUE", "STATE", "ATTEMPTS");
    assertThat(all.out().indexOf(c.toString())).isLessThan(all.out().indexOf(b.toString()));
    assertThat(all.out().indexOf(b.toString())).isLessThan(all.out().indexOf(a.toString()));

    CommandRun page = run("jobs", "list", "--limit", "2");
    assertThat(page.out()).contains(c.toString(), b.toString()).doesNotContain(a.toString());
    String cursor = page.out()
        .lines()
        .filter(l -> l.startsWith("next page: --cursor "))
        .findFirst()
        .orElseThrow()
        .substring("next page: --cursor ".length());
    CommandRun next = run("jobs", "list", "--limit", "2", "--cursor", cursor);
    assertThat(next.out()).contains(a.toString()).doesNotContain(c.toString());

    assertThat(run("jobs", "list", "--state", "cancelled").out())
        .contains(b.toString())
        .doesNotContain(a.toString());
    assertThat(run("jobs", "list", "--type", "summarize_text").out())
        .contains(c.toString())
        .doesNotContain(a.toString());
    assertThat(run("jobs", "list", "--queue", "other,nothing").out())
        .contains(b.toString())
        .doesNotContain(c.toString());
    assertThat(run("jobs", "list", "--state", "failed").out()).isEqualTo("no jobs\n");
    CommandRun json = run("jobs", "list", "--json");
    assertThat(json.out())
        .as("snake_case, as the API")
        .contains("\"next_cursor\" : null", "\"max_attempts\" : 3", "\"run_at\" : ")
        .doesNotContain("nextCursor", "maxAttempts")
        .contains(a.toString());
  }

  @Test
  void cancelOfAWaitingJobExits0AndOfAFinishedOneExits1() {
    UUID id = run("enqueue", "report", "--allow-unknown-type", "-q").firstId();

    CommandRun cancel = run("jobs", "cancel", id.toString());
    assertThat(cancel.exitCode()).isZero();
    assertThat(cancel.out()).isEqualTo("job " + id + " cancelled\n");
    assertThat(job(id).state()).isEqualTo(JobState.CANCELLED);

    CommandRun again = run("jobs", "cancel", id.toString());
    assertThat(again.exitCode()).isEqualTo(1);
    assertThat(again.err())
        .isEqualTo("pgjobs jobs cancel: job " + id
            + " has already finished (cancelled); nothing to cancel\n");
  }

  @Test
  void retryOfACancelledJobQueuesItAgainAndOfAQueuedOneExits1() {
    UUID id = run("enqueue", "report", "--allow-unknown-type", "-q").firstId();
    CommandRun queued = run("jobs", "retry", id.toString());
    assertThat(queued.exitCode()).isEqualTo(1);
    assertThat(queued.err())
        .contains("job " + id + " is queued; only failed and cancelled jobs can be retried");

    run("jobs", "cancel", id.toString());
    CommandRun retry = run("jobs", "retry", id.toString());
    assertThat(retry.exitCode()).isZero();
    assertThat(retry.out()).isEqualTo("job " + id + " queued again\n");
    assertThat(job(id).state()).isEqualTo(JobState.QUEUED);
  }

  @Test
  void enqueueOfAnUnknownTypeExits2ListingTheKnownOnesUnlessAllowed() {
    CommandRun typo = run("enqueue", "send_emial", "--payload", "{\"to\":\"ada@example.com\"}");
    assertThat(typo.exitCode()).as(typo.toString()).isEqualTo(2);
    assertThat(typo.err())
        .contains(
            "unknown job type 'send_emial'; known types: demo_digest, echo, resize_image, send_email,"
                + " summarize_text, webhook_delivery",
            "--allow-unknown-type");
    assertThat(client.list(io.pgjobs.JobFilter.builder().build()).jobs()).isEmpty();

    CommandRun allowed = run("enqueue", "send_emial", "--allow-unknown-type", "-q");
    assertThat(allowed.exitCode()).as(allowed.toString()).isZero();
    assertThat(job(allowed.firstId()).type()).isEqualTo("send_emial");
  }

  @Test
  void showCancelAndRetryAcceptAUniqueIdPrefix() {
    UUID id = run("enqueue", "report", "--allow-unknown-type", "-q").firstId();
    String prefix =
        id.toString().substring(0, 13); // "xxxxxxxx-xxxx": unique for a second job made now
    UUID other = run("enqueue", "report", "--allow-unknown-type", "-q").firstId();
    String unique = id.toString().substring(0, 19).equals(other.toString().substring(0, 19))
        ? id.toString().substring(0, 30)
        : id.toString().substring(0, 23);

    CommandRun show = run("jobs", "show", unique);
    assertThat(show.exitCode()).as(show.toString()).isZero();
    assertThat(show.out()).contains("id:              " + id);
    CommandRun cancel = run("jobs", "cancel", unique.replace("-", "").toUpperCase(Locale.ROOT));
    assertThat(cancel.out()).isEqualTo("job " + id + " cancelled\n");
    assertThat(run("jobs", "retry", unique).out()).isEqualTo("job " + id + " queued again\n");

    CommandRun ambiguous = run("jobs", "show", prefix.substring(0, 4));
    assertThat(ambiguous.exitCode()).as(ambiguous.toString()).isEqualTo(2);
    assertThat(ambiguous.err())
        .contains("job id prefix '" + prefix.substring(0, 4) + "' is ambiguous")
        .doesNotContain("Exception");

    CommandRun none = run("jobs", "show", "ffff");
    assertThat(none.exitCode()).as(none.toString()).isEqualTo(1);
    assertThat(none.err())
        .isEqualTo(
            "pgjobs jobs show: no job id starts with 'ffff' (finished jobs are pruned after the"
                + " retention period)\n");

    CommandRun bad = run("jobs", "show", "01a");
    assertThat(bad.exitCode()).as(bad.toString()).isEqualTo(2);
    assertThat(bad.err())
        .contains("'01a' is not a job id; give the full id (a UUID")
        .doesNotContain("Exception");
  }

  @Test
  void anUnknownJobIdExits1WithAClearMessage() {
    UUID unknown = UUID.randomUUID();
    for (String command : new String[] {"show", "cancel", "retry"}) {
      CommandRun r = run("jobs", command, unknown.toString());
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
      assertThat(r.err()).startsWith("pgjobs jobs " + command + ": job " + unknown + " not found");
      assertThat(r.err().lines().count()).isEqualTo(1);
    }
  }

  // ---------------------------------------------------------------- failures and usage errors

  @Test
  void anUnreachableDatabaseExits1WithOneLineAndNoStackTrace() throws Exception {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    for (String[] args :
        new String[][] {{"migrate"}, {"jobs", "list"}, {"enqueue", "report", "--allow-unknown-type"}
        }) {
      CommandRun r = CommandRun.of(
          Map.of("DATABASE_URL", "postgres://postgres@127.0.0.1:" + closedPort + "/x"), args);
      assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
      assertThat(r.err().lines().toList())
          .singleElement()
          .satisfies(line -> assertThat(line)
              .contains("cannot connect to the database at jdbc:postgresql://127.0.0.1:"
                  + closedPort + "/x")
              .doesNotContain("Exception", "\tat "));
    }
  }

  @Test
  void anUnknownHostIsNamedAndAPasswordWithAtSignsIsNeverShown() {
    CommandRun r = CommandRun.of(
        Map.of("DATABASE_URL", "postgres://postgres:p@ss@no-such-host.invalid:5432/x"),
        "jobs",
        "list");
    assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
    assertThat(r.err().lines().toList())
        .singleElement()
        .satisfies(line -> assertThat(line)
            .contains("unknown host 'no-such-host.invalid'")
            .doesNotContain("p@ss", "ss@", "has no host", "Exception"));

    CommandRun settings = CommandRun.of(
        Map.of("DATABASE_URL", "postgres://postgres:p@ss@127.0.0.1:5432/x"), "settings");
    assertThat(settings.exitCode()).as(settings.toString()).isZero();
    assertThat(settings.out())
        .contains("jdbc:postgresql://127.0.0.1:5432/x (user postgres)")
        .doesNotContain("p@ss", "ss@");
  }

  @Test
  void aMissingDatabaseTellsToRunMigrate() {
    CommandRun r = CommandRun.of(
        Map.of("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/pgjobs_cli_nowhere"),
        "jobs",
        "list");
    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.err())
        .contains(
            "database \"pgjobs_cli_nowhere\" does not exist (run 'pgjobs migrate' to create it)");
  }

  @Test
  void theHelpOfASettingWithAPercentSignIsPrintedAsWrittenWithoutAWarning() {
    java.io.PrintStream stderr = System.err;
    java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
    CommandRun help;
    System.setErr(new java.io.PrintStream(captured, true, java.nio.charset.StandardCharsets.UTF_8));
    try {
      help = run("--help");
    } finally {
      System.setErr(stderr);
    }
    assertThat(help.exitCode()).isZero();
    // picocli reads descriptions as format strings: an unescaped "%2F" made it warn on every help.
    assertThat(captured.toString(java.nio.charset.StandardCharsets.UTF_8))
        .doesNotContain("picocli WARN");
    assertThat(help.err()).doesNotContain("picocli WARN");
    assertThat(help.out().replaceAll("\\s+", " "))
        .contains("%3F, %23 and %25")
        .doesNotContain("%%");
  }

  @Test
  void helpAndVersionExit0() {
    CommandRun help = run("--help");
    assertThat(help.exitCode()).isZero();
    assertThat(help.out())
        .contains("Usage: pgjobs", "migrate", "work", "enqueue", "jobs", "Exit codes: 0 ok");
    for (String[] args : new String[][] {
      {"work", "--help"},
      {"enqueue", "--help"},
      {"jobs", "list", "--help"},
      {"jobs", "show", "--help"},
      {"jobs", "cancel", "--help"},
      {"jobs", "retry", "--help"},
      {"migrate", "--help"}
    }) {
      CommandRun r = run(args);
      assertThat(r.exitCode()).as(String.join(" ", args)).isZero();
      assertThat(r.out())
          .contains("Usage: pgjobs " + String.join(" ", args).replace(" --help", ""));
    }
    assertThat(run("work", "--help").out())
        .contains("--concurrency=<n>", "Environment: PGJOBS_CONCURRENCY");
    CommandRun version = run("--version");
    assertThat(version.exitCode()).isZero();
    assertThat(version.out()).startsWith("pgjobs 0.");
    assertThat(run("jobs", "--version").out()).isEqualTo(version.out());
  }

  @Test
  void badFlagsExit2WithAClearMessage() {
    assertUsage(run(), "pgjobs: a command is required.");
    assertUsage(run("frobnicate"), "pgjobs: Unmatched argument at index 0: 'frobnicate'");
    assertUsage(run("jobs", "list", "--bogus"), "pgjobs jobs list: Unknown option: '--bogus'");
    assertUsage(run("enqueue"), "pgjobs enqueue: Missing required parameter: 'TYPE'");
    assertUsage(
        run("enqueue", "x", "--max-attempts", "many"),
        "Invalid value for option '--max-attempts': 'many' is not an int");
    assertUsage(
        run("enqueue", "x", "--max-attempts", "0"),
        "invalid --max-attempts: maxAttempts: must be between 1 and 1000, was 0");
    assertUsage(
        run("enqueue", "x", "--delay", "5x"),
        "Invalid value for option '--delay': invalid duration '5x'");
    assertUsage(run("enqueue", "x", "--run-at", "tomorrow"), "'tomorrow' is not an ISO-8601 time");
    assertUsage(
        run("enqueue", "x", "--delay", "1s", "--run-at", "2031-01-01T00:00:00Z"),
        "give either runAt or delay, not both");
    assertUsage(run("enqueue", "x", "--payload", "{not json"), "--payload is not valid JSON");
    assertUsage(run("enqueue", "x", "--payload", "[1,2]"), "--payload must be a JSON object");
    assertUsage(
        run("enqueue", "x", "--priority", "urgent"),
        "invalid --priority 'urgent'; allowed: an integer or critical, high, normal, low, background");
    assertUsage(
        run("enqueue", "x", "--count", "0"), "--count must be between 1 and 10000000, was 0");
    assertUsage(
        run("enqueue", "x", "--count", "2", "--idempotency-key", "k"),
        "cannot be used with --count 2");
    assertUsage(run("enqueue", "bad name!"), "invalid TYPE: type: invalid name 'bad name!'");
    assertUsage(
        run("jobs", "show", "not-a-uuid"),
        "'not-a-uuid' is not a job id; give the full id (a UUID");
    assertUsage(
        run("jobs", "list", "--limit", "0"),
        "invalid --limit: limit: must be between 1 and 1000, was 0");
    assertUsage(
        run("jobs", "list", "--state", "done"),
        "invalid --state: unknown job state 'done'; allowed: queued, running, retrying, succeeded, failed, cancelled, blocked");
    assertUsage(
        run("jobs", "list", "--cursor", "zzz"), "is not a cursor returned by a previous page");
    assertUsage(run("jobs"), "pgjobs jobs: a subcommand is required");
    assertUsage(
        run("work", "--concurrency", "0"),
        "invalid value '0' for option --concurrency (setting concurrency): out of range; allowed: an integer from 1 to 10000");
    assertUsage(
        run("work", "--log-level", "loud"),
        "invalid value 'loud' for option --log-level (setting log_level): unknown log level");
    assertUsage(
        run("work", "--queues", "a=1,,b"),
        "invalid value 'a=1,,b' for option --queues (setting queues): empty queue name");
    assertUsage(
        run("work", "--capabilities", "media,needs gpu"),
        "invalid value 'media,needs gpu' for option"
            + " --capabilities (setting capabilities): invalid capability name 'needs gpu'; allowed: comma-separated names,"
            + " each 1–64 of letters, digits and _ . -");
    assertUsage(
        run("bench", "--workload", "W9"), "unknown workload 'W9'; allowed: W1, W2, W3, W4, all");
    assertUsage(run("bench", "--runs", "0"), "--runs must be between 1 and 100, was 0");
    assertUsage(
        run("bench", "--scale", "20"), "--scale must be greater than 0 and at most 10, was 20.0");
    assertUsage(run("bench", "--rate", "800"), "--rate goes with --workload W5");
    assertUsage(
        run("bench", "--workload", "W5", "--rate", "fast"),
        "--rate takes whole numbers separated by commas");
    assertUsage(
        run("bench", "--workload", "W5", "--window", "0"),
        "--window must be between 0.1 and 3,600 s");
    assertUsage(
        run("bench", "--workload", "W5", "--partitions", "-1"),
        "--partitions must be between 0 (no limits) and 100,000, was -1");
    assertUsage(run("bench", "--chart", "x.png"), "--chart goes with --sweep or --workload W5");
    assertUsage(
        run("bench", "--w4-warmup-jobs", "-1"),
        "--w4-warmup-jobs must be a whole number from 0 to 100000, was '-1'");
    assertUsage(
        run("bench", "--w4-warmup-jobs", "many"),
        "--w4-warmup-jobs must be a whole number from 0 to 100000, was 'many'");
    assertUsage(
        run("bench", "--w4-warmup-jobs", "100001"),
        "--w4-warmup-jobs must be a whole number from 0 to 100000, was '100001'");
    assertUsage(
        run("bench", "--workload", "W3", "--w4-warmup-jobs", "10"),
        "--w4-warmup-jobs goes with --workload W4 or all");
    assertUsage(run("demo", "--interval", "fast"), "invalid duration 'fast'");
    assertUsage(
        run("demo", "--samples", "-2"),
        "--samples must be -1 (no end) or a number of rounds, was -2");
    assertUsage(run("serve", "--port", "70000"), "--port");
    assertUsage(
        run("migrate", "--database-url", "mysql://x/y"),
        "invalid value (hidden) for option --database-url (setting database_url): unsupported database URL 'mysql://x/y'");
  }

  private static void assertUsage(CommandRun r, String message) {
    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.err()).as(r.toString()).contains(message);
    assertThat(r.err()).doesNotContain("\tat ");
  }

  @Test
  void badEnvironmentValuesExit2NamingTheVariableAndWhatIsAllowed() {
    CommandRun concurrency = CommandRun.of(Map.of("PGJOBS_CONCURRENCY", "abc"), "work");
    assertThat(concurrency.exitCode()).isEqualTo(2);
    assertThat(concurrency.err())
        .startsWith(
            "pgjobs work: invalid value 'abc' in environment variable PGJOBS_CONCURRENCY (setting concurrency): not an integer;"
                + " allowed: an integer from 1 to 10000\n");

    CommandRun stale = CommandRun.of(Map.of("PGJOBS_STALE_THRESHOLD", "5x"), "work");
    assertThat(stale.exitCode()).isEqualTo(2);
    assertThat(stale.err())
        .startsWith(
            "pgjobs work: invalid value '5x' in environment variable PGJOBS_STALE_THRESHOLD (setting stale_threshold):"
                + " not a duration; allowed: a duration from 1s to 24h, written like 500ms, 5s, 10m, 1h or 1h30m\n");

    for (Map.Entry<String, String> bad : Map.of(
            "PGJOBS_PORT",
            "http",
            "PGJOBS_POLL_INTERVAL",
            "1ms",
            "PGJOBS_SMTP_FROM",
            "nobody",
            "LOG_FORMAT",
            "xml",
            "PGJOBS_API_TOKENS",
            "short",
            "PGJOBS_SCHEMA",
            "Bad-Schema",
            "DATABASE_URL",
            "redis://cache:6379")
        .entrySet()) {
      CommandRun r = CommandRun.of(Map.of(bad.getKey(), bad.getValue()), "settings");
      assertThat(r.exitCode()).as(bad.toString()).isEqualTo(2);
      assertThat(r.err())
          .as(bad.toString())
          .contains("environment variable " + bad.getKey() + " (setting ", "; allowed: ");
    }
  }

  @Test
  void aBadConfigFileExits2() throws Exception {
    java.nio.file.Path file = java.nio.file.Files.createTempFile("pgjobs", ".properties");
    try {
      java.nio.file.Files.writeString(file, "concurency=5\n");
      CommandRun typo = CommandRun.of(Map.of("PGJOBS_CONFIG", file.toString()), "settings");
      assertThat(typo.exitCode()).isEqualTo(2);
      assertThat(typo.err())
          .contains("unknown setting 'concurency' in config file " + file
              + "; allowed keys: database_url,");

      java.nio.file.Files.writeString(file, "retention=forever\n");
      CommandRun value = CommandRun.of(Map.of(), "settings", "--config", file.toString());
      assertThat(value.exitCode()).isEqualTo(2);
      assertThat(value.err())
          .contains("invalid value 'forever' for retention in config file " + file
              + " (setting retention): not a duration; allowed: a duration from 1s to 3650d");
    } finally {
      java.nio.file.Files.delete(file);
    }
    CommandRun missing =
        CommandRun.of(Map.of(), "settings", "--config", "/nonexistent/pgjobs.properties");
    assertThat(missing.exitCode()).isEqualTo(2);
    assertThat(missing.err())
        .contains(
            "cannot read config file /nonexistent/pgjobs.properties (from --config): no such file");
  }

  @Test
  void flagsBeatTheEnvironmentWhichBeatsTheConfigFileWhichBeatsDefaults() throws Exception {
    java.nio.file.Path file = java.nio.file.Files.createTempFile("pgjobs", ".properties");
    try {
      java.nio.file.Files.writeString(
          file,
          String.join(
              "\n",
              "concurrency=3",
              "claim_batch=4",
              "poll_interval=250ms",
              "smtp_host=mail.from-file.test",
              ""));
      Map<String, String> environment = Map.of(
          "PGJOBS_CONFIG", file.toString(), "PGJOBS_CONCURRENCY", "20", "PGJOBS_CLAIM_BATCH", "30");

      CommandRun r = CommandRun.of(environment, "settings", "--concurrency", "7");

      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out())
          .containsPattern("concurrency +7 +\\[--concurrency]")
          .containsPattern("claim_batch +30 +\\[PGJOBS_CLAIM_BATCH]")
          .containsPattern("poll_interval +250ms +\\[config file "
              + java.util.regex.Pattern.quote(file.toString()) + "]")
          .containsPattern("smtp_host +mail.from-file.test +\\[config file ")
          .containsPattern("shutdown_grace +30s +\\[default]")
          .containsPattern(
              "database_url +jdbc:postgresql://127.0.0.1:5432/pgjobs \\(user postgres\\) +\\[default]");
    } finally {
      java.nio.file.Files.delete(file);
    }
  }

  @Test
  void databaseUrlComesFromTheFlagThenDatabaseUrlThenPgjobsDatabaseUrl() {
    Map<String, String> both = Map.of(
        "DATABASE_URL", "postgres://app:secret@db.example:6543/app",
        "PGJOBS_DATABASE_URL", "postgresql://other@elsewhere/other");
    CommandRun fromEnv = CommandRun.of(both, "settings");
    assertThat(fromEnv.out())
        .containsPattern(
            "database_url +jdbc:postgresql://db.example:6543/app \\(user app\\) +\\[DATABASE_URL]")
        .doesNotContain("secret");
    CommandRun fallback = CommandRun.of(
        Map.of("PGJOBS_DATABASE_URL", "postgresql://other@elsewhere/other"), "settings");
    assertThat(fallback.out())
        .containsPattern(
            "database_url +jdbc:postgresql://elsewhere:5432/other .*\\[PGJOBS_DATABASE_URL]");
    CommandRun flag = CommandRun.of(
        both, "--database-url", "jdbc:postgresql://flag-host:5432/flagdb", "settings");
    assertThat(flag.out())
        .containsPattern(
            "database_url +jdbc:postgresql://flag-host:5432/flagdb +\\[--database-url]");
    assertThat(flag.out().toLowerCase(Locale.ROOT)).contains("api_tokens");
  }
}
