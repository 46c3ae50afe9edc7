package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.metrics.MetricNames;
import io.pgjobs.spring.TestJobs.Greet;
import io.pgjobs.spring.TestJobs.GreetHandler;
import io.pgjobs.testkit.Await;
import io.pgjobs.testkit.TestDatabase;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;

/** The starter in a whole application context on the real PostgreSQL. */
@SpringBootTest(
    classes = PgJobsStarterTest.App.class,
    properties = {"pgjobs.worker.poll-interval=100ms", "management.health.pgjobs.enabled=true"})
@DirtiesContext
class PgJobsStarterTest {
  static final TestDatabase db = TestDatabase.create();

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", db::jdbcUrl);
  }

  @AfterAll
  static void stopWorkerThenDropDatabase(ConfigurableApplicationContext context) {
    context.getBean(PgJobsWorkerLifecycle.class).stop(); // before its database goes away
    db.close();
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  @EnableTransactionManagement
  static class App {
    @Bean
    GreetHandler greetHandler() {
      return new GreetHandler();
    }

    @Bean
    Signups signups(JdbcTemplate jdbc, TransactionalJobClient jobs) {
      return new Signups(jdbc, jobs);
    }
  }

  /** Application code: a row and a job in one {@code @Transactional} method. */
  static class Signups {
    private final JdbcTemplate jdbc;
    private final TransactionalJobClient jobs;

    Signups(JdbcTemplate jdbc, TransactionalJobClient jobs) {
      this.jdbc = jdbc;
      this.jobs = jobs;
    }

    @Transactional
    public UUID signUp(String name, boolean failAfterEnqueue) {
      jdbc.update("INSERT INTO signups(name) VALUES (?)", name);
      EnqueuedJob job = jobs.enqueue(TestJobs.GREET, new Greet(name));
      if (failAfterEnqueue) {
        throw new IllegalStateException("signup of " + name + " failed after the enqueue");
      }
      return job.job().id();
    }
  }

  @Autowired
  JobClient client;

  @Autowired
  JobWorker worker;

  @Autowired
  PgJobsWorkerLifecycle lifecycle;

  @Autowired
  GreetHandler greetHandler;

  @Autowired
  Signups signups;

  @Autowired
  JdbcTemplate jdbc;

  @Autowired
  MeterRegistry meterRegistry;

  @Autowired
  PgJobsHealthIndicator health;

  @Autowired
  TransactionalJobClient transactionalClient;

  @Autowired
  org.springframework.transaction.support.TransactionTemplate transactions;

  static {
    db.execute("CREATE TABLE signups (name text PRIMARY KEY)");
  }

  @Test
  void contextStartsAWorkerThatRunsTheHandlerBean() {
    assertThat(lifecycle.isRunning()).isTrue();
    assertThat(worker.queues()).containsExactly("greetings");

    EnqueuedJob job = client.enqueue(TestJobs.GREET, new Greet("ada"));

    Await.awaitState(
        client::get, job.job().id(), Job::state, JobState.SUCCEEDED, Duration.ofSeconds(10));
    assertThat(greetHandler.greeted).contains("ada");
  }

  @Test
  void enqueueInsideATransactionThatRollsBackStoresNothing() {
    assertThatThrownBy(() -> signups.signUp("grace", true))
        .hasMessageContaining("failed after the enqueue");

    assertThat(jdbc.queryForObject("SELECT count(*) FROM signups WHERE name = 'grace'", Long.class))
        .isZero();
    assertThat(jobsWithName("grace")).isZero();
    assertThat(greetHandler.greeted).doesNotContain("grace");
  }

  @Test
  void enqueueInsideATransactionThatCommitsRunsOnce() {
    UUID id = signups.signUp("linus", false);

    Await.awaitState(client::get, id, Job::state, JobState.SUCCEEDED, Duration.ofSeconds(10));
    assertThat(jobsWithName("linus")).isEqualTo(1);
    assertThat(greetHandler.greeted.stream().filter("linus"::equals)).hasSize(1);
    assertThat(client.get(id).orElseThrow().attempts()).isEqualTo(1);
  }

  @Test
  void enqueueAllInsideATransactionThatRollsBackStoresNone() {
    TransactionalJobClient jobs = transactionalClient;
    assertThatThrownBy(() -> transactions.executeWithoutResult(status -> {
          jobs.enqueueAll(
              TestJobs.GREET,
              java.util.List.of(new Greet("bulk-1"), new Greet("bulk-2")),
              io.pgjobs.EnqueueOptions.DEFAULTS);
          throw new IllegalStateException("rolled back after enqueueAll");
        }))
        .hasMessageContaining("rolled back after enqueueAll");

    assertThat(jobsWithName("bulk-1") + jobsWithName("bulk-2")).isZero();
  }

  @Test
  void metricsGoToTheApplicationsMeterRegistry() {
    EnqueuedJob job = client.enqueue(TestJobs.GREET, new Greet("metrics"));
    Await.awaitState(
        client::get, job.job().id(), Job::state, JobState.SUCCEEDED, Duration.ofSeconds(10));

    assertThat(
            meterRegistry.find(MetricNames.JOBS_ENQUEUED).tag("kind", "greet").counter())
        .isNotNull();
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(() -> assertThat(meterRegistry
                .find(MetricNames.JOBS_COMPLETED)
                .tag("kind", "greet")
                .counter())
            .isNotNull());
    assertThat(meterRegistry
            .find(MetricNames.STUCK_LANES)
            .tag("worker", worker.workerId())
            .gauge())
        .isNotNull();
  }

  @Test
  void healthIsUpWithTheWorkersDetails() {
    Health h = health.health();

    assertThat(h.getStatus()).isEqualTo(Status.UP);
    assertThat(h.getDetails())
        .containsEntry("database", "reachable")
        .containsEntry("running", true)
        .containsEntry("fenced", false)
        .containsEntry("stuckLanes", 0)
        .containsEntry("workerId", worker.workerId());
  }

  private long jobsWithName(String name) {
    return jdbc.queryForObject(
        "SELECT (SELECT count(*) FROM pgjobs.jobs WHERE payload->>'name' = ?)"
            + " + (SELECT count(*) FROM pgjobs.finished_jobs WHERE payload->>'name' = ?)",
        Long.class,
        name,
        name);
  }
}
