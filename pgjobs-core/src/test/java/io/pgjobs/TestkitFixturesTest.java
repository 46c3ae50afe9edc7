package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.testkit.Await;
import io.pgjobs.testkit.JobRows;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The testkit's job fixtures against the real schema: {@link JobRows} plants a job in every state the
 * client then reads as such, and {@link Await#awaitState} returns at once or fails naming what it saw.
 */
class TestkitFixturesTest extends PgJobsTestBase {

  @ParameterizedTest
  @EnumSource(JobState.class)
  void aPlantedJobReadsBackInItsState(JobState state) {
    UUID id = JobRows.in(db).state(state.value()).type("parked").queue("parked").insert();

    Job job = client.get(id).orElseThrow();
    assertThat(job.state()).isEqualTo(state);
    assertThat(job.type()).isEqualTo("parked");
    assertThat(job.attempts())
        .isEqualTo(
            state == JobState.QUEUED || state == JobState.RETRYING || state == JobState.BLOCKED
                ? 0
                : 1);
  }

  @Test
  void plantsManyInOneStatementWithTheColumnsGiven() {
    Instant runAt = Instant.now().plus(1, ChronoUnit.HOURS).truncatedTo(ChronoUnit.MILLIS);
    JobRows.in(db).queue("later").priority(7).runAt(runAt).payload("{\"n\": 2}").insert(25);

    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE queue = 'later' AND priority = 7"))
        .isEqualTo(25);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE run_at = '" + runAt + "'"))
        .isEqualTo(25);
  }

  @Test
  void anyTextGoesInAsItIs() {
    String type = "\u0001".repeat(255);
    UUID id = JobRows.in(db).state("failed").type(type).errors("[]").insert();

    assertThat(client.get(id).orElseThrow().type()).isEqualTo(type);
  }

  @Test
  void awaitStateReturnsTheJobInThatState() {
    UUID id = JobRows.in(db).state("succeeded").insert();

    assertThat(awaitState(id, JobState.SUCCEEDED).id()).isEqualTo(id);
  }

  @Test
  void awaitStateFailsWithTheLastStateSeen() {
    UUID id = JobRows.in(db).state("running").insert();

    assertThatThrownBy(() -> awaitState(id, JobState.SUCCEEDED, Duration.ofMillis(100)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(id.toString())
        .hasMessageContaining("last seen: RUNNING");
  }
}
