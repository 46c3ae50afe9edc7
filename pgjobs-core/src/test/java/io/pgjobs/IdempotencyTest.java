package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Acceptance 5: one idempotency key names one job, however many enqueues race for it, for as long as it is kept. */
class IdempotencyTest extends PgJobsTestBase {
  private static final int THREADS = 10;

  private static EnqueuedJob enqueueWithKey(int n, String key) {
    return client.enqueue(
        NUMBERED, new Numbered(n), EnqueueOptions.builder().idempotencyKey(key).build());
  }

  /** Enqueues {@code key} from {@value #THREADS} threads released at the same instant. */
  private static List<EnqueuedJob> enqueueConcurrently(String key) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      CountDownLatch ready = new CountDownLatch(THREADS);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<EnqueuedJob>> futures = new ArrayList<>();
      for (int i = 0; i < THREADS; i++) {
        int n = i;
        futures.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          return enqueueWithKey(7, key);
        }));
      }
      assertThat(ready.await(30, TimeUnit.SECONDS)).isTrue();
      go.countDown();
      List<EnqueuedJob> results = new ArrayList<>();
      for (Future<EnqueuedJob> f : futures) {
        results.add(f.get(60, TimeUnit.SECONDS));
      }
      return results;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void sameKeyEnqueuedConcurrentlyFromTenThreadsYieldsOneJob() throws Exception {
    for (int round = 0; round < 5; round++) {
      db.execute("TRUNCATE pgjobs.jobs, pgjobs.finished_jobs, pgjobs.job_keys");
      String key = "order-42-receipt-" + round;

      List<EnqueuedJob> results = enqueueConcurrently(key);

      assertThat(results).hasSize(THREADS);
      List<EnqueuedJob> originals = results.stream().filter(r -> !r.replayed()).toList();
      assertThat(originals)
          .as("round %d: exactly one enqueue created the job", round)
          .hasSize(1);
      Job original = originals.getFirst().job();
      assertThat(results).extracting(r -> r.job().id()).containsOnly(original.id());
      assertThat(results).extracting(r -> r.job().payload()).containsOnly(original.payload());
      assertThat(results).extracting(r -> r.job().idempotencyKey()).containsOnly(key);
      assertThat(count("pgjobs.jobs")).isEqualTo(1);
      assertThat(count("pgjobs.job_keys")).isEqualTo(1);
      assertThat(client.get(original.id()).orElseThrow().payload()).isEqualTo(original.payload());
    }
  }

  @Test
  void identicalRequestUnderAKeyReturnsTheOriginalJobAndStoresNothing() {
    EnqueuedJob first = client.enqueue(
        NUMBERED,
        new Numbered(1),
        EnqueueOptions.builder()
            .idempotencyKey("k1")
            .priority(Priority.HIGH)
            .context("request 1")
            .build());
    long jobs = count("pgjobs.jobs");

    // The context is free text for debugging, not part of what is asked: a retry may carry another.
    EnqueuedJob second = client.enqueue(
        NUMBERED,
        new Numbered(1),
        EnqueueOptions.builder()
            .idempotencyKey("k1")
            .priority(Priority.HIGH)
            .context("request 1, retried")
            .build());

    assertThat(first.replayed()).isFalse();
    assertThat(second.replayed()).isTrue();
    assertThat(second.job().id()).isEqualTo(first.job().id());
    assertThat(second.job().context()).isEqualTo("request 1");
    assertThat(count("pgjobs.jobs")).isEqualTo(jobs);
  }

  @Test
  void differentRequestUnderAKeyIsRefusedNamingTheKeyAndStoresNothing() {
    EnqueuedJob first = enqueueWithKey(1, "k2");
    long jobs = count("pgjobs.jobs");

    for (Runnable other : List.<Runnable>of(
        () -> enqueueWithKey(2, "k2"),
        () -> client.enqueue(
            NUMBERED,
            new Numbered(1),
            EnqueueOptions.builder().idempotencyKey("k2").queue("other").build()),
        () -> client.enqueue(
            NUMBERED,
            new Numbered(1),
            EnqueueOptions.builder()
                .idempotencyKey("k2")
                .priority(Priority.CRITICAL)
                .build()),
        () -> client.enqueue(
            "other_type",
            java.util.Map.of("n", 1),
            EnqueueOptions.builder().idempotencyKey("k2").build()))) {
      assertThatThrownBy(other::run)
          .isInstanceOfSatisfying(IdempotencyKeyReusedException.class, e -> {
            assertThat(e.key()).isEqualTo("k2");
            assertThat(e.jobId()).isEqualTo(first.job().id());
          })
          .hasMessageContaining("'k2' was already used for job " + first.job().id());
    }
    assertThat(count("pgjobs.jobs")).isEqualTo(jobs);
  }

  @Test
  void payloadsAreComparedAsJsonNotAsText() {
    EnqueueOptions key = EnqueueOptions.builder().idempotencyKey("k-json").build();
    EnqueuedJob first =
        client.enqueue("other_type", tree("{\"a\":1,\"b\":[1,{\"x\":true,\"y\":null}]}"), key);

    EnqueuedJob reordered = client.enqueue(
        "other_type", tree("{ \"b\": [1, {\"y\":null, \"x\":true}], \"a\": 1 }"), key);

    assertThat(reordered.replayed()).isTrue();
    assertThat(reordered.job().id()).isEqualTo(first.job().id());
    assertThatThrownBy(() ->
            client.enqueue("other_type", tree("{\"a\":1,\"b\":[{\"x\":true,\"y\":null},1]}"), key))
        .isInstanceOf(IdempotencyKeyReusedException.class);
  }

  @Test
  void keyStoredBeforeFingerprintsStillReplaysAnyRequest() {
    EnqueuedJob first = enqueueWithKey(1, "k-old");
    db.execute("UPDATE pgjobs.job_keys SET fingerprint = NULL WHERE idempotency_key = 'k-old'");

    EnqueuedJob again = enqueueWithKey(2, "k-old");

    assertThat(again.replayed()).isTrue();
    assertThat(again.job().id()).isEqualTo(first.job().id());
  }

  private static tools.jackson.databind.JsonNode tree(String json) {
    return io.pgjobs.json.PayloadCodec.DEFAULT_MAPPER.readTree(json);
  }

  @Test
  void keyStillReplaysAfterTheJobFinished() {
    AtomicInteger runs = new AtomicInteger();
    start(worker()
        .pollInterval(Duration.ofMillis(50))
        .register(NUMBERED, (ctx, p) -> runs.incrementAndGet()));
    EnqueuedJob first = enqueueWithKey(1, "welcome-mail-user-7");
    awaitState(first.job().id(), JobState.SUCCEEDED);
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("pgjobs.finished_jobs")).isEqualTo(1);

    EnqueuedJob again = enqueueWithKey(1, "welcome-mail-user-7");

    assertThat(again.replayed()).isTrue();
    assertThat(again.job().id()).isEqualTo(first.job().id());
    assertThat(again.job().state()).isEqualTo(JobState.SUCCEEDED);
    assertThat(again.job().finishedAt()).isNotNull();
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("pgjobs.finished_jobs")).isEqualTo(1);
    assertThat(runs.get()).isEqualTo(1);
  }

  @Test
  void differentKeysCreateDifferentJobs() {
    EnqueuedJob a = enqueueWithKey(1, "key-a");
    EnqueuedJob b = enqueueWithKey(1, "key-b");
    EnqueuedJob none1 = client.enqueue(NUMBERED, new Numbered(1));
    EnqueuedJob none2 = client.enqueue(NUMBERED, new Numbered(1));

    assertThat(List.of(a, b, none1, none2)).noneMatch(EnqueuedJob::replayed);
    assertThat(List.of(a, b, none1, none2)).extracting(r -> r.job().id()).doesNotHaveDuplicates();
    assertThat(count("pgjobs.jobs")).isEqualTo(4);
    assertThat(count("pgjobs.job_keys")).isEqualTo(2);
  }

  @Test
  void keysAreCaseSensitiveAndExact() {
    EnqueuedJob lower = enqueueWithKey(1, "abc");
    EnqueuedJob upper = enqueueWithKey(1, "ABC");
    EnqueuedJob spaced = enqueueWithKey(1, "abc ");
    assertThat(List.of(lower, upper, spaced)).noneMatch(EnqueuedJob::replayed);
    assertThat(count("pgjobs.jobs")).isEqualTo(3);
  }

  @Test
  void keyOfAnEnqueueThatRolledBackIsFreeAgain() throws SQLException {
    UUID rolledBack;
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      rolledBack = client
          .enqueue(
              tx,
              NUMBERED,
              new Numbered(1),
              EnqueueOptions.builder().idempotencyKey("k-tx").build())
          .job()
          .id();
      tx.rollback();
    }

    EnqueuedJob fresh = enqueueWithKey(2, "k-tx");

    assertThat(fresh.replayed()).isFalse();
    assertThat(fresh.job().id()).isNotEqualTo(rolledBack);
    assertThat(client.get(fresh.job().id()).orElseThrow().payload().get("n").asInt())
        .isEqualTo(2);
  }

  @Test
  void keyReplaysInsideTheCallersTransactionToo() throws SQLException {
    EnqueuedJob first = enqueueWithKey(1, "k-in-tx");
    try (Connection tx = db.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      EnqueuedJob again = client.enqueue(
          tx,
          NUMBERED,
          new Numbered(1),
          EnqueueOptions.builder().idempotencyKey("k-in-tx").build());
      tx.commit();
      assertThat(again.replayed()).isTrue();
      assertThat(again.job().id()).isEqualTo(first.job().id());
    }
    assertThat(count("pgjobs.jobs")).isEqualTo(1);
  }
}
