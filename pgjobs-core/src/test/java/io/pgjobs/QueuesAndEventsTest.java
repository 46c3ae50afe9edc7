package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.events.JobEvent;
import io.pgjobs.events.JobEventListener;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class QueuesAndEventsTest extends PgJobsTestBase {

  @Test
  void pausedQueueIsNotClaimedUntilResumed() {
    client.pauseQueue("default");
    start(worker()
        .register(NUMBERED, (ctx, p) -> null)
        .queue("default", 1)
        .queue("other", 1)
        .pollInterval(Duration.ofMillis(50)));
    UUID id = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    // Evidence that the worker is claiming: a job of an unpaused queue, enqueued after, runs.
    UUID other = client
        .enqueue(
            NUMBERED, new Numbered(2), EnqueueOptions.builder().queue("other").build())
        .job()
        .id();
    awaitState(other, JobState.SUCCEEDED);
    assertThat(client.get(id).orElseThrow().state()).isEqualTo(JobState.QUEUED);
    assertThat(client.queues())
        .filteredOn(q -> q.name().equals("default"))
        .singleElement()
        .satisfies(q -> {
          assertThat(q.paused()).isTrue();
          assertThat(q.count(JobState.QUEUED)).isEqualTo(1);
          assertThat(q.oldestDueAge()).isNotNull();
        });

    client.resumeQueue("default");

    awaitState(id, JobState.SUCCEEDED, Duration.ofSeconds(10));
    assertThat(client.queues())
        .filteredOn(q -> q.name().equals("default"))
        .singleElement()
        .satisfies(q -> assertThat(q.paused()).isFalse());
  }

  @Test
  void eventsReportStateChangesAndProgressInOrder() throws Exception {
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    CountDownLatch release = new CountDownLatch(1);
    try (JobEventListener listener =
        new JobEventListener(db.dataSource(), client.eventsChannel())) {
      listener.subscribe(batch -> events.addAll(batch.events()));
      listener.start();
      await().atMost(Duration.ofSeconds(10)).until(listener::isListening);
      start(worker().register(NUMBERED, (ctx, p) -> {
        ctx.progress(40, "forty");
        release.await(10, TimeUnit.SECONDS);
        ctx.progress(100, "done");
        return null;
      }));
      UUID id = client.enqueue(NUMBERED, new Numbered(7)).job().id();
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() ->
              events.stream().anyMatch(e -> e.jobId().equals(id) && "progress".equals(e.kind())));
      release.countDown();
      awaitState(id, JobState.SUCCEEDED);
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> events.stream()
              .anyMatch(e -> e.jobId().equals(id) && e.state() == JobState.SUCCEEDED));

      List<String> sequence = events.stream()
          .filter(e -> e.jobId().equals(id))
          .map(e -> e.kind().equals("progress")
              ? "progress " + e.progress()
              : e.state().value())
          .toList();
      assertThat(sequence)
          .containsSubsequence("queued", "running", "progress 40", "progress 100", "succeeded");
    }
  }

  @Test
  void statsCountFinishedJobsPerMinuteByTypeAndState() {
    start(worker().register(NUMBERED, (ctx, p) -> {
      if (p.n() < 0) {
        throw new DiscardJobException("negative");
      }
      return null;
    }));
    UUID ok1 = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    UUID ok2 = client.enqueue(NUMBERED, new Numbered(2)).job().id();
    UUID bad = client.enqueue(NUMBERED, new Numbered(-1)).job().id();
    awaitState(ok1, JobState.SUCCEEDED);
    awaitState(ok2, JobState.SUCCEEDED);
    awaitState(bad, JobState.FAILED);

    List<MinuteStats> stats = client.statsPerMinute(Duration.ofHours(1));

    assertThat(stats.stream()
            .filter(s -> s.state() == JobState.SUCCEEDED)
            .mapToLong(MinuteStats::count)
            .sum())
        .isEqualTo(2);
    assertThat(stats.stream()
            .filter(s -> s.state() == JobState.FAILED)
            .mapToLong(MinuteStats::count)
            .sum())
        .isEqualTo(1);
    assertThat(stats).allSatisfy(s -> assertThat(s.type()).isEqualTo("numbered"));
  }

  @Test
  void workersAreListedWithTheirQueuesAndRemovedOnClose() {
    JobWorker worker = start(worker().register(NUMBERED, (ctx, p) -> null).queue("default", 7));
    assertThat(client.workers()).singleElement().satisfies(w -> {
      assertThat(w.id()).isEqualTo(worker.workerId());
      assertThat(w.queues()).isEqualTo(Map.of("default", 7));
      assertThat(w.jobTypes()).containsExactly("numbered");
    });
    worker.close();
    assertThat(client.workers()).isEmpty();
  }
}
