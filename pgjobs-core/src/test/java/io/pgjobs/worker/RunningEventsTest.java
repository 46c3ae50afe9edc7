package io.pgjobs.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.events.JobEvent;
import io.pgjobs.events.JobEventListener;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.store.ExecutionStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The worker announces the jobs it claimed as running (schema version 20: the claim statement notifies
 * nothing), and a write about a job that comes next never overtakes that announcement.
 */
class RunningEventsTest extends PgJobsTestBase {
  private static final PayloadCodec CODEC = new PayloadCodec(PayloadCodec.DEFAULT_MAPPER);

  /** A pool whose connections are handed out once {@code gate} opens; {@code closed} is set as each goes back. */
  private static DataSource gated(CountDownLatch entered, CountDownLatch gate, AtomicBoolean closed, boolean fail) {
    DataSource real = db.dataSource();
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
        (proxy, method, args) -> {
          if (!method.getName().equals("getConnection")) {
            return invoke(method, real, args);
          }
          entered.countDown();
          assertThat(gate.await(30, TimeUnit.SECONDS)).isTrue();
          if (fail) {
            throw new SQLException("the database is away", "08006");
          }
          Connection c = real.getConnection();
          return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
              (p, m, a) -> {
                Object result = invoke(m, c, a);
                if (m.getName().equals("close")) {
                  closed.set(true);
                }
                return result;
              });
        });
  }

  private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static ClaimedJob claimOne() throws SQLException {
    client.enqueue(NUMBERED, new Numbered(1));
    return new ExecutionStore(db.dataSource(), "pgjobs", CODEC).claim(JobType.DEFAULT_QUEUE, 1, "w").get(0);
  }

  @Test
  void aWriteAboutAClaimedJobWaitsUntilItsClaimWasAnnouncedAsRunning() throws Exception {
    List<JobEvent> events = new CopyOnWriteArrayList<>();
    try (JobEventListener listener = new JobEventListener(db.dataSource(), client.eventsChannel())) {
      listener.subscribe(batch -> events.addAll(batch.events()));
      listener.start();
      await().atMost(Duration.ofSeconds(10)).until(listener::isListening);
      ClaimedJob job = claimOne();
      CountDownLatch entered = new CountDownLatch(1);
      CountDownLatch gate = new CountDownLatch(1);
      AtomicBoolean announced = new AtomicBoolean();
      RunningEvents running = new RunningEvents(new ExecutionStore(gated(entered, gate, announced, false), "pgjobs", CODEC));

      running.announce(List.of(job));
      assertThat(entered.await(10, TimeUnit.SECONDS)).as("the announcement is on its way").isTrue();
      CompletableFuture<Boolean> write = CompletableFuture.supplyAsync(() -> {
        running.awaitAnnounced(List.of(job));
        return announced.get(); // what a write about the job would see when it goes ahead
      });
      assertThat(running.unsent()).isEqualTo(1);
      gate.countDown();

      assertThat(write.get(10, TimeUnit.SECONDS)).as("the announcement was out when the write went ahead").isTrue();
      assertThat(running.unsent()).isZero();
      await().atMost(Duration.ofSeconds(10)).until(() -> events.stream()
          .anyMatch(e -> e.jobId().equals(job.id()) && "running".equals(e.state().value()) && e.attempts() == 1));
    }
  }

  @Test
  void aFailedAnnouncementIsNotWaitedForByTheWritesThatCome() throws Exception {
    ClaimedJob job = claimOne();
    CountDownLatch gate = new CountDownLatch(0); // open: every connection fails at once
    RunningEvents running = new RunningEvents(
        new ExecutionStore(gated(new CountDownLatch(1), gate, new AtomicBoolean(), true), "pgjobs", CODEC));

    running.announce(List.of(job));
    long start = System.nanoTime();
    running.awaitAnnounced(List.of(job));

    assertThat(Duration.ofNanos(System.nanoTime() - start))
        .as("released by the failure, not by the wait's bound")
        .isLessThan(Duration.ofMillis(RunningEvents.ANNOUNCE_WAIT_MILLIS));
    await().atMost(Duration.ofSeconds(10)).until(() -> running.unsent() == 0);
  }
}
