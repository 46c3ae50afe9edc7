package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.pgjobs.spring.TestJobs.GreetHandler;
import io.pgjobs.testkit.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
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
 * Actuator health of pgjobs: DOWN while the database refuses connections, UP again when it takes them.
 * The database is made unreachable by forbidding connections to it and ending the sessions it has.
 */
class PgJobsHealthTest {
  static final TestDatabase db = TestDatabase.create();

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {
    @Bean
    GreetHandler greetHandler() {
      return new GreetHandler();
    }
  }

  @Test
  void healthIsDownWhileTheDatabaseIsUnreachable() {
    try (ConfigurableApplicationContext context = new SpringApplicationBuilder(App.class)
        .web(WebApplicationType.NONE)
        .properties(
            "spring.datasource.url=" + db.jdbcUrl(),
            "spring.datasource.hikari.connection-timeout=250",
            "management.endpoint.health.show-details=always",
            "pgjobs.worker.shutdown-grace=0s")
        .run()) {
      HealthEndpoint endpoint = context.getBean(HealthEndpoint.class);
      assertThat(status(endpoint)).isEqualTo(Status.UP);

      cutOff(true);
      try {
        await().atMost(Duration.ofSeconds(20)).until(() -> status(endpoint).equals(Status.DOWN));
        var health = (IndicatedHealthDescriptor) endpoint.healthForPath("pgjobs");
        assertThat((String) health.getDetails().get("database")).startsWith("unreachable");
      } finally {
        cutOff(false);
      }
      await().atMost(Duration.ofSeconds(20)).until(() -> status(endpoint).equals(Status.UP));
    }
  }

  private static Status status(HealthEndpoint endpoint) {
    return endpoint.healthForPath("pgjobs").getStatus();
  }

  /** Forbids (or allows again) connections to the test database and ends the ones it has. */
  private static void cutOff(boolean off) {
    String adminUrl =
        System.getenv().getOrDefault("PGJOBS_TEST_DATABASE_URL", TestDatabase.DEFAULT_ADMIN_URL);
    try (var c = java.sql.DriverManager.getConnection(adminUrl);
        var st = c.createStatement()) {
      st.execute("ALTER DATABASE " + db.name() + " WITH ALLOW_CONNECTIONS " + !off);
      if (off) {
        st.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"
            + db.name() + "'");
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
