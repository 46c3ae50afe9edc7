package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.JobClient;
import io.pgjobs.spring.TestJobs.GreetHandler;
import io.pgjobs.testkit.PostgresCluster;
import io.pgjobs.testkit.PostgresCluster.Node;
import io.pgjobs.testkit.PostgresCluster.Replication;
import io.pgjobs.testkit.Tags;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.actuate.endpoint.IndicatedHealthDescriptor;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Actuator health of pgjobs on a read-only standby: DOWN with {@code database = read-only} and the reason,
 * UP again by itself once the standby is promoted. Runs on a private primary and standby
 * ({@link PostgresCluster}); the primary is crashed so that the standby is the only server left.
 */
@Tag(Tags.PROCESS)
class PgJobsReadOnlyHealthTest {
  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {
    @Bean
    GreetHandler greetHandler() {
      return new GreetHandler();
    }
  }

  @Test
  void healthIsDownOnAStandbyAndUpOnceItIsPromoted() {
    try (PostgresCluster cluster = PostgresCluster.start(Replication.ASYNCHRONOUS)) {
      cluster.createDatabase("jobs");
      PGSimpleDataSource primary = new PGSimpleDataSource();
      primary.setUrl(cluster.jdbcUrl(Node.PRIMARY, "jobs"));
      JobClient.builder(primary).build().migrate();
      cluster.awaitStandbyReplayed();
      cluster.crashPrimary();

      try (ConfigurableApplicationContext context = new SpringApplicationBuilder(App.class)
          .web(WebApplicationType.NONE)
          .properties(
              "spring.datasource.url=" + cluster.jdbcUrl(Node.STANDBY, "jobs"),
              "spring.datasource.hikari.connection-timeout=1000",
              "management.endpoint.health.show-details=always",
              "pgjobs.migrate-on-start=false",
              "pgjobs.worker.shutdown-grace=0s")
          .run()) {
        HealthEndpoint endpoint = context.getBean(HealthEndpoint.class);
        var health = (IndicatedHealthDescriptor) endpoint.healthForPath("pgjobs");
        assertThat(health.getStatus()).isEqualTo(Status.DOWN);
        assertThat(health.getDetails().get("database")).isEqualTo("read-only");
        assertThat((String) health.getDetails().get("reason")).contains("standby", "promoted");

        cluster.promoteStandby();
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> endpoint.healthForPath("pgjobs").getStatus().equals(Status.UP));
      }
    }
  }
}
