package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class SmokeTest extends PgJobsTestBase {
  @Test
  void enqueuedJobRunsAndSucceedsWithOutput() {
    start(worker().register(NUMBERED, (ctx, p) -> Map.of("double", p.n() * 2)));
    EnqueuedJob enqueued = client.enqueue(NUMBERED, new Numbered(21));
    assertThat(enqueued.replayed()).isFalse();
    Job done = awaitState(enqueued.job().id(), JobState.SUCCEEDED);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.output().get("double").asInt()).isEqualTo(42);
    assertThat(done.finishedAt()).isNotNull();
  }
}
