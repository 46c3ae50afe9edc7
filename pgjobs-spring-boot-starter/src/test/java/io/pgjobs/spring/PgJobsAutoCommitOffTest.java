package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.spring.TestJobs.Greet;
import io.pgjobs.spring.TestJobs.GreetHandler;
import io.pgjobs.testkit.Await;
import io.pgjobs.testkit.TestDatabase;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter on a pool tuned with {@code spring.datasource.hikari.auto-commit=false} (a common Hibernate
 * setting): enqueues outside a transaction, in one, and in a synchronization without one are stored (or
 * rolled back) as they say, and the worker runs each job exactly once.
 */
@SpringBootTest(
    classes = PgJobsAutoCommitOffTest.App.class,
    properties = {"pgjobs.worker.poll-interval=100ms", "spring.datasource.hikari.auto-commit=false"
    })
class PgJobsAutoCommitOffTest {
  static final TestDatabase db = TestDatabase.create();

  @org.springframework.test.context.DynamicPropertySource
  static void database(org.springframework.test.context.DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", db::jdbcUrl);
  }

  @AfterAll
  static void stopWorkerThenDropDatabase(ConfigurableApplicationContext context) {
    context.getBean(PgJobsWorkerLifecycle.class).stop();
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
  }

  @Autowired
  JobClient client;

  @Autowired
  TransactionalJobClient jobs;

  @Autowired
  GreetHandler greetHandler;

  @Autowired
  PlatformTransactionManager transactionManager;

  private UUID awaitSucceeded(UUID id) {
    Await.awaitState(client::get, id, Job::state, JobState.SUCCEEDED, Duration.ofSeconds(20));
    assertThat(client.get(id).orElseThrow().attempts()).isEqualTo(1);
    return id;
  }

  private long greetings(String name) {
    return greetHandler.greeted.stream().filter(name::equals).count();
  }

  @Test
  void enqueueWithoutATransactionIsStoredAndRunsOnce() {
    UUID id = jobs.enqueue(TestJobs.GREET, new Greet("outside")).job().id();
    // One statement, one snapshot: the job is in one of the two tables.
    assertThat(db.queryLong("SELECT (SELECT count(*) FROM pgjobs.jobs WHERE id = '" + id + "')"
            + " + (SELECT count(*) FROM pgjobs.finished_jobs WHERE id = '" + id + "')"))
        .isEqualTo(1);
    awaitSucceeded(id);
    await().atMost(Duration.ofSeconds(5)).until(() -> greetings("outside") == 1);
  }

  @Test
  void enqueueInASynchronizationWithoutATransactionIsStoredAndRunsOnce() {
    TransactionTemplate supports = new TransactionTemplate(transactionManager);
    supports.setPropagationBehavior(TransactionDefinition.PROPAGATION_SUPPORTS);
    UUID id = supports.execute(
        status -> jobs.enqueue(TestJobs.GREET, new Greet("supports")).job().id());
    awaitSucceeded(id);
    await().atMost(Duration.ofSeconds(5)).until(() -> greetings("supports") == 1);
  }

  @Test
  void enqueueInATransactionCommitsOrRollsBackWithIt() {
    TransactionTemplate required = new TransactionTemplate(transactionManager);
    UUID kept = required.execute(
        status -> jobs.enqueue(TestJobs.GREET, new Greet("kept")).job().id());
    awaitSucceeded(kept);
    assertThatThrownBy(() -> required.execute(status -> {
          jobs.enqueue(TestJobs.GREET, new Greet("dropped"));
          throw new IllegalStateException("rolled back");
        }))
        .hasMessageContaining("rolled back");
    assertThat(db.queryLong("SELECT count(*) FROM pgjobs.jobs WHERE payload->>'name' = 'dropped'"))
        .isZero();
    await().atMost(Duration.ofSeconds(5)).until(() -> greetings("kept") == 1);
    assertThat(greetings("dropped")).isZero();
  }
}
