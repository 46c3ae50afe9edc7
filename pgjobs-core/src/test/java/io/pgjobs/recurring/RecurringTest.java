package io.pgjobs.recurring;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.Job;
import io.pgjobs.JobFilter;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.maintenance.Maintenance;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Recurring schedules stored and fired against the real database; slot times from an injected "now". */
class RecurringTest extends PgJobsTestBase {
  private static final Duration MISSED_AFTER = Duration.ofSeconds(3);
  private static final Instant T0 = Instant.parse("2026-11-26T10:00:00Z");
  private RecurringStore store;

  @BeforeEach
  void fresh() {
    db.execute("DELETE FROM pgjobs.recurring");
    store = new RecurringStore(db.dataSource(), "pgjobs");
  }

  private void declare(Recurring r) throws Exception {
    store.declare(List.of(r), Set.of(r.jobType()));
  }

  private static Recurring everySecond(String name, MissedSlots missed) {
    return Recurring.of(name, "* * * * * *", "UTC", NUMBERED, new Numbered(7)).withMissed(missed);
  }

  private void lastSlot(String name, Instant at) {
    db.execute("UPDATE pgjobs.recurring SET last_slot = '" + at + "' WHERE name = '" + name + "'");
  }

  private static List<Job> jobsOf(String name) {
    return client
        .list(JobFilter.builder().text("recurring " + name + " @").limit(1000).build())
        .jobs();
  }

  @Test
  void eachSlotIsEnqueuedOnceWithItsKeyAndContextEvenWhenFiredTwice() throws Exception {
    declare(everySecond("tick", MissedSlots.LATEST));
    lastSlot("tick", T0);

    RecurringStore.Fired first =
        store.fire("tick", T0.plusSeconds(5), Maintenance.DEFAULT_RECURRING_MISSED_AFTER);
    assertThat(first.enqueued()).isEqualTo(5);
    assertThat(store
            .fire("tick", T0.plusSeconds(5), Maintenance.DEFAULT_RECURRING_MISSED_AFTER)
            .enqueued())
        .isZero();
    // A second leader that read the schedule before the first one's write (here: its last slot put
    // back) fires the same slots again: their keys already exist, no job is added.
    lastSlot("tick", T0);
    store.fire("tick", T0.plusSeconds(5), Maintenance.DEFAULT_RECURRING_MISSED_AFTER);

    List<Job> jobs = jobsOf("tick");
    assertThat(jobs).hasSize(5);
    assertThat(jobs)
        .extracting(Job::idempotencyKey)
        .doesNotHaveDuplicates()
        .allSatisfy(k -> assertThat(k).startsWith("recurring:tick:2026-11-26T10:00:0"));
    assertThat(jobs).extracting(Job::context).contains("recurring tick @ 2026-11-26T10:00:05Z");
    assertThat(jobs.get(0).payload().path("n").asInt()).isEqualTo(7);
  }

  @Test
  void missedSlotsFollowTheirPolicy() throws Exception {
    store.declare(
        List.of(
            everySecond("skipping", MissedSlots.SKIP),
            everySecond("latest", MissedSlots.LATEST),
            everySecond("three", MissedSlots.catchUp(3))),
        Set.of(NUMBERED.name()));
    for (String name : List.of("skipping", "latest", "three")) {
      lastSlot(name, T0); // nothing ran for 100 slots
    }
    Instant now = T0.plusSeconds(100);

    RecurringStore.Fired skipping = store.fire("skipping", now, MISSED_AFTER);
    RecurringStore.Fired latest = store.fire("latest", now, MISSED_AFTER);
    RecurringStore.Fired three = store.fire("three", now, MISSED_AFTER);

    // Slots 97..100 s are at most MISSED_AFTER (3 s) old: on time. 1..96 were missed.
    assertThat(skipping).isEqualTo(new RecurringStore.Fired(4, 96));
    assertThat(latest).isEqualTo(new RecurringStore.Fired(1, 99));
    assertThat(three).isEqualTo(new RecurringStore.Fired(7, 93));
    assertThat(jobsOf("latest"))
        .extracting(Job::context)
        .containsExactly(
            "recurring latest @ 2026-11-26T10:01:40Z"); // after a gap: the latest due slot only
    assertThat(store.fire("three", now, MISSED_AFTER).enqueued()).isZero();
  }

  /** Issue 27.5: a per-5-seconds schedule restarted after 42 s enqueued 9 jobs at once with "latest". */
  @Test
  void aRestartAfterAGapFiresOneJobWithLatestUnderTheDefaultMissedAfter() throws Exception {
    declare(Recurring.of("five", "*/5 * * * * *", "UTC", NUMBERED, new Numbered(5))
        .withMissed(MissedSlots.LATEST));
    lastSlot("five", T0);

    RecurringStore.Fired fired =
        store.fire("five", T0.plusSeconds(42), Maintenance.DEFAULT_RECURRING_MISSED_AFTER);

    assertThat(fired).isEqualTo(new RecurringStore.Fired(1, 7));
    assertThat(jobsOf("five"))
        .extracting(Job::context)
        .containsExactly("recurring five @ 2026-11-26T10:00:40Z");
  }

  /** Within the missed-after window nothing was missed: every due slot fires (a leader change, jitter). */
  @Test
  void slotsWithinTheMissedAfterWindowAllFireWhateverThePolicy() throws Exception {
    declare(everySecond("jitter", MissedSlots.LATEST));
    lastSlot("jitter", T0);

    RecurringStore.Fired fired =
        store.fire("jitter", T0.plusSeconds(6), Maintenance.DEFAULT_RECURRING_MISSED_AFTER);

    assertThat(fired).isEqualTo(new RecurringStore.Fired(6, 0));
  }

  @Test
  void twoDaysPausedEverySecondFireOnlyTheLatestSlot() throws Exception {
    declare(everySecond("paused", MissedSlots.LATEST));
    lastSlot("paused", T0);
    Instant now = T0.plus(Duration.ofDays(2)); // 172,800 slots since the last one handled

    RecurringStore.Fired fired = store.fire("paused", now, MISSED_AFTER);

    // 172,796 missed (older than 3 s), 4 on time: after the gap only the latest due slot fires.
    // Beyond MISSED_COUNTED the skipped ones are not read one by one: their count is a lower bound.
    assertThat(fired.enqueued()).isEqualTo(1);
    assertThat(fired.moreSkipped()).isTrue();
    assertThat(fired.skipped()).isGreaterThan(RecurringStore.MISSED_COUNTED).isLessThan(172_799);
    assertThat(jobsOf("paused"))
        .extracting(Job::context)
        .containsExactly("recurring paused @ 2026-11-28T10:00:00Z");
    assertThat(store.fire("paused", now, MISSED_AFTER)).isEqualTo(new RecurringStore.Fired(0, 0));
  }

  @Test
  void tenMinutesPausedEverySecondCountEachSkippedSlot() throws Exception {
    declare(everySecond("ten", MissedSlots.catchUp(2)));
    lastSlot("ten", T0);

    RecurringStore.Fired fired = store.fire("ten", T0.plus(Duration.ofMinutes(10)), MISSED_AFTER);

    // 596 missed: the newest 2 fire, 594 are skipped; 4 on time.
    assertThat(fired).isEqualTo(new RecurringStore.Fired(6, 594));
  }

  @Test
  void aDailyScheduleAtTwoThirtyInBerlinFiresOnceOnBothTransitionDays() throws Exception {
    ZoneId berlin = ZoneId.of("Europe/Berlin");
    declare(Recurring.of("berlin", "30 2 * * *", "Europe/Berlin", NUMBERED, new Numbered(1)));
    Instant beforeSpring =
        LocalDateTime.parse("2026-03-28T12:00").atZone(berlin).toInstant();
    lastSlot("berlin", beforeSpring);
    store.fire(
        "berlin",
        LocalDateTime.parse("2026-03-30T12:00").atZone(berlin).toInstant(),
        Duration.ofDays(7));
    Instant beforeFall = LocalDateTime.parse("2026-10-24T12:00").atZone(berlin).toInstant();
    lastSlot("berlin", beforeFall);
    store.fire(
        "berlin",
        LocalDateTime.parse("2026-10-26T12:00").atZone(berlin).toInstant(),
        Duration.ofDays(7));

    // March 29 has no 02:30 (skipped); March 30 fires; October 25 fires once (not twice); October
    // 26 fires.
    assertThat(jobsOf("berlin"))
        .extracting(Job::context)
        .containsExactlyInAnyOrder(
            "recurring berlin @ 2026-03-30T00:30:00Z",
            "recurring berlin @ 2026-10-25T00:30:00Z",
            "recurring berlin @ 2026-10-26T01:30:00Z");
  }

  @Test
  void aCodeScheduleNoLongerDeclaredIsDisabledAndDeclaringItAgainEnablesIt() throws Exception {
    Recurring a = everySecond("a", MissedSlots.LATEST);
    Recurring b = everySecond("b", MissedSlots.LATEST);
    store.declare(List.of(a, b), Set.of(NUMBERED.name()));
    assertThat(store.active()).containsExactly("a", "b");

    assertThat(store.declare(List.of(a), Set.of(NUMBERED.name()))).containsExactly("b");
    assertThat(store.active()).containsExactly("a");
    assertThat(store.fire("b", Instant.now().plusSeconds(5), MISSED_AFTER).enqueued())
        .isZero();

    store.declare(List.of(a, b), Set.of(NUMBERED.name()));
    assertThat(store.active()).containsExactly("a", "b");
  }
}
