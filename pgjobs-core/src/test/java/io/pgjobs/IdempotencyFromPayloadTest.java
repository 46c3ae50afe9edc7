package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Idempotency keys taken from a payload field (the seed's {@code #[idempotent(key = "input.payment_id")]}). */
class IdempotencyFromPayloadTest extends PgJobsTestBase {
  /** A payment: its id is its idempotency key. */
  @JobDefaults(name = "charge", idempotencyKey = "payment_id")
  public record Charge(String payment_id, long cents) {}

  /** A nested payload. */
  public record Order(Input input) {}

  /** Its input. */
  public record Input(String payment_id) {}

  static final JobType<Charge> CHARGE = JobType.of(Charge.class);
  static final JobType<Order> ORDER =
      JobType.of("order", Order.class).withIdempotencyKeyFrom("/input/payment_id");

  @Test
  void tenThreadsEnqueueingTheSamePaymentIdGetOneJobEachRound() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(10);
    try {
      for (int round = 0; round < 5; round++) {
        String paymentId = "pay-" + round;
        CountDownLatch go = new CountDownLatch(1);
        List<Future<EnqueuedJob>> results = new ArrayList<>();
        for (int t = 0; t < 10; t++) {
          results.add(pool.submit(() -> {
            go.await();
            return client.enqueue(CHARGE, new Charge(paymentId, 500));
          }));
        }
        go.countDown();
        Set<UUID> ids = ConcurrentHashMap.newKeySet();
        int created = 0;
        for (Future<EnqueuedJob> f : results) {
          EnqueuedJob e = f.get();
          ids.add(e.job().id());
          created += e.replayed() ? 0 : 1;
        }
        assertThat(ids).as("round " + round).hasSize(1);
        assertThat(created).isEqualTo(1);
        assertThat(client.get(ids.iterator().next()).orElseThrow().idempotencyKey())
            .isEqualTo("charge:" + paymentId);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(count("pgjobs.jobs")).isEqualTo(5);
  }

  @Test
  void aPayloadWithoutTheFieldIsRefusedNamingItAndNothingIsStored() {
    assertThatThrownBy(() -> client.enqueue(CHARGE, new Charge(null, 1)))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("no field 'payment_id'")
        .hasMessageContaining("'charge'");
    assertThatThrownBy(() -> client.enqueue(ORDER, new Order(null)))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("'/input/payment_id'");
    assertThat(count("pgjobs.jobs")).isZero();
    assertThat(count("pgjobs.job_keys")).isZero();
  }

  @Test
  void aJsonPointerReachesANestedFieldAndAnExplicitKeyStillWins() {
    EnqueuedJob first = client.enqueue(ORDER, new Order(new Input("p-1")));
    EnqueuedJob again = client.enqueue(ORDER, new Order(new Input("p-1")));
    assertThat(again.replayed()).isTrue();
    assertThat(again.job().id()).isEqualTo(first.job().id());
    assertThat(first.job().idempotencyKey()).isEqualTo("order:p-1");

    EnqueuedJob explicit = client.enqueue(
        ORDER,
        new Order(new Input("p-1")),
        EnqueueOptions.builder().idempotencyKey("my-own-key").build());
    assertThat(explicit.replayed()).isFalse();
    assertThat(explicit.job().idempotencyKey()).isEqualTo("my-own-key");
  }

  @Test
  void byNameTheKnownTypesRuleAppliesToo() {
    JobClient named = JobClient.builder(db.dataSource()).knownTypes(CHARGE).build();
    EnqueuedJob a = named.enqueue(
        "charge", java.util.Map.of("payment_id", "by-name", "cents", 1), EnqueueOptions.DEFAULTS);
    EnqueuedJob b = named.enqueue(
        "charge", java.util.Map.of("payment_id", "by-name", "cents", 1), EnqueueOptions.DEFAULTS);
    assertThat(b.replayed()).isTrue();
    assertThat(b.job().id()).isEqualTo(a.job().id());
    assertThatThrownBy(
            () -> named.enqueue("charge", java.util.Map.of("cents", 1), EnqueueOptions.DEFAULTS))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("no field 'payment_id'");
  }

  @Test
  void bulkEnqueueOfSuchATypeGivesEachJobTheKeyOfItsPayload() {
    EnqueuedJob single = client.enqueue(CHARGE, new Charge("x", 1));

    List<UUID> ids = client.enqueueAll(
        CHARGE, List.of(new Charge("x", 1), new Charge("y", 2)), EnqueueOptions.DEFAULTS);

    assertThat(ids.get(0))
        .as("the payment enqueued before")
        .isEqualTo(single.job().id());
    assertThat(client.get(ids.get(1)).orElseThrow().idempotencyKey()).isEqualTo("charge:y");
    assertThat(count("pgjobs.jobs")).isEqualTo(2);
    assertThat(client.enqueue(CHARGE, new Charge("y", 2)).job().id())
        .as("a single enqueue of y")
        .isEqualTo(ids.get(1));
  }

  @Test
  void aBadFieldIsRefusedWhenTheTypeIsDeclared() {
    assertThatThrownBy(
            () -> JobType.of("x", Charge.class).withIdempotencyKeyFrom("no spaces allowed"))
        .isInstanceOf(InvalidJobException.class)
        .hasMessageContaining("neither a field name");
  }
}
