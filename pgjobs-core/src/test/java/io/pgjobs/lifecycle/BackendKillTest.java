package io.pgjobs.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueueOutcomeUnknownException;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.JobClient;
import io.pgjobs.JobHandler;
import io.pgjobs.JobType;
import io.pgjobs.RetryPolicy;
import io.pgjobs.testkit.Exclusive;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every backend of the test database terminated twice a second for 30 s while producers enqueue (bulk
 * by COPY and single) and two workers, each with a pool of its own, run the jobs. Enqueue recovers
 * within 2 s of the last kill (a connection that died under a COPY must not go back to the pool), every
 * stored job succeeds exactly once, nothing whose enqueue returned is lost, nothing stays running; and
 * producers that retry a failed call as documented (the same call again, each job with its idempotency
 * key) store no job twice, though some of their failed calls had committed: every such call failed
 * with {@link EnqueueOutcomeUnknownException}, never with a plain failure.
 */
@Tag(Tags.SOAK)
@Exclusive
class BackendKillTest extends LifecycleTestBase {
  private static final Duration KILLING = Duration.ofSeconds(30);
  private static final long KILL_EVERY_MILLIS = 500;
  private static final int BATCH = 100;
  /** The bound on recovery: a correctness check (dead connections are discarded), not a benchmark. */
  private static final Duration RECOVERY_BOUND = Duration.ofSeconds(2);
  /** A producer's pause between tries of a failed call, as an application would back off. */
  private static final long RETRY_PAUSE_MILLIS = 50;
  /** After the kills: the longest time without a job leaving {@code pgjobs.jobs} before the test fails. */
  private static final Duration DRAIN_STALL = Duration.ofSeconds(30);
  /** After the kills: the longest wait for the backlog to drain, however steadily it shrinks. */
  private static final Duration DRAIN_CAP = Duration.ofSeconds(180);

  /**
   * The payload: the job's marker (one per job), which is its idempotency key (the type takes it from the
   * payload), the same in every try of its call. Which try stored a job is in its context
   * ({@code call-<n>}), which the key's fingerprint leaves out.
   */
  record Marked(String marker) {}

  /** Many attempts, short fixed retry delay: kills fail attempts, they must not exhaust a job. */
  static final JobType<Marked> MARKED = JobType.of("backend_kill_work", Marked.class)
      .withMaxAttempts(100)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(200)))
      .withIdempotencyKeyFrom("marker");

  /**
   * One try of one enqueue call, with its times on the nanosecond clock; {@code unknown}: it failed with
   * {@link EnqueueOutcomeUnknownException}.
   */
  private record Call(
      boolean bulk,
      String marker,
      int call,
      long startedAt,
      long endedAt,
      List<UUID> ids,
      String error,
      boolean unknown) {
    boolean ok() {
      return error == null;
    }
  }

  private final List<JobWorker> ownWorkers = new ArrayList<>();
  private final List<Thread> producers = new ArrayList<>();
  private final Queue<Call> calls = new ConcurrentLinkedQueue<>();
  private volatile boolean producing = true;
  private ScheduledExecutorService killer;

  @AfterEach
  void stopEverything() throws InterruptedException {
    producing = false;
    if (killer != null) {
      killer.shutdownNow();
    }
    for (Thread t : producers) {
      t.join(10_000);
    }
    ownWorkers.forEach(JobWorker::close);
  }

  /** The handler: one effect row per run that got that far, as {@link Lifecycle#handler} writes. */
  private static JobHandler<Marked> handler(String worker) {
    return (ctx, marked) -> {
      try (Connection c = ctx.dataSource().getConnection();
          PreparedStatement ps = c.prepareStatement(
              "INSERT INTO effects (job_id, attempt, worker) VALUES (?, ?, ?)")) {
        ps.setObject(1, ctx.jobId());
        ps.setInt(2, ctx.attempt());
        ps.setString(3, worker);
        ps.executeUpdate();
      }
      return null;
    };
  }

  /** A worker of its own pool, as a separate process would have (as in {@link OutageTest}). */
  private JobWorker startWorker(String id, DataSource pool) {
    JobWorker worker = JobWorker.builder(pool)
        .workerId(id)
        .register(MARKED, handler(id))
        .queue(JobType.DEFAULT_QUEUE, 8)
        .staleThreshold(Duration.ofSeconds(3))
        .heartbeatInterval(Duration.ofMillis(300))
        .leaseTtl(Duration.ofSeconds(2))
        .pollInterval(Duration.ofMillis(200))
        .shutdownGrace(Duration.ofSeconds(2))
        .build();
    ownWorkers.add(worker);
    return worker.start();
  }

  /** A query on a connection of its own: the pools' connections may be dead right now. */
  private static long countFresh(String url, String sql) {
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  /**
   * Waits until {@code pgjobs.jobs} is empty: the backlog left by the kills drains. A loaded CI machine
   * (four test lanes on two cores) drains it slower than a quiet one, so the wait fails only when no job
   * has left the table for {@link #DRAIN_STALL} (something is stuck, not slow) or after {@link
   * #DRAIN_CAP} in all, and then says what is left: by state, holder, attempts and due time, with the
   * workers' rows.
   */
  private static void awaitDrained(String url) throws InterruptedException {
    long start = System.nanoTime();
    long lastProgress = start;
    long left = Long.MAX_VALUE;
    while (true) {
      long now;
      try {
        long n = countFresh(url, "SELECT count(*) FROM pgjobs.jobs");
        now = System.nanoTime();
        if (n == 0) {
          return;
        }
        if (n < left) {
          left = n;
          lastProgress = now;
        }
      } catch (IllegalStateException e) {
        now = System.nanoTime(); // the database answers again soon; a failed look is no progress
      }
      boolean stalled = now - lastProgress > DRAIN_STALL.toNanos();
      if (stalled || now - start > DRAIN_CAP.toNanos()) {
        throw new AssertionError(
            "every stored job finished: " + left + " jobs still in pgjobs.jobs after "
                + TimeUnit.NANOSECONDS.toSeconds(now - start) + " s ("
                + (stalled
                    ? "none left it in the last " + DRAIN_STALL.toSeconds() + " s"
                    : "cap reached")
                + "):\n" + describe(url, """
                SELECT state, coalesce(locked_by, '-'), attempts, prefetched, cancel_requested,
                       run_at > now() AS later, count(*)
                  FROM pgjobs.jobs GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 7 DESC LIMIT 20""")
                + "workers:\n" + describe(url, "SELECT * FROM pgjobs.workers")
                + "leases:\n" + describe(url, "SELECT * FROM pgjobs.leases"));
      }
      Thread.sleep(250);
    }
  }

  /** The rows of {@code sql}, one line each, for a failure message. */
  private static String describe(String url, String sql) {
    StringBuilder out = new StringBuilder();
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      int columns = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        out.append("  ");
        for (int i = 1; i <= columns; i++) {
          out.append(i > 1 ? " | " : "")
              .append(rs.getMetaData().getColumnLabel(i))
              .append('=')
              .append(rs.getString(i));
        }
        out.append('\n');
      }
    } catch (SQLException e) {
      out.append("  (").append(e.getMessage()).append(")\n");
    }
    return out.toString();
  }

  /**
   * Bulk producer: batches of {@link #BATCH}, each call tried until it returns, as documented: the same
   * payloads again (each job's key is its marker), whatever the failure.
   */
  private void produceBulk(JobClient producer, AtomicInteger batches, long everyMillis) {
    while (producing) {
      int batch = batches.incrementAndGet();
      List<Marked> payloads = new ArrayList<>(BATCH);
      for (int i = 0; i < BATCH; i++) {
        payloads.add(new Marked("b" + batch + "-" + i));
      }
      for (int call = 1; producing; call++) {
        EnqueueOptions options =
            EnqueueOptions.builder().context("call-" + call).build();
        long start = System.nanoTime();
        try {
          List<UUID> ids = producer.enqueueAll(MARKED, payloads, options);
          calls.add(new Call(true, "b" + batch, call, start, System.nanoTime(), ids, null, false));
          break;
        } catch (RuntimeException e) {
          calls.add(new Call(
              true,
              "b" + batch,
              call,
              start,
              System.nanoTime(),
              List.of(),
              describe(e),
              e instanceof EnqueueOutcomeUnknownException));
          pause(RETRY_PAUSE_MILLIS);
        }
      }
      pause(everyMillis); // the producer's pace, not a wait for anything
    }
  }

  /** Single producer: one job per call, the marker as idempotency key, so a retry stores nothing twice. */
  private void produceSingle(
      JobClient producer, String prefix, AtomicInteger counter, long everyMillis) {
    while (producing) {
      String marker = prefix + counter.incrementAndGet();
      for (int call = 1; producing; call++) {
        EnqueueOptions options = EnqueueOptions.builder()
            .idempotencyKey(marker)
            .context("call-" + call)
            .build();
        long start = System.nanoTime();
        try {
          // The same payload on every call: a retry under an idempotency key must repeat the
          // request (a different one is refused as a reused key).
          EnqueuedJob job = producer.enqueue(MARKED, new Marked(marker), options);
          calls.add(new Call(
              false, marker, call, start, System.nanoTime(), List.of(job.job().id()), null, false));
          break;
        } catch (RuntimeException e) {
          calls.add(new Call(
              false,
              marker,
              call,
              start,
              System.nanoTime(),
              List.of(),
              describe(e),
              e instanceof EnqueueOutcomeUnknownException));
          pause(RETRY_PAUSE_MILLIS);
        }
      }
      pause(everyMillis);
    }
  }

  private static String describe(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return e.getMessage() + (root == e ? "" : " [root: " + root + "]");
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void startProducer(String name, Runnable body) {
    Thread t = Thread.ofPlatform().name(name).start(body);
    producers.add(t);
  }

  @Test
  void enqueueRecoversAndNothingIsLostOrDoubledWhileEveryBackendIsKilledTwiceASecond()
      throws Exception {
    String url = db.jdbcUrl();
    long testStart = System.nanoTime();
    startWorker("kill-w1", db.newDataSource(12));
    startWorker("kill-w2", db.newDataSource(12));
    // Two applications, each with a pool of its own: an importer enqueueing in bulk and a service
    // enqueueing one job at a time. Both use their connections more often than every 500 ms, so
    // HikariCP hands them out without validating them (its alive-bypass window): a dead connection
    // that went back to the pool is given out again. (In a pool shared with single enqueues, a
    // single INSERT would hit the dead connection through Hikari's proxy and evict it: no stall to
    // see.)
    JobClient importer = JobClient.builder(db.newDataSource(4)).build();
    JobClient service = JobClient.builder(db.newDataSource(4)).build();
    AtomicInteger batches = new AtomicInteger();
    AtomicInteger singles = new AtomicInteger();
    startProducer("bulk-1", () -> produceBulk(importer, batches, 400));
    startProducer("bulk-2", () -> produceBulk(importer, batches, 400));
    startProducer("single-1", () -> produceSingle(service, "s1-", singles, 40));
    startProducer("single-2", () -> produceSingle(service, "s2-", singles, 40));

    // The killer: a connection of its own (excluded), terminating every other client backend of the
    // test database: producers', workers' (claims, handlers, completions, heartbeats, LISTEN,
    // maintenance) and the test base's pool.
    int rounds = (int) (KILLING.toMillis() / KILL_EVERY_MILLIS);
    AtomicInteger roundsDone = new AtomicInteger();
    AtomicLong terminated = new AtomicLong();
    AtomicLong lastKillAt = new AtomicLong();
    Connection killerConnection = DriverManager.getConnection(url);
    killer = Executors.newSingleThreadScheduledExecutor(
        r -> Thread.ofPlatform().name("killer").unstarted(r));
    killer.scheduleAtFixedRate(
        () -> {
          if (roundsDone.get() >= rounds) {
            return;
          }
          try (Statement st = killerConnection.createStatement();
              ResultSet rs =
                  st.executeQuery("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                      + " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                      + " AND backend_type = 'client backend'")) {
            rs.next();
            terminated.addAndGet(rs.getLong(1));
          } catch (SQLException e) {
            throw new IllegalStateException("killer: " + e.getMessage(), e);
          }
          lastKillAt.set(System.nanoTime());
          roundsDone.incrementAndGet();
        },
        KILL_EVERY_MILLIS,
        KILL_EVERY_MILLIS,
        TimeUnit.MILLISECONDS);

    await("all " + rounds + " kill rounds done")
        .pollInterval(Duration.ofMillis(50))
        .atMost(KILLING.plusSeconds(10))
        .until(() -> roundsDone.get() >= rounds);
    long lastKill = lastKillAt.get();
    killerConnection.close();

    // Recovery: the first bulk and the first single call started after the last kill that succeed.
    Predicate<Call> after = c -> c.startedAt() > lastKill && c.ok();
    // Waits past the bound, so that a failing run says how long recovery took (raise it to measure
    // a long stall: -Dpgjobs.backendKill.recoveryWaitSeconds=90).
    Duration recoveryWait =
        Duration.ofSeconds(Long.getLong("pgjobs.backendKill.recoveryWaitSeconds", 10));
    await("a bulk and a single enqueue succeed after the last kill")
        .pollInterval(Duration.ofMillis(10))
        .atMost(recoveryWait)
        .until(() -> calls.stream().anyMatch(c -> c.bulk() && after.test(c))
            && calls.stream().anyMatch(c -> !c.bulk() && after.test(c)));
    long bulkRecovered = firstEnd(c -> c.bulk() && after.test(c)) - lastKill;
    long singleRecovered = firstEnd(c -> !c.bulk() && after.test(c)) - lastKill;
    long failuresAfterLastKill =
        calls.stream().filter(c -> c.startedAt() > lastKill && !c.ok()).count();
    producing = false;
    for (Thread t : producers) {
      t.join(30_000);
      assertThat(t.isAlive()).as(t.getName() + " stopped").isFalse();
    }

    awaitDrained(url);

    // What is stored, by the call that stored it.
    Map<String, Integer> storedPerCall = new HashMap<>(); // "b12#2" / "s1-7#1" -> rows
    Map<String, Integer> storedPerMarker = new HashMap<>();
    Map<UUID, String> stateOf = new HashMap<>();
    try (Connection c = DriverManager.getConnection(url);
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery("SELECT id, payload->>'marker', substring(context FROM 6)::int, state"
                + " FROM pgjobs.finished_jobs")) {
      while (rs.next()) {
        String marker = rs.getString(2);
        String callOf = marker.startsWith("b") ? marker.substring(0, marker.indexOf('-')) : marker;
        storedPerCall.merge(callOf + "#" + rs.getInt(3), 1, Integer::sum);
        storedPerMarker.merge(marker, 1, Integer::sum);
        stateOf.put(rs.getObject(1, UUID.class), rs.getString(4));
      }
    }
    long stored = stateOf.size();
    List<Call> all = new ArrayList<>(calls);
    List<Call> okBulk = all.stream().filter(c -> c.bulk() && c.ok()).toList();
    List<Call> okSingle = all.stream().filter(c -> !c.bulk() && c.ok()).toList();
    List<Call> failedBulk = all.stream().filter(c -> c.bulk() && !c.ok()).toList();
    List<Call> failedSingle = all.stream().filter(c -> !c.bulk() && !c.ok()).toList();
    long failedBulkStoredAnyway = failedBulk.stream()
        .filter(c -> storedPerCall.getOrDefault(c.marker() + "#" + c.call(), 0) > 0)
        .count();
    long failedSingleStoredAnyway = failedSingle.stream()
        .filter(c -> storedPerCall.getOrDefault(c.marker() + "#" + c.call(), 0) > 0)
        .count();
    long unknownOutcomes = all.stream().filter(Call::unknown).count();
    // Jobs stored more than once: a marker (one job asked for) with more than one row.
    long duplicates = storedPerMarker.values().stream()
        .filter(n -> n > 1)
        .mapToLong(n -> n - 1)
        .sum();
    Map<String, Long> errors = new HashMap<>();
    all.stream().filter(c -> !c.ok()).forEach(c -> errors.merge(c.error(), 1L, Long::sum));
    double seconds = (System.nanoTime() - testStart) / 1e9;
    System.out.printf(
        "backend kills: %d rounds, %d sessions terminated; %d jobs stored, %d stored twice (%d bulk calls ok,"
            + " %d failed of which %d stored anyway; %d single calls ok, %d failed of which %d stored anyway;"
            + " %d failures with outcome unknown); recovery after the last kill: bulk %d ms,"
            + " single %d ms (%d calls failed after it); %d effects, %d jobs ran more than once, max attempts %d;"
            + " %.1f s in all%n",
        rounds,
        terminated.get(),
        stored,
        duplicates,
        okBulk.size(),
        failedBulk.size(),
        failedBulkStoredAnyway,
        okSingle.size(),
        failedSingle.size(),
        failedSingleStoredAnyway,
        unknownOutcomes,
        TimeUnit.NANOSECONDS.toMillis(bulkRecovered),
        TimeUnit.NANOSECONDS.toMillis(singleRecovered),
        failuresAfterLastKill,
        countFresh(url, "SELECT count(*) FROM effects"),
        countFresh(url, "SELECT count(*) FROM pgjobs.finished_jobs WHERE attempts > 1"),
        countFresh(url, "SELECT coalesce(max(attempts), 0) FROM pgjobs.finished_jobs"),
        seconds);
    errors.entrySet().stream()
        .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
        .limit(10)
        .forEach(e -> System.out.printf("  %5d x %s%n", e.getValue(), e.getKey()));
    all.stream()
        .filter(c -> !c.ok() && storedPerCall.getOrDefault(c.marker() + "#" + c.call(), 0) > 0)
        .forEach(c -> System.out.printf(
            "  %s call %s#%d failed (%s) but was stored: %s%n",
            c.bulk() ? "bulk" : "single",
            c.marker(),
            c.call(),
            c.unknown() ? "outcome unknown" : "plain failure",
            c.error()));

    assertThat(terminated.get()).as("sessions terminated").isGreaterThanOrEqualTo(rounds);
    assertThat(Duration.ofNanos(bulkRecovered))
        .as("first bulk enqueue after the last kill")
        .isLessThanOrEqualTo(RECOVERY_BOUND);
    assertThat(Duration.ofNanos(singleRecovered))
        .as("first single enqueue after the last kill")
        .isLessThanOrEqualTo(RECOVERY_BOUND);
    assertThat(okBulk).as("bulk calls that returned").isNotEmpty();
    assertThat(okSingle).as("single calls that returned").isNotEmpty();

    // Nothing lost: every job of a call that returned exists and succeeded.
    for (Call c : okBulk) {
      assertThat(c.ids()).hasSize(BATCH);
      // Stored by this try or, when an earlier try's outcome was unknown, by that one.
      int byItsTries = 0;
      for (int call = 1; call <= c.call(); call++) {
        byItsTries += storedPerCall.getOrDefault(c.marker() + "#" + call, 0);
      }
      assertThat(byItsTries).as("jobs of returned bulk call " + c).isEqualTo(BATCH);
    }
    for (Call c : all) {
      for (UUID id : c.ids()) {
        assertThat(stateOf.get(id))
            .as("job " + id + " of returned call " + c)
            .isEqualTo("succeeded");
      }
    }
    // A failed COPY transaction stores all of its batch or nothing (nothing, unless its COMMIT got
    // through and only the answer was lost).
    for (Call c : failedBulk) {
      assertThat(storedPerCall.getOrDefault(c.marker() + "#" + c.call(), 0))
          .as("jobs of failed bulk call " + c)
          .isIn(0, BATCH);
    }
    // Nothing stored twice: each job was asked for under its key, however often its call was tried.
    assertThat(duplicates).as("jobs stored more than once").isZero();
    okSingle.forEach(c -> assertThat(storedPerMarker.get(c.marker()))
        .as("jobs of single marker " + c.marker())
        .isEqualTo(1));
    for (Call c : okBulk) {
      for (int i = 0; i < BATCH; i++) {
        assertThat(storedPerMarker.get(c.marker() + "-" + i))
            .as("jobs of marker " + c.marker() + "-" + i)
            .isEqualTo(1);
      }
    }
    // A call that failed plainly stored nothing; one that failed and stored anyway said the outcome
    // was unknown.
    assertThat(all.stream().filter(c -> !c.ok() && !c.unknown()))
        .as("plain failures whose jobs were stored")
        .noneMatch(c -> storedPerCall.getOrDefault(c.marker() + "#" + c.call(), 0) > 0);
    // Every stored job came from a call this test made.
    Map<String, Boolean> madeCalls = new HashMap<>();
    all.forEach(c -> madeCalls.put(c.marker() + "#" + c.call(), true));
    assertThat(storedPerCall.keySet()).as("stored jobs' calls").allMatch(madeCalls::containsKey);
    // Exactly once each: succeeded, no attempt's effect twice, nothing left running or waiting.
    assertCompleteRun(sql -> countFresh(url, sql), stored);
  }

  private long firstEnd(Predicate<Call> which) {
    Optional<Call> first =
        calls.stream().filter(which).min((a, b) -> Long.compare(a.endedAt(), b.endedAt()));
    return first.orElseThrow().endedAt();
  }
}
