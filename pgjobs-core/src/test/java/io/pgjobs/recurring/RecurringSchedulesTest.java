package io.pgjobs.recurring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.EnqueuedJob;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.recurring.RecurringSchedules.Definition;
import io.pgjobs.recurring.RecurringSchedules.Schedule;
import io.pgjobs.testkit.JobRows;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The run-time management of recurring schedules ({@link RecurringSchedules}) against the real database. */
class RecurringSchedulesTest extends PgJobsTestBase {
  /** Friday 2026-11-27 17:50 UTC. */
  private static final Instant NOW = Instant.parse("2026-11-27T17:50:00Z");

  private RecurringSchedules schedules;
  private RecurringStore store;

  @BeforeEach
  void fresh() {
    db.execute("DELETE FROM pgjobs.recurring");
    schedules = new RecurringSchedules(client, Clock.fixed(NOW, ZoneOffset.UTC));
    store = new RecurringStore(db.dataSource(), "pgjobs");
  }

  private long stored() {
    return db.queryLong("SELECT count(*) FROM pgjobs.recurring");
  }

  @Test
  void anAddedScheduleIsListedWithItsWordsZoneAndNextFiveFireTimes() {
    Schedule added = schedules.add(
        Definition.of("weekday-report", "*/15 9-17 * * MON-FRI", "Europe/Berlin", "numbered")
            .withPayload(Map.of("n", 3)));

    assertThat(added.source()).isEqualTo("api");
    assertThat(added.zone()).isEqualTo("Europe/Berlin");
    assertThat(added.description()).containsIgnoringCase("every 15 minutes").contains("9", "17");
    // 18:50 in Berlin on a Friday: the next slots are Monday 09:00, 09:15, ... Berlin time (08:00
    // UTC).
    assertThat(added.nextRuns())
        .containsExactly(
            Instant.parse("2026-11-30T08:00:00Z"),
            Instant.parse("2026-11-30T08:15:00Z"),
            Instant.parse("2026-11-30T08:30:00Z"),
            Instant.parse("2026-11-30T08:45:00Z"),
            Instant.parse("2026-11-30T09:00:00Z"));
    // A known type gives its defaults.
    assertThat(added.queue()).isEqualTo(NUMBERED.queue());
    assertThat(added.maxAttempts()).isEqualTo(NUMBERED.maxAttempts());
    assertThat(added.payloadJson()).isEqualTo("{\"n\": 3}"); // jsonb text
    assertThat(added.missed()).isEqualTo("latest");
    assertThat(added.lastRun()).isNull();
    assertThat(schedules.list()).extracting(Schedule::name).containsExactly("weekday-report");
    assertThat(schedules.get("weekday-report")).contains(added);
    assertThat(schedules.get("nope")).isEmpty();
  }

  @Test
  void badCronZoneAndFieldsAreRejectedNamingEachFieldAndNothingIsStored() {
    ScheduleException e = (ScheduleException) org.assertj.core.api.Assertions.catchThrowable(
        () -> schedules.add(Definition.of("bad/name", "0 3 32 * *", "Mars/Olympus", "numbered")
            .withPayload(Map.of("n", "x"))
            .withMaxAttempts(0)
            .withMissed("catch_up", 5000)
            .withQueue("bad queue")));

    assertThat(e.kind()).isEqualTo(ScheduleException.Kind.INVALID);
    assertThat(e.problems())
        .extracting(FieldProblem::field)
        .containsExactlyInAnyOrder(
            "name", "zone", "cron", "queue", "max_attempts", "catch_up", "payload.n");
    String cron = e.problems().stream()
        .filter(p -> p.field().equals("cron"))
        .findFirst()
        .orElseThrow()
        .reason();
    assertThat(cron).contains("field 3 (day of month) '32'");
    assertThat(e.problems().stream()
            .filter(p -> p.field().equals("zone"))
            .findFirst()
            .orElseThrow()
            .reason())
        .contains("unknown time zone 'Mars/Olympus'");
    assertThat(stored()).isZero();

    assertThatThrownBy(() -> schedules.add(Definition.of("x", "0 3 * *", "UTC", "numbered")))
        .isInstanceOf(ScheduleException.class)
        .hasMessageContaining("cron: cron expression '0 3 * *' has 4 fields");
    assertThatThrownBy(() -> schedules.add(
            Definition.of("x", "@hourly", "UTC", "numbered").withMissed("never", null)))
        .hasMessageContaining("missed: must be skip, latest or catch_up, was 'never'");
    assertThatThrownBy(() ->
            schedules.add(Definition.of("x", "@hourly", "UTC", "numbered").withPayload(List.of(1))))
        .hasMessageContaining("payload: must be a JSON object");
    assertThatThrownBy(() -> schedules.add(
            new Definition(null, null, null, null, null, null, null, null, null, null)))
        .hasMessageContaining("name: is required")
        .hasMessageContaining("cron: is required")
        .hasMessageContaining("type: is required");
    assertThat(stored()).isZero();
  }

  @Test
  void addingAnExistingNameIsRefusedAndTheFirstScheduleStays() {
    schedules.add(Definition.of("dup", "@hourly", "UTC", "numbered").withPayload(Map.of("n", 1)));

    assertThatThrownBy(() -> schedules.add(Definition.of("dup", "@daily", "UTC", "other-type")))
        .isInstanceOfSatisfying(
            ScheduleException.class,
            e -> assertThat(e.kind()).isEqualTo(ScheduleException.Kind.ALREADY_EXISTS));
    assertThat(schedules.get("dup").orElseThrow().cron()).isEqualTo("@hourly");
  }

  @Test
  void updateReplacesTheDefinitionKeepingThePauseAndRemoveDeletesIt() {
    schedules.add(Definition.of("edit", "@hourly", "UTC", "numbered")
        .withPayload(Map.of("n", 1))
        .withPriority(75));
    schedules.pause("edit");

    Schedule updated =
        schedules.update(Definition.of("edit", "0 6 * * *", "America/New_York", "any-type")
            .withQueue("elsewhere")
            .withMissed("catch_up", 3));

    assertThat(updated.cron()).isEqualTo("0 6 * * *");
    assertThat(updated.zone()).isEqualTo("America/New_York");
    assertThat(updated.type()).isEqualTo("any-type");
    assertThat(updated.queue()).isEqualTo("elsewhere");
    assertThat(updated.priority())
        .isEqualTo(50); // left out: the default again (a replace, not a patch)
    assertThat(updated.catchUp()).isEqualTo(3);
    assertThat(updated.paused()).isTrue();
    assertThat(updated.nextRuns().get(0)).isEqualTo(Instant.parse("2026-11-28T11:00:00Z"));

    assertThatThrownBy(
            () -> schedules.update(Definition.of("missing", "@hourly", "UTC", "numbered")))
        .isInstanceOfSatisfying(
            ScheduleException.class,
            e -> assertThat(e.kind()).isEqualTo(ScheduleException.Kind.NOT_FOUND));
    assertThatThrownBy(
            () -> schedules.update(Definition.of("edit", "61 * * * *", "UTC", "numbered")))
        .hasMessageContaining("cron:");
    assertThat(schedules.get("edit").orElseThrow().cron()).isEqualTo("0 6 * * *");

    assertThat(schedules.remove("edit").name()).isEqualTo("edit");
    assertThat(schedules.get("edit")).isEmpty();
    assertThatThrownBy(() -> schedules.remove("edit"))
        .isInstanceOfSatisfying(
            ScheduleException.class,
            e -> assertThat(e.kind()).isEqualTo(ScheduleException.Kind.NOT_FOUND));
  }

  @Test
  void aCodeScheduleCanBePausedResumedAndRunNowButNotUpdatedOrRemoved() throws Exception {
    store.declare(
        List.of(Recurring.of("from-code", "@daily", "UTC", NUMBERED, new Numbered(9))),
        Set.of(NUMBERED.name()));

    assertThat(schedules.pause("from-code").paused()).isTrue();
    assertThat(store.active()).doesNotContain("from-code");
    assertThat(schedules.resume("from-code").paused()).isFalse();
    assertThat(store.active()).contains("from-code");
    assertThatThrownBy(
            () -> schedules.update(Definition.of("from-code", "@hourly", "UTC", "numbered")))
        .isInstanceOfSatisfying(ScheduleException.class, e -> {
          assertThat(e.kind()).isEqualTo(ScheduleException.Kind.DECLARED_IN_CODE);
          assertThat(e).hasMessageContaining("is declared in code");
        });
    assertThatThrownBy(() -> schedules.remove("from-code"))
        .isInstanceOfSatisfying(
            ScheduleException.class,
            e -> assertThat(e.kind()).isEqualTo(ScheduleException.Kind.DECLARED_IN_CODE));
    Schedule kept = schedules.get("from-code").orElseThrow();
    assertThat(kept.cron()).isEqualTo("@daily");
    assertThat(kept.source()).isEqualTo("code");

    EnqueuedJob job = schedules.runNow("from-code");
    assertThat(job.job().payload().path("n").asInt()).isEqualTo(9);
    assertThatThrownBy(() -> schedules.pause("missing"))
        .isInstanceOf(ScheduleException.class)
        .hasMessage("no recurring schedule named 'missing'");
  }

  @Test
  void runNowEnqueuesOneJobWithItsOwnKeyAndContextAndBecomesTheLastRunAsDoesAFiredSlot()
      throws Exception {
    schedules.add(
        Definition.of("tick", "* * * * * *", "UTC", "numbered").withPayload(Map.of("n", 4)));
    schedules.pause("tick"); // run now works while paused

    EnqueuedJob first = schedules.runNow("tick");
    EnqueuedJob second = schedules.runNow("tick");

    assertThat(first.job().id()).isNotEqualTo(second.job().id());
    assertThat(first.job().idempotencyKey()).startsWith("recurring:tick:now:");
    assertThat(first.job().context()).startsWith("recurring tick @ ").endsWith("(run now by hand)");
    assertThat(first.job().type()).isEqualTo("numbered");
    RecurringSchedules.LastRun last = schedules.get("tick").orElseThrow().lastRun();
    assertThat(last.jobId()).isEqualTo(second.job().id());
    assertThat(last.state()).isEqualTo(JobState.QUEUED);
    assertThat(last.finishedAt()).isNull();

    // The job finishes: the last run shows the outcome and when.
    db.execute("DELETE FROM pgjobs.jobs WHERE id = '" + second.job().id() + "'");
    JobRows.in(db)
        .id(second.job().id())
        .priority(50)
        .state("failed")
        .attempts(1)
        .maxAttempts(1)
        .insert();
    last = schedules.get("tick").orElseThrow().lastRun();
    assertThat(last.state()).isEqualTo(JobState.FAILED);
    assertThat(last.finishedAt()).isNotNull();

    // A fired slot takes over as the last run.
    schedules.resume("tick");
    db.execute(
        "UPDATE pgjobs.recurring SET last_slot = now() - interval '2 seconds' WHERE name = 'tick'");
    assertThat(store.fire("tick", Instant.now(), Duration.ofMinutes(1)).enqueued())
        .isPositive();
    List<Job> fired = client
        .list(io.pgjobs.JobFilter.builder().text("recurring tick @").limit(100).build())
        .jobs();
    Job newestSlot = fired.stream()
        .filter(j -> !j.idempotencyKey().contains(":now:"))
        .max(java.util.Comparator.comparing(Job::idempotencyKey))
        .orElseThrow();
    assertThat(schedules.get("tick").orElseThrow().lastRun().jobId()).isEqualTo(newestSlot.id());
  }
}
