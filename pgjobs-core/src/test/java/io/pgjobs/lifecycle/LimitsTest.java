package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.CancelCounts;
import io.pgjobs.CancelResult;
import io.pgjobs.DiscardJobException;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.InvalidJobException;
import io.pgjobs.Job;
import io.pgjobs.JobError;
import io.pgjobs.JobFilter;
import io.pgjobs.JobPage;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsException;
import io.pgjobs.RetryPolicy;
import io.pgjobs.SnoozeJobException;
import io.pgjobs.events.JobEvent;
import io.pgjobs.events.JobEventBatch;
import io.pgjobs.events.JobEventListener;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.store.WorkerStore;
import io.pgjobs.testkit.Exclusive;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The whole lifecycle at every limit the API allows, at once: 255-character queue and type names (of
 * every character class a name may hold), a 10,000-job bulk enqueue, a claim of 10,000 jobs in one
 * statement, 10,000 handlers running at once on one queue, the largest completion batch, 1 MiB payloads
 * and outputs, the longest context and idempotency key, the extreme priorities and attempt counts, outputs
 * with U+0000 and with every other awkward character; enqueue (single and bulk), claim, success, failure,
 * retry, discard, snooze, cancel, cancelAll, retryAll, rescue of a dead worker's jobs and events to a
 * listener. Every job ends in the state it should, with the attempts it should, and nothing stays
 * running.
 *
 * <p>The durations of a job (timeout, retry delays, snooze, enqueue delay) are tested at their largest
 * too, and just past it, where they are refused. The worker's timing settings (heartbeat, stale and
 * dead-worker thresholds) stay at their defaults: their extreme values are about timing on a loaded
 * machine, not about sizes, and other tests cover them.
 */
@Tag(Tags.SOAK)
@Exclusive
class LimitsTest extends LifecycleTestBase {
  /** The longest queue and type name: 255 characters. */
  static final int NAME_MAX = 255;
  /**
   * Concurrency, claim batch and completion batch at the largest values JobWorker.Builder accepts (the
   * issue said concurrency 1,000; the builder allows 10,000, so that is the limit tested).
   */
  static final int CONCURRENCY_MAX = 10_000;

  static final int CLAIM_BATCH_MAX = 10_000;
  static final int COMPLETION_BATCH_MAX = 100_000;
  /** The bulk enqueue and the claim, at 10,000 jobs. */
  static final int BULK = 10_000;
  /** 1 MiB: no payload limit exists in pgjobs (jsonb's own is 255 MB), so this is the size the issue names. */
  static final int MIB = 1_048_576;

  /**
   * The deadline of every wait for progress: thousands of jobs at the limits take most of a minute on a
   * loaded machine (a CI run with a load average of 17–22 failed 5,000 jobs in more than 60 s). Only a
   * failing run waits it out.
   */
  static final Duration WAIT = Duration.ofMinutes(3);

  static final PayloadCodec CODEC = new PayloadCodec(PayloadCodec.DEFAULT_MAPPER);

  /**
   * Every character that is awkward somewhere on the way (Java, JSON, Jackson, the JDBC driver, COPY's
   * text format, jsonb, text columns, SQL, logs) except U+0000, which jsonb and text columns cannot hold
   * at all. Lone surrogates are left out too: they are not characters and have no UTF-8 form (the driver
   * would send '?').
   */
  static final String AWKWARD = awkward();

  private static String awkward() {
    StringBuilder s = new StringBuilder();
    s.append("quote \" apostrophe ' backtick ` backslash \\ slash / ");
    s.append("C0:");
    for (char c = '\u0001'; c <= '\u001f'; c++) {
      s.append(c);
    }
    s.append(" DEL \u007f C1 \u0080\u0085\u009f nbsp \u00a0 shy \u00ad zwsp \u200b zwj \u200d");
    s.append(
        " LS \u2028 PS \u2029 BOM \ufeff RTL-override \u202e abc \u202c LRO \u202d isolates \u2066\u2067\u2068\u2069");
    s.append(
        " combining e\u0301 a\u0308\u0323 z\u0336\u0336\u0336 emoji \uD83D\uDE00 family \uD83D\uDC69\u200D\uD83D\uDC69\u200D\uD83D\uDC67");
    s.append(
        " flag \uD83C\uDDFA\uD83C\uDDF3 clef \uD834\uDD1E max-code-point \uDBFF\uDFFF nonchars \uFFFF \uFFFE");
    s.append(" replacement \uFFFD cjk 漢字 arabic مرحبا hebrew שלום");
    s.append(" sql '; DROP TABLE pgjobs.jobs; -- $$ $q$ E'\\x00' /* */ {schema} ? $1 %s %n");
    s.append(
        " json {\"a\":[1,\"b\",null],\"c\":{}} escaped-nul-text \\u0000 \\u0000 copy \\N \\. \n\\.\n \\t \t end");
    s.append(" log ${jndi:ldap://example.invalid/x} <script>alert(1)</script> &amp; ");
    return s.toString();
  }

  /** A name of exactly 255 characters, of every kind a name may hold (letters, digits, {@code _ . : - /}). */
  static String longName(String prefix) {
    String fill = "Zz09_.:-/aA";
    StringBuilder s = new StringBuilder(prefix);
    for (int i = 0; s.length() < NAME_MAX; i++) {
      s.append(fill.charAt(i % fill.length()));
    }
    return s.toString();
  }

  /** {@code base} repeated and then padded with ASCII to exactly {@code length} chars, no pair split. */
  static String exactly(int length, String base) {
    StringBuilder s = new StringBuilder(length);
    while (s.length() + base.length() <= length) {
      s.append(base);
    }
    while (s.length() < length) {
      s.append('x');
    }
    return s.toString();
  }

  /** What a job does, decided by its payload. */
  public record Work(String mode, int n, String text) {}

  // ---------------------------------------------------------------- 1. every outcome, every limit
  // at once

  static final String Q1 = longName("limits/q1:");
  static final JobType<Work> TYPE1 = JobType.of(longName("limits.type1:"), Work.class)
      .withQueue(Q1)
      .withMaxAttempts(3)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(10)));

  static String modeOf(int i) {
    if (i % 500 == 6) {
      return "nul";
    }
    return switch (i % 50) {
      case 0 -> "flaky";
      case 1 -> "fail";
      case 2 -> "discard";
      case 3 -> "snooze";
      case 4, 5 -> "awkward";
      default -> "ok";
    };
  }

  /** The longest worker id JobWorker.Builder accepts (it is written to locked_by and to every error entry). */
  static final String WORKER1 = exactly(NAME_MAX, "worker-1:" + AWKWARD.substring(0, 40));

  @Test
  void everyOutcomeRunsRightWithLongestNamesTenThousandBulkAndTenThousandHandlersAtOnce() {
    assertThat(Q1).hasSize(NAME_MAX);
    assertThat(TYPE1.name()).hasSize(NAME_MAX);
    assertThat(WORKER1).hasSize(NAME_MAX);

    // 10,000 jobs that only finish once all 10,000 lanes run at the same time (priority high:
    // claimed first).
    List<Work> gates = IntStream.range(0, CONCURRENCY_MAX)
        .mapToObj(i -> new Work("gate", i, ""))
        .toList();
    List<UUID> gateIds = client.enqueueAll(
        TYPE1,
        gates,
        EnqueueOptions.builder().priority(1_000_000).context("gate").build());
    // The 10,000-job bulk enqueue: every outcome, awkward text in payloads and in the context
    // (COPY).
    List<Work> bulk =
        IntStream.range(0, BULK).mapToObj(i -> new Work(modeOf(i), i, AWKWARD)).toList();
    String bulkContext = "bulk " + AWKWARD;
    List<UUID> bulkIds = client.enqueueAll(
        TYPE1, bulk, EnqueueOptions.builder().context(bulkContext).build());
    assertThat(bulkIds).hasSize(BULK).doesNotHaveDuplicates();
    // Single enqueues at the other limits of EnqueueOptions: the longest context and idempotency
    // key, the extreme priorities, the most and the fewest attempts.
    String longestContext = exactly(EnqueueOptions.MAX_CONTEXT_LENGTH, AWKWARD);
    Map<UUID, Work> singles = new LinkedHashMap<>();
    Map<UUID, EnqueueOptions> singleOptions = new HashMap<>();
    List<String> singleModes =
        List.of("ok", "awkward", "flaky", "fail", "discard", "snooze", "nul");
    int n = BULK;
    for (String mode : singleModes) {
      for (int variant = 0; variant < 3; variant++) {
        Work work = new Work(mode, n, AWKWARD);
        EnqueueOptions.Builder options = EnqueueOptions.builder()
            .queue(Q1)
            .context(longestContext)
            .idempotencyKey(
                exactly(EnqueueOptions.MAX_IDEMPOTENCY_KEY_LENGTH, "key-" + n + "-" + mode + "-"))
            .priority(
                switch (variant) {
                  case 0 -> Integer.MAX_VALUE;
                  case 1 -> Integer.MIN_VALUE;
                  default -> 0;
                });
        if (variant == 1) {
          // The most attempts a job may have; an always-failing job gets 4 instead: a thousand
          // failed attempts, each appending to a growing error history, would be most of this
          // class's time.
          options.maxAttempts(mode.equals("fail") ? 4 : EnqueueOptions.MAX_MAX_ATTEMPTS);
        } else if (variant == 2) {
          options.maxAttempts(1);
        }
        EnqueueOptions built = options.build();
        UUID id = client.enqueue(TYPE1, work, built).job().id();
        singles.put(id, work);
        singleOptions.put(id, built);
        n++;
      }
    }
    int total = gateIds.size() + bulkIds.size() + singles.size();

    Map<UUID, AtomicInteger> runs = new ConcurrentHashMap<>();
    Set<UUID> snoozed = ConcurrentHashMap.newKeySet();
    AtomicInteger inHandlers = new AtomicInteger();
    AtomicInteger peak = new AtomicInteger();
    AtomicInteger gatesIn = new AtomicInteger();
    CountDownLatch allLanesBusy = new CountDownLatch(1);
    List<String> payloadMismatches = new CopyOnWriteArrayList<>();
    JobWorker worker = start(worker()
        .workerId(WORKER1)
        .queue(Q1, CONCURRENCY_MAX)
        .claimBatch(CLAIM_BATCH_MAX)
        .completionBatch(COMPLETION_BATCH_MAX)
        .pollInterval(Duration.ofMillis(50))
        .register(TYPE1, (ctx, w) -> {
          runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
          peak.accumulateAndGet(inHandlers.incrementAndGet(), Math::max);
          try {
            if (!w.mode().equals("gate") && !w.text().equals(AWKWARD)) {
              payloadMismatches.add(ctx.jobId() + ": " + w.text());
            }
            switch (w.mode()) {
              case "gate" -> {
                if (gatesIn.incrementAndGet() == CONCURRENCY_MAX) {
                  allLanesBusy.countDown();
                }
                if (!allLanesBusy.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                  throw new IllegalStateException("never " + CONCURRENCY_MAX + " handlers at once");
                }
                return null;
              }
              case "ok" -> {
                return Map.of("n", w.n());
              }
              case "awkward" -> {
                ctx.progress(100, AWKWARD);
                return Map.of("echo", w.text(), "n", w.n());
              }
              case "flaky" -> {
                if (ctx.attempt() == 1) {
                  throw new IllegalStateException("flaky first attempt " + AWKWARD);
                }
                return Map.of("n", w.n(), "attempt", ctx.attempt());
              }
              case "fail" ->
                throw new IllegalStateException("always fails " + AWKWARD + " nul:\u0000.");
              case "discard" -> throw new DiscardJobException("discarded " + AWKWARD);
              case "snooze" -> {
                if (snoozed.add(ctx.jobId())) {
                  throw new SnoozeJobException(Duration.ofMillis(10));
                }
                return Map.of("n", w.n(), "snoozed", true);
              }
              case "nul" -> {
                return Map.of("echo", "before \u0000 after " + AWKWARD);
              }
              default -> throw new IllegalStateException("unknown mode " + w.mode());
            }
          } finally {
            inHandlers.decrementAndGet();
          }
        }));

    await("all " + CONCURRENCY_MAX + " lanes running at once")
        .atMost(WAIT)
        .until(() -> allLanesBusy.getCount() == 0);
    await("all " + total + " jobs finished")
        .atMost(WAIT)
        .pollInterval(Duration.ofMillis(250))
        .until(() -> count("pgjobs.jobs") == 0 && count("pgjobs.finished_jobs") == total);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running'"))
        .isZero();
    assertThat(peak.get()).as("handlers running at once, at most").isEqualTo(CONCURRENCY_MAX);
    assertThat(payloadMismatches)
        .as("payloads that reached their handler changed")
        .isEmpty();
    await("the worker holds nothing").atMost(WAIT).until(() -> worker.heldJobs() == 0);
    assertThat(worker.stuckLanes()).isZero();

    // Every job read back through the API (list at its largest page, filtered by the long names).
    Map<UUID, Job> jobs = listAll(TYPE1.name(), Q1);
    assertThat(jobs).hasSize(total);
    List<String> problems = new ArrayList<>();
    Map<String, Integer> outcomes = new HashMap<>();
    for (Job job : jobs.values()) {
      String mode = job.payload().path("mode").asString();
      int number = job.payload().path("n").asInt();
      int maxAttempts = job.maxAttempts();
      Expected expected = expected(mode, maxAttempts);
      outcomes.merge(mode + "->" + job.state().value(), 1, Integer::sum);
      String where =
          "job " + job.id() + " (" + mode + ", n=" + number + ", max " + maxAttempts + ")";
      check(problems, where + " state", job.state(), expected.state);
      check(problems, where + " attempts", job.attempts(), expected.attempts);
      check(
          problems,
          where + " handler runs",
          runs.getOrDefault(job.id(), new AtomicInteger()).get(),
          expected.runs);
      check(
          problems,
          where + " error kinds",
          job.errors().stream().map(JobError::kind).toList(),
          expected.errorKinds);
      check(problems, where + " type", job.type(), TYPE1.name());
      check(problems, where + " queue", job.queue(), Q1);
      check(problems, where + " locked by", job.lockedBy(), WORKER1);
      for (JobError e : job.errors()) {
        check(problems, where + " error's worker", e.worker(), WORKER1);
      }
      if (!mode.equals("gate")) {
        check(problems, where + " payload text", job.payload().path("text").asString(), AWKWARD);
      }
      if (job.state() != JobState.SUCCEEDED) {
        check(problems, where + " output of a job that did not succeed", job.output(), null);
      }
      switch (mode) {
        case "gate" -> check(problems, where + " output", job.output(), null);
        case "ok", "flaky", "snooze" -> {
          if (expected.state == JobState.SUCCEEDED && job.output() != null) {
            check(problems, where + " output n", job.output().path("n").asInt(), number);
          }
        }
        case "awkward" -> {
          check(
              problems,
              where + " output echo",
              job.output() == null ? null : job.output().path("echo").asString(),
              AWKWARD);
          check(problems, where + " progress message", job.progressMessage(), AWKWARD);
        }
        case "fail" -> {
          for (JobError e : job.errors()) {
            // U+0000 in an error message is stored as U+FFFD; every other character as it was.
            check(
                problems,
                where + " error message",
                e.message(),
                "always fails " + AWKWARD + " nul:\uFFFD.");
          }
        }
        case "nul" ->
          check(
              problems,
              where + " unstorable output message",
              !job.errors().isEmpty()
                  && job.errors()
                      .get(job.errors().size() - 1)
                      .message()
                      .startsWith("output is not storable"),
              true);
        default -> {}
      }
      if (singles.containsKey(job.id())) {
        EnqueueOptions o = singleOptions.get(job.id());
        check(problems, where + " context", job.context(), longestContext);
        check(problems, where + " idempotency key", job.idempotencyKey(), o.idempotencyKey());
        check(problems, where + " priority", job.priority(), o.priority());
      } else if (!mode.equals("gate")) {
        check(problems, where + " context", job.context(), bulkContext);
      }
    }
    // A worker_lost error here was either the worker fencing itself (no heartbeat for the fence
    // time) or a rescue by maintenance (its row older than the dead-worker threshold): the count
    // says which.
    assertThat(problems)
        .as("jobs not as expected (outcomes: " + outcomes + "; times the worker fenced itself: "
            + worker.fences() + ")")
        .isEmpty();
    // The awkward text also matches byte for byte in SQL, where jsonb holds it.
    assertThat(countWhere("output ->> 'echo' = ?", AWKWARD))
        .isEqualTo(bulk.stream().filter(w -> w.mode().equals("awkward")).count() + 3);
    assertThat(countWhere("payload ->> 'text' = ?", AWKWARD)).isEqualTo(BULK + singles.size());
    assertThat(countWhere("context = ?", bulkContext)).isEqualTo(BULK);
    assertThat(countWhere("context = ?", longestContext)).isEqualTo(singles.size());
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running'"))
        .isZero();
  }

  @Test
  void u0000InAPayloadContextOrIdempotencyKeyIsRefusedSinglyAndInBulkAndStoresNothing() {
    // jsonb and text cannot hold U+0000. pgjobs does not check for it before the database does: the
    // enqueue fails with the database's error (a PgJobsException), and a bulk enqueue stores none
    // of its jobs, the good ones included.
    Work good = new Work("ok", 1, AWKWARD);
    Work nul = new Work("ok", 2, "before \u0000 after");
    EnqueueOptions nulContext =
        EnqueueOptions.builder().context("before \u0000 after").build();
    List<Runnable> refused = List.of(
        () -> client.enqueue(TYPE1, nul),
        () -> client.enqueueAll(TYPE1, List.of(good, nul, good), EnqueueOptions.DEFAULTS),
        () -> client.enqueue(TYPE1, good, nulContext),
        () -> client.enqueueAll(TYPE1, List.of(good, good), nulContext),
        () -> client.enqueue(
            TYPE1, good, EnqueueOptions.builder().idempotencyKey("key \u0000").build()));
    for (Runnable enqueue : refused) {
      assertThatThrownBy(enqueue::run).isInstanceOf(PgJobsException.class);
    }
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("pgjobs.job_keys")).isZero();
    // The same jobs without it go in.
    assertThat(client.enqueueAll(TYPE1, List.of(good, good), EnqueueOptions.DEFAULTS))
        .hasSize(2);
    assertThat(count("pgjobs.jobs")).isEqualTo(2);
  }

  private record Expected(JobState state, int attempts, int runs, List<String> errorKinds) {}

  private static Expected expected(String mode, int maxAttempts) {
    return switch (mode) {
      case "gate", "ok", "awkward" -> new Expected(JobState.SUCCEEDED, 1, 1, List.of());
      case "flaky" ->
        maxAttempts == 1
            ? new Expected(JobState.FAILED, 1, 1, List.of("error"))
            : new Expected(JobState.SUCCEEDED, 2, 2, List.of("error"));
      case "fail" ->
        new Expected(
            JobState.FAILED, maxAttempts, maxAttempts, Collections.nCopies(maxAttempts, "error"));
      case "discard" -> new Expected(JobState.FAILED, 1, 1, List.of("discarded"));
      case "snooze" -> new Expected(JobState.SUCCEEDED, 1, 2, List.of());
      case "nul" -> new Expected(JobState.FAILED, 1, 1, List.of("unstorable_output"));
      default -> throw new IllegalArgumentException(mode);
    };
  }

  private static void check(List<String> problems, String what, Object actual, Object expected) {
    if (!java.util.Objects.equals(actual, expected)) {
      problems.add(what + ": expected " + shorten(expected) + " but was " + shorten(actual));
    }
  }

  private static String shorten(Object value) {
    String s = String.valueOf(value);
    return s.length() > 200 ? s.substring(0, 200) + "…(" + s.length() + " chars)" : s;
  }

  /** Every job of a type and queue, through {@code JobClient.list} at its largest page size. */
  private static Map<UUID, Job> listAll(String type, String queue) {
    Map<UUID, Job> jobs = new LinkedHashMap<>();
    String cursor = null;
    do {
      JobPage page = client.list(JobFilter.builder()
          .type(type)
          .queue(queue)
          .limit(JobFilter.MAX_LIMIT)
          .cursor(cursor)
          .build());
      page.jobs().forEach(j -> jobs.put(j.id(), j));
      cursor = page.nextCursor();
    } while (cursor != null);
    return jobs;
  }

  /** Counts finished jobs matching {@code condition}, whose one parameter is {@code value}. */
  private static long countWhere(String condition, String value) {
    return Long.parseLong(
        queryString("SELECT count(*) FROM pgjobs.finished_jobs WHERE " + condition, value));
  }

  // ---------------------------------------------------------------- 2. 1 MiB payloads and outputs

  static final String Q2 = longName("limits/q2:");
  static final JobType<Work> TYPE2 = JobType.of(longName("limits.type2:"), Work.class)
      .withQueue(Q2)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ZERO));

  /** A Work whose JSON payload is exactly {@code bytes} bytes of UTF-8, made of awkward text. */
  static Work payloadOfExactly(int bytes, String mode, int n) {
    int frame = utf8(CODEC.encodePayload(new Work(mode, n, "")));
    int awkwardBytes = utf8(CODEC.encodePayload(AWKWARD)) - 2; // without the quotes
    StringBuilder text = new StringBuilder();
    int used = frame;
    while (used + awkwardBytes <= bytes) {
      text.append(AWKWARD);
      used += awkwardBytes;
    }
    text.append("x".repeat(bytes - used));
    Work work = new Work(mode, n, text.toString());
    assertThat(utf8(CODEC.encodePayload(work))).isEqualTo(bytes);
    return work;
  }

  static int utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }

  @Test
  void oneMebibytePayloadsEnqueuedSinglyAndInBulkRunAndEchoAMebibyteOutput() {
    Work single = payloadOfExactly(MIB, "echo", 0);
    List<Work> bulk = List.of(
        payloadOfExactly(MIB, "echo", 1),
        payloadOfExactly(MIB, "echo", 2),
        payloadOfExactly(MIB, "echo", 3),
        payloadOfExactly(MIB, "flaky", 4));
    Map<UUID, Work> sent = new LinkedHashMap<>();
    sent.put(client.enqueue(TYPE2, single).job().id(), single);
    List<UUID> bulkIds = client.enqueueAll(TYPE2, bulk, EnqueueOptions.DEFAULTS);
    for (int i = 0; i < bulk.size(); i++) {
      sent.put(bulkIds.get(i), bulk.get(i));
    }
    Map<UUID, Boolean> intact = new ConcurrentHashMap<>();
    start(worker()
        .queue(Q2, CONCURRENCY_MAX)
        .claimBatch(CLAIM_BATCH_MAX)
        .completionBatch(COMPLETION_BATCH_MAX)
        .register(TYPE2, (ctx, w) -> {
          intact.merge(ctx.jobId(), w.equals(sent.get(ctx.jobId())), Boolean::logicalAnd);
          if (w.mode().equals("flaky") && ctx.attempt() == 1) {
            throw new IllegalStateException("the first attempt of a 1 MiB job fails");
          }
          return Map.of("echo", w.text());
        }));

    await("the 1 MiB jobs succeeded")
        .atMost(WAIT)
        .pollInterval(Duration.ofMillis(250))
        .until(() -> count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'")
            == sent.size());
    assertThat(intact)
        .hasSize(sent.size())
        .allSatisfy((id, ok) -> assertThat(ok).as("payload of " + id).isTrue());
    sent.forEach((id, work) -> {
      Job job = job(id);
      assertThat(job.state()).isEqualTo(JobState.SUCCEEDED);
      assertThat(job.attempts()).isEqualTo(work.mode().equals("flaky") ? 2 : 1);
      assertThat(job.payload().path("text").asString()).isEqualTo(work.text());
      assertThat(job.output().path("echo").asString()).isEqualTo(work.text());
      assertThat(utf8(CODEC.write(job.output()))).isBetween(MIB - 100, MIB + 100);
    });
    assertThat(count("SELECT count(*) FROM pgjobs.jobs")).isZero();
  }

  // ---------------------------------------------------------------- 3. cancel, cancelAll,
  // retryAll, events

  static final String QW = longName("limits/waiting:");
  static final String QR = longName("limits/running:");
  static final JobType<Work> TYPE3 =
      JobType.of(longName("limits.type3:"), Work.class).withMaxAttempts(1);

  @Test
  void cancelAllOfThousandsWaitingCancelOfRunningAndRetryAllOfThousandsFailedWithEventsThatAddUp()
      throws Exception {
    int waiting = BULK;
    int failing = 5_000;
    int blocking = 100;
    Map<JobState, LongAdder> totals = new EnumMap<>(JobState.class);
    for (JobState s : JobState.values()) {
      totals.put(s, new LongAdder());
    }
    List<String> eventProblems = new CopyOnWriteArrayList<>();
    Set<String> marks = ConcurrentHashMap.newKeySet();
    try (JobEventListener events = new JobEventListener(db.dataSource(), client.eventsChannel())) {
      events.subscribe(batch -> tally(batch, totals, eventProblems));
      events.onMark(marks::add);
      events.start();
      await().atMost(WAIT).until(events::isListening);
      events.sendMark("start");
      await("the listener hears its own mark").atMost(WAIT).until(() -> marks.contains("start"));

      // cancelAll of thousands of waiting jobs (their queue has no worker).
      List<UUID> waitingIds = client.enqueueAll(
          TYPE3,
          IntStream.range(0, waiting).mapToObj(i -> new Work("ok", i, AWKWARD)).toList(),
          EnqueueOptions.builder().queue(QW).build());
      CancelCounts cancelled = client.cancelAll(Set.of(TYPE3.name()), Set.of(QW), Set.of());
      assertThat(cancelled).isEqualTo(new CancelCounts(waiting, 0));
      assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'cancelled'"))
          .isEqualTo(waiting);

      // Thousands of jobs that fail on their only attempt, and handlers that run until cancelled.
      AtomicInteger failuresLeft = new AtomicInteger(Integer.MAX_VALUE);
      Set<UUID> blocked = ConcurrentHashMap.newKeySet();
      Map<UUID, AtomicInteger> runs = new ConcurrentHashMap<>();
      start(worker()
          .workerId(exactly(NAME_MAX, "worker-running:"))
          .queue(QR, CONCURRENCY_MAX)
          .claimBatch(CLAIM_BATCH_MAX)
          .completionBatch(COMPLETION_BATCH_MAX)
          .stuckHandlerGrace(Duration.ofMillis(100))
          .pollInterval(Duration.ofMillis(50))
          .register(TYPE3, (ctx, w) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            if (w.mode().equals("block")) {
              blocked.add(ctx.jobId());
              // Until cancelled (or the worker's shutdown): the deadline is only a safety net, far
              // past the test's own waits. At WAIT, a machine that took most of a WAIT to fail the
              // jobs below could see the first handlers return before their cancel came.
              long until = System.nanoTime() + Duration.ofMinutes(10).toNanos();
              while (!ctx.isCancelled() && System.nanoTime() < until) {
                try {
                  Thread.sleep(5);
                } catch (InterruptedException e) {
                  // the stop: isCancelled() says why
                }
              }
              return Map.of("stopped", ctx.isCancelled());
            }
            if (failuresLeft.getAndDecrement() > 0) {
              throw new IllegalStateException("fails while the test wants it to: " + AWKWARD);
            }
            return Map.of("n", w.n());
          }));
      List<UUID> blockIds = client.enqueueAll(
          TYPE3,
          IntStream.range(0, blocking).mapToObj(i -> new Work("block", i, "")).toList(),
          EnqueueOptions.builder().queue(QR).priority(1_000).build());
      List<UUID> failingIds = client.enqueueAll(
          TYPE3,
          IntStream.range(0, failing)
              .mapToObj(i -> new Work("fail", i, AWKWARD))
              .toList(),
          EnqueueOptions.builder().queue(QR).build());
      await("the failing jobs failed")
          .atMost(WAIT)
          .pollInterval(Duration.ofMillis(200))
          .until(() ->
              count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'failed'") == failing);
      await("every blocking handler runs").atMost(WAIT).until(() -> blocked.size() == blocking);

      // Cancel of running jobs: half one by one, half with cancelAll of the running state.
      for (UUID id : blockIds.subList(0, blocking / 2)) {
        CancelResult result = client.cancel(id);
        assertThat(result.outcome())
            .as(() -> "cancel of running job " + id + " gave " + result + "; runs " + runs.get(id)
                + "; now " + job(id))
            .isEqualTo(CancelResult.Outcome.PENDING_ON_WORKER);
      }
      assertThat(client.cancelAll(Set.of(TYPE3.name()), Set.of(QR), Set.of(JobState.RUNNING)))
          .isEqualTo(new CancelCounts(0, blocking - blocking / 2));
      await("the running jobs cancelled")
          .atMost(WAIT)
          .pollInterval(Duration.ofMillis(100))
          .until(() -> count(
                  "SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'cancelled' AND queue = '"
                      + QR + "'")
              == blocking);

      // retryAll of the thousands of failed jobs: they run again, and succeed.
      failuresLeft.set(0);
      assertThat(client.retryAll(Set.of(TYPE3.name()), Set.of(QR), Set.of(JobState.FAILED)))
          .isEqualTo(failing);
      // and of the thousands cancelled while waiting: a worker for their queue runs them.
      assertThat(client.retryAll(Set.of(TYPE3.name()), Set.of(QW), Set.of(JobState.CANCELLED)))
          .isEqualTo(waiting);
      start(worker()
          .workerId(exactly(NAME_MAX, "worker-waiting:"))
          .queue(QW, CONCURRENCY_MAX)
          .claimBatch(CLAIM_BATCH_MAX)
          .completionBatch(COMPLETION_BATCH_MAX)
          .register(TYPE3, (ctx, w) -> {
            runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
            return Map.of("n", w.n());
          }));
      await("the retried jobs succeeded")
          .atMost(WAIT)
          .pollInterval(Duration.ofMillis(250))
          .until(() -> count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'")
              == failing + waiting);
      assertThat(count("pgjobs.jobs")).isZero();

      events.sendMark("end");
      await("every event before the end mark delivered")
          .atMost(WAIT)
          .until(() -> marks.contains("end"));

      for (UUID id : blockIds) {
        Job job = job(id);
        assertThat(job.state()).isEqualTo(JobState.CANCELLED);
        assertThat(job.attempts()).isEqualTo(1);
        assertThat(job.errors()).extracting(JobError::kind).containsExactly("cancelled");
        assertThat(runs.get(id).get()).isEqualTo(1);
      }
      assertThat(count(
              "SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded' AND attempts = 1"
                  + " AND jsonb_array_length(errors) = 1 AND errors -> 0 ->> 'kind' = 'error' AND queue = '"
                  + QR + "'"))
          .as("retried failed jobs: one attempt each time, the first error kept")
          .isEqualTo(failing);
      assertThat(count(
              "SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded' AND attempts = 1"
                  + " AND errors = '[]' AND queue = '" + QW + "'"))
          .as("retried cancelled jobs: no attempt before this one")
          .isEqualTo(waiting);
      failingIds.forEach(
          id -> assertThat(runs.get(id).get()).as("runs of " + id).isEqualTo(2));
      waitingIds.forEach(
          id -> assertThat(runs.get(id).get()).as("runs of " + id).isEqualTo(1));

      // The events add up: every job that finished did so in exactly one announced statement.
      assertThat(eventProblems).isEmpty();
      assertThat(totals.get(JobState.CANCELLED).sum()).isEqualTo(waiting + blocking);
      assertThat(totals.get(JobState.FAILED).sum()).isEqualTo(failing);
      assertThat(totals.get(JobState.SUCCEEDED).sum()).isEqualTo(failing + waiting);
      assertThat(totals.get(JobState.QUEUED).sum())
          .as("enqueued and retried, at least")
          .isGreaterThanOrEqualTo(waiting + failing + blocking + failing + waiting);
      assertThat(totals.get(JobState.RUNNING).sum())
          .as("claimed, at least once per attempt")
          .isGreaterThanOrEqualTo(blocking + failing + failing + waiting);
    }
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running'"))
        .isZero();
  }

  /**
   * Adds a statement's event to the totals per state. Every statement of pgjobs that finishes jobs gives
   * them all one state, so the first listed event's state is the batch's; that is checked.
   */
  private static void tally(
      JobEventBatch batch, Map<JobState, LongAdder> totals, List<String> problems) {
    if (batch.events().isEmpty()) {
      problems.add("an event batch listed no job (total " + batch.total() + ")");
      return;
    }
    JobState state = batch.events().get(0).state();
    for (JobEvent e : batch.events()) {
      if (e.state() != state && (e.state().isTerminal() || state.isTerminal())) {
        problems.add("a batch mixes " + state + " and " + e.state());
      }
      if (!e.type().equals(TYPE3.name()) || !(e.queue().equals(QW) || e.queue().equals(QR))) {
        problems.add("an event with names cut or changed: " + e.type() + " / " + e.queue());
      }
    }
    if (batch.total() < batch.events().size()) {
      problems.add("a batch lists more jobs than its total");
    }
    if (batch.events().get(0).kind().equals("state")) {
      totals.get(state).add(batch.total());
    }
  }

  // ---------------------------------------------------------------- 4. rescue of 10,000 jobs of a
  // dead worker

  static final String Q4 = longName("limits/rescue:");
  static final JobType<Work> TYPE4 =
      JobType.of(longName("limits.type4:"), Work.class).withQueue(Q4);
  /** The longest worker id JobWorker.Builder accepts. */
  static final String DEAD_WORKER = exactly(NAME_MAX, "dead-worker:");

  @Test
  void tenThousandJobsClaimedInOneStatementByAWorkerThatDiedAreRescuedInOnePassAndRun()
      throws Exception {
    int lastAttemptJobs = 1_000;
    int retryable = BULK - lastAttemptJobs;
    List<UUID> retryableIds = client.enqueueAll(
        TYPE4,
        IntStream.range(0, retryable).mapToObj(i -> new Work("ok", i, AWKWARD)).toList(),
        EnqueueOptions.DEFAULTS);
    List<UUID> lastAttemptIds = client.enqueueAll(
        TYPE4,
        IntStream.range(retryable, BULK)
            .mapToObj(i -> new Work("ok", i, AWKWARD))
            .toList(),
        EnqueueOptions.builder().maxAttempts(1).build());

    // The dead worker's one claim: all 10,000 jobs in one statement.
    ExecutionStore execution = new ExecutionStore(db.dataSource(), "pgjobs", CODEC);
    List<ClaimedJob> claimed = execution.claim(Q4, CLAIM_BATCH_MAX, DEAD_WORKER);
    assertThat(claimed).hasSize(BULK);
    assertThat(claimed.stream().map(ClaimedJob::id).distinct().count()).isEqualTo(BULK);
    assertThat(count(
            "SELECT count(*) FROM pgjobs.jobs WHERE state = 'running' AND attempts = 1 AND locked_by = '"
                + DEAD_WORKER + "'"))
        .isEqualTo(BULK);

    // Its last heartbeat, of all 10,000 jobs at once, said which had not started; then it died and
    // its row went away.
    Set<UUID> notStarted = new HashSet<>(retryableIds.subList(0, 2_000));
    Map<UUID, Long> held = new HashMap<>();
    claimed.forEach(j -> held.put(j.id(), j.claimToken()));
    WorkerStore workers = new WorkerStore(db.dataSource(), "pgjobs", CODEC);
    try (Connection c = db.dataSource().getConnection()) {
      Map<UUID, Boolean> renewed = workers
          .heartbeat(
              c,
              new WorkerStore.Registration(
                  DEAD_WORKER, "host", 1, Map.of(Q4, CONCURRENCY_MAX), List.of(TYPE4.name())),
              held,
              notStarted,
              0,
              Duration.ofSeconds(5))
          .cancelRequested();
      assertThat(renewed).hasSize(BULK);
    }
    db.execute("DELETE FROM pgjobs.workers");
    // Cancellation asked of some of them (started and not), which the dead worker never heard.
    Set<UUID> cancelAsked = new HashSet<>(retryableIds.subList(1_900, 2_500));
    for (UUID id : cancelAsked) {
      assertThat(client.cancel(id).outcome()).isEqualTo(CancelResult.Outcome.PENDING_ON_WORKER);
    }

    WorkerStore.RescueCounts rescued =
        workers.rescue(Duration.ofSeconds(20), Duration.ofMinutes(5), CLAIM_BATCH_MAX);

    long unclaimed = notStarted.stream().filter(id -> !cancelAsked.contains(id)).count(); // 1,900
    long ended = cancelAsked.size() + lastAttemptJobs; // 600 cancelled + 1,000 failed
    assertThat(rescued)
        .isEqualTo(new WorkerStore.RescueCounts(BULK - unclaimed - ended, ended, unclaimed));
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running'"))
        .isZero();

    Map<UUID, AtomicInteger> runs = new ConcurrentHashMap<>();
    start(worker()
        .queue(Q4, CONCURRENCY_MAX)
        .claimBatch(CLAIM_BATCH_MAX)
        .completionBatch(COMPLETION_BATCH_MAX)
        .register(TYPE4, (ctx, w) -> {
          runs.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger()).incrementAndGet();
          return Map.of("echo", w.text());
        }));
    long toRun = BULK - ended;
    await("the rescued jobs succeeded")
        .atMost(WAIT)
        .pollInterval(Duration.ofMillis(250))
        .until(() ->
            count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'") == toRun);
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(runs)
        .hasSize((int) toRun)
        .allSatisfy((id, r) -> assertThat(r.get()).isEqualTo(1));

    String lostByDeadWorker =
        "jsonb_array_length(errors) = 1 AND errors -> 0 ->> 'kind' = 'worker_lost'"
            + " AND errors -> 0 ->> 'worker' = '" + DEAD_WORKER
            + "' AND strpos(errors -> 0 ->> 'message', '" + DEAD_WORKER + "') > 0";
    assertThat(count(
            "SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded' AND attempts = 2 AND "
                + lostByDeadWorker))
        .as("started jobs: the lost attempt counted and recorded")
        .isEqualTo(BULK - unclaimed - ended);
    assertThat(count(
            "SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded' AND attempts = 1"
                + " AND errors = '[]'"))
        .as("jobs that never started: given back as they were")
        .isEqualTo(unclaimed);
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'cancelled' AND "
            + lostByDeadWorker))
        .isEqualTo(cancelAsked.size());
    assertThat(count(
            "SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'failed' AND attempts = 1 AND "
                + lostByDeadWorker))
        .as("jobs on their last attempt")
        .isEqualTo(lastAttemptJobs);
    assertThat(lastAttemptIds).allSatisfy(id -> assertThat(storedState(id)).isEqualTo("failed"));
    assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE output ->> 'echo' = "
            + "(SELECT payload ->> 'text' FROM pgjobs.finished_jobs LIMIT 1)"))
        .isEqualTo(toRun);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running'"))
        .isZero();
  }

  // ---------------------------------------------------------------- 5. durations at their largest

  static final String Q5 = longName("limits/durations:");

  @Test
  void
      durationsAtTheLargestTheApiAcceptsEndEveryJobRightAndLongerOnesAreRefusedWhereTheyAreGiven() {
    Duration maxTimeout = JobType.MAX_TIMEOUT;
    Duration maxDelay = RetryPolicy.MAX_DELAY;
    Duration largest = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);

    // Past the limits: refused at once, naming the setting. (Before, each was accepted; a timeout
    // past Long.MAX_VALUE ms, or a retry delay past it, made the worker's lane throw before the
    // attempt ended, and the job stayed running, heartbeated, for as long as the worker lived; a
    // longer snooze or retry delay that fit a long made the outcome unwritable, and the job stayed
    // running until rescue.)
    for (Duration tooLong : List.of(maxTimeout.plusMillis(1), largest)) {
      assertThatThrownBy(() -> JobType.of("t", Work.class).withTimeout(tooLong))
          .isInstanceOf(InvalidJobException.class)
          .hasMessageContaining("timeout");
      assertThatThrownBy(() -> EnqueueOptions.builder().timeout(tooLong).build())
          .isInstanceOf(InvalidJobException.class)
          .hasMessageContaining("timeout");
    }
    for (Duration tooLong : List.of(maxDelay.plusMillis(1), maxTimeout, largest)) {
      List<Supplier<Object>> refused = List.of(
          () -> RetryPolicy.fixed(tooLong),
          () -> RetryPolicy.linear(Duration.ofMillis(1), tooLong),
          () -> RetryPolicy.exponential(Duration.ofMillis(1), tooLong, 0.1),
          () -> RetryPolicy.decorrelatedJitter(Duration.ofMillis(1), tooLong),
          () -> new SnoozeJobException(tooLong));
      for (Supplier<Object> make : refused) {
        assertThatThrownBy(make::get)
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("at most");
      }
      assertThatThrownBy(() -> EnqueueOptions.builder().delay(tooLong).build())
          .isInstanceOf(InvalidJobException.class)
          .hasMessageContaining("delay");
    }

    // At the limits: every job ends where it should.
    JobType<Work> timeoutType =
        JobType.of(longName("limits.timeout:"), Work.class).withQueue(Q5).withTimeout(maxTimeout);
    Map<String, RetryPolicy> policies = new LinkedHashMap<>();
    policies.put("fixed", RetryPolicy.fixed(maxDelay));
    policies.put("linear", RetryPolicy.linear(maxDelay, maxDelay));
    policies.put("exponential", RetryPolicy.exponential(maxDelay, maxDelay, 0.0));
    policies.put("decorrelated", RetryPolicy.decorrelatedJitter(maxDelay, maxDelay));
    JobType<Work> snoozeType =
        JobType.of(longName("limits.snooze:"), Work.class).withQueue(Q5).withMaxAttempts(1);
    JobWorker.Builder builder = worker()
        .queue(Q5, CONCURRENCY_MAX)
        .claimBatch(CLAIM_BATCH_MAX)
        .completionBatch(COMPLETION_BATCH_MAX)
        .register(timeoutType, (ctx, w) -> Map.of("n", w.n()))
        .register(snoozeType, (ctx, w) -> {
          if (w.mode().equals("too long")) {
            throw new SnoozeJobException(
                maxDelay.plusMillis(1)); // the constructor throws: the attempt fails
          }
          throw new SnoozeJobException(maxDelay);
        });
    Map<UUID, String> retried = new LinkedHashMap<>();
    List<JobType<Work>> retryTypes = new ArrayList<>();
    policies.forEach((name, policy) -> {
      JobType<Work> type = JobType.of(longName("limits.retry-" + name + ":"), Work.class)
          .withQueue(Q5)
          .withRetryPolicy(policy);
      builder.register(type, (ctx, w) -> {
        throw new IllegalStateException(
            "fails; the next attempt is " + maxDelay.toDays() + " days away");
      });
      retryTypes.add(type);
    });
    UUID typeTimeout = client.enqueue(timeoutType, new Work("ok", 1, "")).job().id();
    UUID optionTimeout = client
        .enqueue(
            timeoutType,
            new Work("ok", 2, ""),
            EnqueueOptions.builder().timeout(maxTimeout).build())
        .job()
        .id();
    for (JobType<Work> type : retryTypes) {
      retried.put(client.enqueue(type, new Work("fail", 3, "")).job().id(), type.name());
    }
    UUID snoozed = client.enqueue(snoozeType, new Work("snooze", 4, "")).job().id();
    UUID snoozedTooLong =
        client.enqueue(snoozeType, new Work("too long", 5, "")).job().id();
    EnqueueOptions delayed = EnqueueOptions.builder().delay(maxDelay).build();
    UUID delayedSingle =
        client.enqueue(timeoutType, new Work("ok", 6, ""), delayed).job().id();
    List<UUID> delayedBulk = client.enqueueAll(
        timeoutType, List.of(new Work("ok", 7, ""), new Work("ok", 8, "")), delayed);
    Instant enqueuedAt = Instant.now();
    JobWorker worker = start(builder);

    assertThat(awaitState(typeTimeout, JobState.SUCCEEDED, WAIT).attempts()).isEqualTo(1);
    Job withOption = awaitState(optionTimeout, JobState.SUCCEEDED, WAIT);
    assertThat(withOption.timeout()).isEqualTo(maxTimeout);
    assertThat(withOption.attempts()).isEqualTo(1);
    Job tooLong = awaitState(snoozedTooLong, JobState.FAILED, WAIT);
    assertThat(tooLong.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("error");
      assertThat(e.message()).startsWith("snooze delay must be at most");
    });
    List<UUID> putOff = new ArrayList<>(retried.keySet());
    putOff.add(snoozed);
    putOff.add(delayedSingle);
    putOff.addAll(delayedBulk);
    for (UUID id : retried.keySet()) {
      Job job = awaitState(id, JobState.RETRYING, WAIT);
      assertThat(job.attempts()).as(retried.get(id)).isEqualTo(1);
      assertThat(job.errors()).extracting(JobError::kind).containsExactly("error");
    }
    Job snoozedJob = awaitState(snoozed, JobState.QUEUED, WAIT);
    await("the snooze written")
        .atMost(WAIT)
        .until(() -> job(snoozed).runAt().isAfter(enqueuedAt.plus(Duration.ofDays(1))));
    assertThat(job(snoozed).attempts()).isZero();
    assertThat(snoozedJob.errors()).isEmpty();
    for (UUID id : putOff) {
      // Due a full MAX_DELAY after the job was enqueued or failed (a minute either way for the
      // clocks).
      assertThat(job(id).runAt())
          .as("run_at of " + id)
          .isBetween(
              enqueuedAt.plus(maxDelay).minus(Duration.ofMinutes(1)),
              Instant.now().plus(maxDelay).plus(Duration.ofMinutes(1)));
      assertThat(job(id).state()).isIn(JobState.QUEUED, JobState.RETRYING);
    }
    await("the worker holds nothing")
        .atMost(WAIT)
        .until(() -> worker.heldJobs() == 0 && worker.runningJobs() == 0);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'running'"))
        .isZero();

    // The jobs put off for ten years are cancelled like any waiting job.
    assertThat(client.cancelAll(Set.of(), Set.of(Q5), Set.of()))
        .isEqualTo(new CancelCounts(putOff.size(), 0));
    putOff.forEach(id -> assertThat(job(id).state()).isEqualTo(JobState.CANCELLED));
    assertThat(count("pgjobs.jobs")).isZero();
  }
}
