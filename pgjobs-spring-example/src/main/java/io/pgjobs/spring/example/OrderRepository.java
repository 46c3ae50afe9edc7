package io.pgjobs.spring.example;

import java.util.Map;
import java.util.Optional;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;

/** The application's own table, written with Spring's JdbcTemplate (so in Spring's transaction). */
@Repository
public class OrderRepository {
  private final JdbcTemplate jdbc;

  public OrderRepository(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
    jdbc.execute("""
        CREATE TABLE IF NOT EXISTS orders (
            id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            email           text        NOT NULL,
            item            text        NOT NULL,
            created_at      timestamptz NOT NULL DEFAULT now(),
            receipt_sent_at timestamptz
        )""");
  }

  long insert(String email, String item) {
    return jdbc.queryForObject(
        "INSERT INTO orders (email, item) VALUES (?, ?) RETURNING id", Long.class, email, item);
  }

  void markReceiptSent(long id) {
    jdbc.update("UPDATE orders SET receipt_sent_at = now() WHERE id = ?", id);
  }

  Optional<Map<String, Object>> find(long id) {
    return jdbc
        .queryForList(
            "SELECT id, email, item, created_at, receipt_sent_at FROM orders WHERE id = ?", id)
        .stream()
        .findFirst();
  }
}
