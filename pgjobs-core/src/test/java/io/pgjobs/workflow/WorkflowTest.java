package io.pgjobs.workflow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.store.WorkflowStore;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Durable step workflows against the real database and worker: a step that ended is not run again when
 * the run executes again (a retry, a sleep's end), compensations run in reverse order once when the run
 * fails for good, a sleep lets the lane go, an optional step's failure is recorded and passed over, and
 * the workflow's clock is the same in every execution.
 */
class WorkflowTest extends PgJobsTestBase {
  /** A workflow's input. */
  public record Order(String id) {}

  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
  private final List<String> log = new CopyOnWriteArrayList<>();

  private int call(String step) {
    log.add(step);
    return calls.computeIfAbsent(step, k -> new AtomicInteger()).incrementAndGet();
  }

  private int calls(String step) {
    return calls.getOrDefault(step, new AtomicInteger()).get();
  }

  private static List<String> recorded(UUID run) throws Exception {
    return new WorkflowStore(db.dataSource(), "pgjobs")
        .steps(run).stream().map(s -> s.name() + " " + s.state()).toList();
  }

  /**
   * A trip: book a flight and a hotel (each compensated by a "cancel" line in the log), sleep an hour,
   * then pay.
   */
  private Void trip(WorkflowContext ctx, Order order) throws Exception {
    ctx.step("flight", String.class, () -> "F" + call("flight"))
        .compensate(f -> log.add("cancel " + f))
        .run();
    ctx.step("hotel", String.class, () -> "H" + call("hotel"))
        .compensate(h -> log.add("cancel " + h))
        .run();
    ctx.sleep(Duration.ofHours(1));
    ctx.step("pay", Void.class, () -> {
          call("pay");
          return null;
        })
        .run();
    return null;
  }

  @Test
  void aStepThatEndedIsNotRunAgainWhenTheRunIsRetried() throws Exception {
    WorkflowType<Order> fulfil = WorkflowType.of("wf-fulfil", Order.class).withMaxAttempts(3);
    start(worker().workflow(fulfil, (ctx, order) -> {
      String receipt = ctx.step("charge", String.class, () -> {
            call("charge");
            return "receipt-" + order.id();
          })
          .run();
      ctx.step("ship", Void.class, () -> {
            if (call("ship") == 1) {
              throw new IllegalStateException("carrier down");
            }
            return null;
          })
          .run();
      return Map.of("receipt", receipt);
    }));

    UUID run = client.enqueue(fulfil.jobType(), new Order("o-1")).job().id();
    Job done = awaitState(run, JobState.SUCCEEDED, Duration.ofSeconds(30));

    assertThat(calls("charge"))
        .as("the charge, recorded before the first attempt failed")
        .isOne();
    assertThat(calls("ship")).isEqualTo(2);
    assertThat(done.attempts()).isEqualTo(2);
    assertThat(done.output().toString()).contains("receipt-o-1");
    assertThat(recorded(run)).containsExactly("charge done", "ship done");
  }

  @Test
  void aRunThatFailsForGoodCompensatesItsDoneStepsInReverseOrderOnce() throws Exception {
    WorkflowType<Order> book = WorkflowType.of("wf-book-trip", Order.class).withMaxAttempts(2);
    start(worker().workflow(book, (ctx, order) -> {
      ctx.step("flight", String.class, () -> "F" + call("flight"))
          .compensate(f -> log.add("cancel " + f))
          .run();
      ctx.step("hotel", String.class, () -> "H" + call("hotel"))
          .compensate(h -> log.add("cancel " + h))
          .run();
      ctx.step("car", String.class, () -> {
            call("car");
            throw new IllegalStateException("no cars left");
          })
          .run();
      return null;
    }));

    UUID run = client.enqueue(book.jobType(), new Order("o-2")).job().id();
    awaitState(run, JobState.FAILED, Duration.ofSeconds(30));

    assertThat(calls("flight")).isOne();
    assertThat(calls("hotel")).isOne();
    assertThat(calls("car")).isEqualTo(2);
    // Replayed on the second attempt (recorded results), compensated once, the last step first.
    assertThat(log.stream().filter(l -> l.startsWith("cancel")).toList())
        .containsExactly("cancel H1", "cancel F1");
    assertThat(recorded(run)).containsExactly("flight compensated", "hotel compensated");
  }

  /** A plain job that notes when it ran. */
  public record Ping(String note) {}

  @Test
  void aSleepLetsTheLaneGoAndTheRunResumesAfterItsRecordedSteps() throws Exception {
    WorkflowType<Order> remind = WorkflowType.of("wf-remind", Order.class);
    JobType<Ping> ping = JobType.of("wf-ping", Ping.class);
    Map<String, Instant> when = new ConcurrentHashMap<>();
    // One lane: the ping can only run while the workflow sleeps if the sleep gave the lane back.
    start(worker()
        .queue("default", 1)
        .register(ping, (ctx, p) -> {
          when.put("ping", Instant.now());
          return null;
        })
        .workflow(remind, (ctx, order) -> {
          ctx.step("before", Void.class, () -> {
                call("before");
                return null;
              })
              .run();
          ctx.sleep(Duration.ofSeconds(2));
          ctx.step("after", Void.class, () -> {
                call("after");
                when.put("after", Instant.now());
                return null;
              })
              .run();
          return null;
        }));

    UUID run = client.enqueue(remind.jobType(), new Order("o-3")).job().id();
    await().atMost(Duration.ofSeconds(20)).until(() -> calls("before") == 1);
    UUID pinged = client.enqueue(ping, new Ping("while it sleeps")).job().id();
    awaitState(pinged, JobState.SUCCEEDED);
    Job done = awaitState(run, JobState.SUCCEEDED, Duration.ofSeconds(30));

    assertThat(when.get("ping")).isBefore(when.get("after"));
    assertThat(calls("before")).isOne();
    assertThat(calls("after")).isOne();
    assertThat(done.snoozes()).as("the sleep snoozed the run's job").isPositive();
    assertThat(done.attempts()).as("a sleep spends no attempt").isOne();
    assertThat(recorded(run)).containsExactly("before done", "sleep#1 done", "after done");
  }

  @Test
  void aRunKeepsTheVersionItStartedUnderWhenNewerCodeResumesIt() throws Exception {
    WorkflowType<Order> v1 = WorkflowType.of("wf-versioned", Order.class);
    WorkflowType<Order> v2 = v1.withVersion(2);
    // Version 1's code never asks for the version; version 2 adds a step for new runs.
    io.pgjobs.worker.JobWorker old = start(worker().workflow(v1, (ctx, order) -> {
      ctx.step("a", Void.class, () -> null).run();
      ctx.sleep(Duration.ofSeconds(2));
      ctx.step("b", Void.class, () -> null).run();
      return null;
    }));
    UUID started = client.enqueue(v1.jobType(), new Order("old")).job().id();
    await().atMost(Duration.ofSeconds(20)).until(() -> recorded(started).contains("sleep#1 done"));
    old.close();

    Map<String, Integer> versions = new ConcurrentHashMap<>();
    start(worker().workflow(v2, (ctx, order) -> {
      ctx.step("a", Void.class, () -> null).run();
      int version = ctx.version();
      versions.put(order.id(), version);
      if (version >= 2) {
        ctx.step("new", Void.class, () -> {
              call("new " + order.id());
              return null;
            })
            .run();
      }
      ctx.sleep(Duration.ofSeconds(2));
      ctx.step("b", Void.class, () -> null).run();
      return null;
    }));
    awaitState(started, JobState.SUCCEEDED, Duration.ofSeconds(30));
    UUID fresh = client.enqueue(v2.jobType(), new Order("new")).job().id();
    awaitState(fresh, JobState.SUCCEEDED, Duration.ofSeconds(30));

    assertThat(versions).containsEntry("old", 1).containsEntry("new", 2);
    assertThat(calls("new old"))
        .as("the run started under version 1 keeps its steps")
        .isZero();
    assertThat(calls("new new")).isOne();
    assertThat(recorded(started))
        .containsExactly("a done", "sleep#1 done", "(version) done", "b done");
    assertThat(recorded(fresh))
        .containsExactly("a done", "(version) done", "new done", "sleep#1 done", "b done");
  }

  /** A job a workflow awaits: it doubles {@code n}, or fails when {@code n} is negative. */
  public record Half(int n) {}

  @Test
  void aRunAwaitsTheJobsItStartedWithoutALaneAndResumesOnceWhenTheLastEnds() throws Exception {
    WorkflowType<Order> fanOut = WorkflowType.of("wf-fan-out", Order.class);
    JobType<Half> half = JobType.of("wf-half", Half.class).withMaxAttempts(1);
    AtomicInteger executions = new AtomicInteger();
    AtomicInteger halves = new AtomicInteger();
    // One lane for the run and its 20 jobs: they can only run if the waiting run let the lane go.
    start(worker()
        .queue("default", 1)
        .register(half, (ctx, h) -> {
          halves.incrementAndGet();
          if (h.n() < 0) {
            throw new IllegalStateException("no half of " + h.n());
          }
          return Map.of("doubled", h.n() * 2);
        })
        .workflow(fanOut, (ctx, order) -> {
          executions.incrementAndGet();
          ctx.step("before", Void.class, () -> {
                call("before");
                return null;
              })
              .run();
          List<AwaitedJob> done = ctx.awaitJobs("halves", jobs -> {
            call("spawn");
            for (int i = 1; i <= 19; i++) {
              jobs.add(half, new Half(i));
            }
            jobs.add(half, new Half(-1));
          });
          int sum = 0;
          int failed = 0;
          for (AwaitedJob j : done) {
            if (j.succeeded()) {
              sum += ((Number) j.output(Map.class).get("doubled")).intValue();
            } else {
              failed++;
              assertThat(j.lastError()).contains("no half of -1");
            }
          }
          return Map.of("sum", sum, "failed", failed);
        }));

    UUID run = client.enqueue(fanOut.jobType(), new Order("o-fan")).job().id();
    Job done = awaitState(run, JobState.SUCCEEDED, Duration.ofSeconds(60));

    assertThat(done.output().get("sum").asInt()).isEqualTo(19 * 20); // 2 * (1 + ... + 19)
    assertThat(done.output().get("failed").asInt()).isOne();
    assertThat(halves.get()).as("each awaited job ran once").isEqualTo(20);
    assertThat(calls("spawn")).as("the jobs were started once").isOne();
    assertThat(calls("before")).isOne();
    assertThat(executions.get())
        .as("the run executed to start them, then once more when the last ended")
        .isEqualTo(2);
    assertThat(done.attempts()).as("waiting spends no attempt").isOne();
    assertThat(recorded(run)).containsExactly("before done", "jobs:halves done");
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE parent_id = '" + run + "'"))
        .as("the awaited jobs are the run's children")
        .isEqualTo(20);
  }

  @Test
  void anOptionalStepsFailureIsRecordedAndTheClockIsTheSameInEveryExecution() throws Exception {
    WorkflowType<Order> report = WorkflowType.of("wf-report", Order.class).withMaxAttempts(2);
    List<Instant> clocks = new CopyOnWriteArrayList<>();
    start(worker().workflow(report, (ctx, order) -> {
      clocks.add(ctx.workflowTime());
      String extra = ctx.step("enrich", String.class, () -> {
            call("enrich");
            throw new IllegalStateException("enrichment service down");
          })
          .optional()
          .run();
      if (call("body") == 1) {
        throw new IllegalStateException("first attempt fails after the optional step");
      }
      return Map.of("extra", String.valueOf(extra));
    }));

    UUID run = client.enqueue(report.jobType(), new Order("o-4")).job().id();
    Job done = awaitState(run, JobState.SUCCEEDED, Duration.ofSeconds(30));

    assertThat(calls("enrich")).as("skipped once, not tried again").isOne();
    assertThat(done.output().toString()).contains("null");
    assertThat(clocks).hasSize(2);
    assertThat(clocks.get(1)).isEqualTo(clocks.get(0));
    assertThat(recorded(run)).containsExactly("(started) done", "enrich skipped");
  }

  /** A signal's payload. */
  public record Approval(String by) {}

  @Test
  void aRunWaitsForItsSignalWithoutALaneAndResumesWithItsPayload() throws Exception {
    WorkflowType<Order> approve = WorkflowType.of("wf-approve", Order.class);
    start(worker().workflow(approve, (ctx, order) -> {
      ctx.step("request", Void.class, () -> {
            call("request");
            return null;
          })
          .run();
      Approval a = ctx.awaitSignal("approved", Approval.class, Duration.ofMinutes(5));
      return Map.of("approved_by", a.by());
    }));

    UUID run = client.enqueue(approve.jobType(), new Order("o-5")).job().id();
    // Waiting: its job is asleep (queued, due later), not holding a lane.
    await().atMost(Duration.ofSeconds(20)).until(() -> {
      Job j = client.get(run).orElseThrow();
      return j.state() == JobState.QUEUED && j.snoozes() > 0 && j.runAt().isAfter(Instant.now());
    });
    assertThat(client.signalWorkflow(run, "approved", new Approval("ada"))).isTrue();
    Job done = awaitState(run, JobState.SUCCEEDED, Duration.ofSeconds(20));

    assertThat(done.output().toString()).contains("ada");
    assertThat(calls("request")).isOne();
    assertThat(client.signalWorkflow(run, "approved", new Approval("bob")))
        .as("a second signal of the name is not stored")
        .isFalse();
    assertThat(recorded(run))
        .containsExactly("request done", "signal-deadline:approved done", "signal:approved done");
  }

  @Test
  void aSignalSentBeforeTheWaitCountsAndAWaitWithoutOneTimesOutForGood() throws Exception {
    WorkflowType<Order> gate = WorkflowType.of("wf-gate", Order.class).withMaxAttempts(2);
    UUID early = client.enqueue(gate.jobType(), new Order("early")).job().id();
    UUID late = client.enqueue(gate.jobType(), new Order("late")).job().id();
    // Sent before any worker runs the workflow.
    assertThat(client.signalWorkflow(early, "go", new Approval("early bird"))).isTrue();
    start(worker().workflow(gate, (ctx, order) -> {
      try {
        return Map.of(
            "by", ctx.awaitSignal("go", Approval.class, Duration.ofSeconds(1)).by());
      } catch (java.util.concurrent.TimeoutException e) {
        if (call("timed-out " + order.id()) == 1) {
          throw new IllegalStateException("fails once after the timeout, to execute again");
        }
        return Map.of("by", "nobody");
      }
    }));

    assertThat(awaitState(early, JobState.SUCCEEDED).output().toString()).contains("early bird");
    Job timedOut = awaitState(late, JobState.SUCCEEDED, Duration.ofSeconds(30));
    assertThat(timedOut.output().toString()).contains("nobody");
    assertThat(calls("timed-out late"))
        .as("the timeout, recorded, is the same the second time")
        .isEqualTo(2);
    assertThat(recorded(late)).containsExactly("signal-deadline:go done", "signal:go skipped");
  }

  @Test
  void aRunPastItsDeadlineWakesFromItsSleepCompensatesItsDoneStepsAndFailsWithoutAnotherAttempt()
      throws Exception {
    WorkflowType<Order> trip = WorkflowType.of("wf-trip-deadline", Order.class)
        .withMaxAttempts(3)
        .withDeadline(Duration.ofSeconds(2));
    start(worker().workflow(trip, this::trip)); // its sleep outlasts the deadline

    UUID run = client.enqueue(trip.jobType(), new Order("o-deadline")).job().id();
    awaitState(run, JobState.FAILED, Duration.ofSeconds(30));

    Job failed = client.get(run).orElseThrow();
    assertThat(failed.errors()).hasSize(1); // no other attempt, though it had 3
    assertThat(failed.errors().get(0).message())
        .contains("passed its deadline (PT2S from its start")
        .contains("before sleep#1");
    assertThat(log.stream().filter(l -> l.startsWith("cancel")).toList())
        .containsExactly("cancel H1", "cancel F1");
    assertThat(calls("pay")).isZero();
    assertThat(calls("flight")).isOne();
    assertThat(recorded(run))
        .containsExactly(
            "(started) done", "flight compensated", "hotel compensated", "sleep#1 done");
  }

  @Test
  void aRunWaitingForASignalPastItsDeadlineStopsAtTheDeadlineAndARunWithinItsDeadlineEndsAsUsual()
      throws Exception {
    WorkflowType<Order> approve =
        WorkflowType.of("wf-approve-deadline", Order.class).withDeadline(Duration.ofSeconds(2));
    start(worker().workflow(approve, (ctx, order) -> {
      ctx.step("prepare", String.class, () -> "P" + call("prepare " + order.id()))
          .compensate(p -> log.add("undo " + p + " " + order.id()))
          .run();
      if (order.id().equals("waits")) {
        ctx.awaitSignal("approved", String.class, Duration.ofHours(1));
      }
      return "done " + order.id();
    }));

    UUID waits = client.enqueue(approve.jobType(), new Order("waits")).job().id();
    UUID quick = client.enqueue(approve.jobType(), new Order("quick")).job().id();
    awaitState(quick, JobState.SUCCEEDED, Duration.ofSeconds(20));
    awaitState(waits, JobState.FAILED, Duration.ofSeconds(30));

    assertThat(client.get(waits).orElseThrow().errors().get(0).message())
        .contains("passed its deadline")
        .contains("before signal:approved");
    assertThat(log.stream().filter(l -> l.startsWith("undo")).toList())
        .containsExactly("undo P1 waits");
    assertThat(calls("prepare waits")).isOne();
    assertThat(recorded(quick)).containsExactly("(started) done", "prepare done");
  }

  @Test
  void aDeadlineIsPositiveAndAtMost366Days() {
    WorkflowType<Order> w = WorkflowType.of("wf-limits", Order.class);
    for (Duration bad :
        new Duration[] {null, Duration.ZERO, Duration.ofSeconds(-1), Duration.ofDays(367)}) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> w.withDeadline(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("a workflow's deadline must be positive and at most PT8784H, was " + bad);
    }
    assertThat(w.withDeadline(Duration.ofDays(366)).deadline()).contains(Duration.ofDays(366));
    assertThat(w.deadline()).isEmpty();
    assertThat(w.withDeadline(Duration.ofMinutes(5))
            .withMaxAttempts(2)
            .withVersion(2)
            .deadline())
        .as("kept by the other with* methods")
        .contains(Duration.ofMinutes(5));
  }

  @Test
  void aRunCancelledWhileItSleepsCompensatesItsDoneStepsAndEndsCancelled() throws Exception {
    WorkflowType<Order> trip = WorkflowType.of("wf-trip", Order.class);
    start(worker().workflow(trip, this::trip));

    UUID run = client.enqueue(trip.jobType(), new Order("o-6")).job().id();
    await().atMost(Duration.ofSeconds(20)).until(() -> {
      Job j = client.get(run).orElseThrow();
      return j.state() == JobState.QUEUED && j.snoozes() > 0;
    });
    assertThat(client.cancelWorkflow(run)).isTrue();
    awaitState(run, JobState.CANCELLED, Duration.ofSeconds(30));

    assertThat(log.stream().filter(l -> l.startsWith("cancel")).toList())
        .containsExactly("cancel H1", "cancel F1");
    assertThat(calls("pay")).isZero();
    assertThat(calls("flight")).isOne();
    assertThat(recorded(run))
        .containsExactly("flight compensated", "hotel compensated", "sleep#1 done");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> client.cancelWorkflow(run))
        .isInstanceOf(io.pgjobs.InvalidJobException.class)
        .hasMessageContaining("has ended");
  }

  @Test
  void aRunCancelledWhileAStepRunsStopsAtItsNextStepAndCompensates() throws Exception {
    WorkflowType<Order> order = WorkflowType.of("wf-order", Order.class);
    java.util.concurrent.CountDownLatch inStep = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    start(worker().workflow(order, (ctx, o) -> {
      ctx.step("reserve", String.class, () -> "R" + call("reserve"))
          .compensate(r -> log.add("release " + r))
          .run();
      ctx.step("slow", String.class, () -> {
            inStep.countDown();
            release.await(); // the cancel arrives while this step runs
            return "S" + call("slow");
          })
          .compensate(r -> log.add("undo " + r))
          .run();
      ctx.step("ship", Void.class, () -> {
            call("ship");
            return null;
          })
          .run();
      return null;
    }));

    UUID run = client.enqueue(order.jobType(), new Order("o-7")).job().id();
    assertThat(inStep.await(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    Thread cancel = Thread.ofVirtual().start(() -> client.cancelWorkflow(run));
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> count(
                "SELECT count(*) FROM pgjobs.workflow_signals WHERE name = '(cancel)' AND run_id = '"
                    + run + "'")
            == 1);
    release.countDown();
    cancel.join();
    awaitState(run, JobState.CANCELLED, Duration.ofSeconds(30));

    assertThat(calls("ship")).as("the step after the cancel never ran").isZero();
    assertThat(log.stream()
            .filter(l -> l.startsWith("undo") || l.startsWith("release"))
            .toList())
        .containsExactly("undo S1", "release R1");
    assertThat(recorded(run)).containsExactly("reserve compensated", "slow compensated");
  }
}
