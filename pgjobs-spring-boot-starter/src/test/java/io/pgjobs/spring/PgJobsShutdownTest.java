package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.EnqueuedJob;
import io.pgjobs.Job;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.spring.TestJobs.Sleep;
import io.pgjobs.spring.TestJobs.SleepHandler;
import io.pgjobs.testkit.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Closing the application context closes the worker gracefully: a job longer than the shutdown grace is
 * interrupted and goes back to its queue. The context is built by hand here, since the test is about
 * closing it.
 */
class PgJobsShutdownTest {
  static final TestDatabase db = TestDatabase.create();

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {
    @Bean
    SleepHandler sleepHandler() {
      return new SleepHandler();
    }
  }

  @Test
  void contextCloseGivesAJobLongerThanTheGraceBackToItsQueue() throws Exception {
    ConfigurableApplicationContext context = new SpringApplicationBuilder(App.class)
        .web(WebApplicationType.NONE)
        .properties(
            "spring.datasource.url=" + db.jdbcUrl(),
            "pgjobs.worker.shutdown-grace=500ms",
            "pgjobs.worker.poll-interval=100ms")
        .run();
    JobClient client = context.getBean(JobClient.class);
    SleepHandler handler = context.getBean(SleepHandler.class);
    EnqueuedJob job =
        client.enqueue(TestJobs.SLEEP, new Sleep(Duration.ofMinutes(10).toMillis()));
    assertThat(handler.started.await(10, TimeUnit.SECONDS))
        .as("the handler started")
        .isTrue();

    long closing = System.nanoTime();
    context.close();
    Duration closeTook = Duration.ofNanos(System.nanoTime() - closing);

    assertThat(closeTook)
        .as("close waits for the grace, not for the job")
        .isLessThan(Duration.ofSeconds(10));
    // the application's pool is closed with its context: read through the test's own
    Job back = JobClient.builder(db.dataSource()).build().get(job.job().id()).orElseThrow();
    // back in the queue, due at once (retrying: the interrupted attempt is recorded with kind
    // shutdown)
    assertThat(back.state()).isIn(JobState.QUEUED, JobState.RETRYING);
    assertThat(back.runAt()).isBeforeOrEqualTo(Instant.now().plusSeconds(1));
    assertThat(back.lockedBy()).isNull();
  }
}
