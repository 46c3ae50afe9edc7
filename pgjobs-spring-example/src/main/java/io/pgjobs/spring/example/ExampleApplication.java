package io.pgjobs.spring.example;

import io.pgjobs.config.DatabaseUrl;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A small Spring Boot web app on pgjobs: {@code POST /orders} stores an order and enqueues its receipt in
 * one transaction ({@link OrderService}); {@link SendReceiptHandler} is the handler bean that runs the
 * receipts. Run it with {@code ./run-spring-example}.
 *
 * <p>The database comes from {@code DATABASE_URL} ({@code postgres://…}, {@code postgresql://…} or
 * {@code jdbc:postgresql://…}), else {@value DatabaseUrl#DEFAULT}, and is created if missing, as
 * {@code ./pgjobs demo} does; {@code spring.datasource.*} given in any other way wins.
 */
@SpringBootApplication
public class ExampleApplication {
  public static void main(String[] args) throws SQLException {
    String configured = System.getenv("DATABASE_URL");
    DatabaseUrl url = DatabaseUrl.parse(
        configured == null || configured.isBlank() ? DatabaseUrl.DEFAULT : configured);
    if (url.createDatabaseIfMissing()) {
      System.out.println("created database " + url.database());
    }
    Map<String, Object> defaults = new HashMap<>();
    defaults.put("spring.datasource.url", url.jdbcUrl());
    if (url.user() != null) {
      defaults.put("spring.datasource.username", url.user());
    }
    if (url.password() != null) {
      defaults.put("spring.datasource.password", url.password());
    }
    SpringApplication app = new SpringApplication(ExampleApplication.class);
    app.setDefaultProperties(defaults);
    app.run(args);
  }
}
