package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.JobClient;
import io.pgjobs.maintenance.Maintenance;
import io.pgjobs.spring.TestJobs.GreetHandler;
import io.pgjobs.testkit.TestDatabase;
import io.pgjobs.worker.JobWorker;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@code pgjobs.*} properties: invalid values stop the startup with Spring Boot's failure analysis
 * ("APPLICATION FAILED TO START", the property, its value, the reason and what is allowed).
 */
@ExtendWith(OutputCaptureExtension.class)
class PgJobsPropertiesTest {
  static final TestDatabase db = TestDatabase.create();

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class WithHandler {
    @Bean
    GreetHandler greetHandler() {
      return new GreetHandler();
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class WithoutHandler {}

  @Test
  void pollIntervalBelowTheMinimumFailsNamingThePropertyAndTheRange(CapturedOutput output) {
    assertStartupFails(WithHandler.class, output, "pgjobs.worker.poll-interval=5ms")
        .contains("APPLICATION FAILED TO START")
        .contains("Invalid value '5ms' for configuration property 'pgjobs.worker.poll-interval'")
        .contains("poll interval must be between 10ms and 1h, was 5ms");
  }

  @Test
  void invalidSchemaNameFailsNamingWhatIsAllowed(CapturedOutput output) {
    assertStartupFails(WithHandler.class, output, "pgjobs.schema=Jobs-Schema")
        .contains("Invalid value 'Jobs-Schema' for configuration property 'pgjobs.schema'")
        .contains("allowed: 1 to 51 of lowercase letters, digits and _, not starting with a digit");
  }

  @Test
  void queueConcurrencyOutOfRangeFails(CapturedOutput output) {
    assertStartupFails(WithHandler.class, output, "pgjobs.worker.queues.greetings=0")
        .contains("configuration property 'pgjobs.worker.queues'")
        .contains("concurrency of queue 'greetings' must be between 1 and 10000, was 0");
  }

  @Test
  void staleThresholdAboveTheMaximumFails(CapturedOutput output) {
    assertStartupFails(WithHandler.class, output, "pgjobs.worker.stale-threshold=2d")
        .contains("Invalid value '2d' for configuration property 'pgjobs.worker.stale-threshold'")
        .contains("stale threshold must be between 1s and 1d, was 2d");
  }

  @Test
  void unreadableDurationFailsWithSpringsBindingAnalysis(CapturedOutput output) {
    assertStartupFails(WithHandler.class, output, "pgjobs.worker.shutdown-grace=5x")
        .contains("APPLICATION FAILED TO START")
        .contains("pgjobs.worker.shutdown-grace")
        .contains("5x");
  }

  @Test
  void enabledWorkerWithoutHandlerBeansFailsSayingHowToTurnItOff(CapturedOutput output) {
    assertStartupFails(WithoutHandler.class, output)
        .contains("configuration property 'pgjobs.worker.enabled'")
        .contains("the worker has no job handler")
        .contains("pgjobs.worker.enabled=false");
  }

  @Test
  void webOnlyNodeRunsNoWorkerButEnqueues() {
    try (ConfigurableApplicationContext context =
        start(WithoutHandler.class, "pgjobs.worker.enabled=false")) {
      assertThat(context.getBeansOfType(JobWorker.class)).isEmpty();
      assertThat(context
              .getBean(TransactionalJobClient.class)
              .enqueue(TestJobs.GREET, new TestJobs.Greet("web")))
          .isNotNull();
    }
  }

  @Test
  void propertiesReachTheWorker() {
    try (ConfigurableApplicationContext context = start(
        WithHandler.class,
        "pgjobs.worker.queues.greetings=3",
        "pgjobs.worker.queues[more.greetings]=2",
        "pgjobs.worker.id=spring-test-worker")) {
      JobWorker worker = context.getBean(JobWorker.class);
      assertThat(worker.workerId()).isEqualTo("spring-test-worker");
      assertThat(worker.queues()).containsExactlyInAnyOrder("greetings", "more.greetings");
    }
  }

  @Test
  void defaultsAreThoseOfTheBuilders() {
    PgJobsProperties p = new PgJobsProperties();
    assertThat(p.getSchema()).isEqualTo(JobClient.DEFAULT_SCHEMA);
    assertThat(p.isMigrateOnStart()).isTrue();
    PgJobsProperties.Worker w = p.getWorker();
    assertThat(w.isEnabled()).isTrue();
    assertThat(w.getConcurrency()).isEqualTo(JobWorker.DEFAULT_CONCURRENCY);
    assertThat(w.getPollInterval()).isEqualTo(JobWorker.DEFAULT_POLL_INTERVAL);
    assertThat(w.getShutdownGrace()).isEqualTo(JobWorker.DEFAULT_SHUTDOWN_GRACE);
    assertThat(w.getStaleThreshold()).isEqualTo(Maintenance.DEFAULT_STALE_THRESHOLD);
    assertThat(w.getDeadAfter()).isEqualTo(Maintenance.DEFAULT_WORKER_DEAD_AFTER);
    assertThat(w.getClaimBatch()).isEqualTo(JobWorker.DEFAULT_CLAIM_BATCH);
    assertThat(w.getRetention()).isEqualTo(Maintenance.DEFAULT_RETENTION);
    PgJobsProperties.Web web = p.getWeb();
    assertThat(web.isEnabled()).isFalse();
    assertThat(web.getPath()).isEqualTo("/jobs");
    assertThat(web.getRequestTimeout())
        .isEqualTo(io.pgjobs.server.ApiServer.DEFAULT_REQUEST_TIMEOUT);
  }

  private static ConfigurableApplicationContext start(Class<?> app, String... properties) {
    List<String> all = new ArrayList<>(List.of(properties));
    all.add("spring.datasource.url=" + db.jdbcUrl());
    return new SpringApplicationBuilder(app)
        .web(WebApplicationType.NONE)
        .properties(all.toArray(String[]::new))
        .run();
  }

  private static org.assertj.core.api.AbstractStringAssert<?> assertStartupFails(
      Class<?> app, CapturedOutput output, String... properties) {
    assertThatThrownBy(() -> start(app, properties).close()).isInstanceOf(RuntimeException.class);
    return assertThat(output.getOut());
  }
}
