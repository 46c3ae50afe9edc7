package io.pgjobs.spring.example;

import io.pgjobs.JobClient;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /orders {"email": "...", "item": "...", "fail": false}} places an order and enqueues its
 * receipt in one transaction ({@code "fail": true} rolls both back); {@code GET /orders/{id}} shows the
 * order and, with {@code ?job=<id>}, its receipt job.
 */
@RestController
public class OrderController {
  private final OrderService service;
  private final OrderRepository orders;
  private final JobClient jobs;

  public OrderController(OrderService service, OrderRepository orders, JobClient jobs) {
    this.service = service;
    this.orders = orders;
    this.jobs = jobs;
  }

  /** The body of {@code POST /orders}. */
  public record NewOrder(String email, String item, Boolean fail) {}

  @PostMapping("/orders")
  public ResponseEntity<OrderService.Placed> place(@RequestBody NewOrder order) {
    return ResponseEntity.status(HttpStatus.CREATED)
        .body(service.place(order.email(), order.item(), Boolean.TRUE.equals(order.fail())));
  }

  @GetMapping("/orders/{id}")
  public ResponseEntity<Map<String, Object>> show(
      @PathVariable long id,
      @org.springframework.web.bind.annotation.RequestParam(required = false) java.util.UUID job) {
    return orders
        .find(id)
        .map(row -> {
          Map<String, Object> body = new LinkedHashMap<>(row);
          if (job != null) {
            jobs.get(job)
                .ifPresent(j -> body.put(
                    "receiptJob", Map.of("state", j.state().value(), "attempts", j.attempts())));
          }
          return ResponseEntity.ok(body);
        })
        .orElse(ResponseEntity.notFound().build());
  }

  @ExceptionHandler(OrderService.OrderFailedException.class)
  public ResponseEntity<Map<String, String>> failed(OrderService.OrderFailedException e) {
    return ResponseEntity.status(HttpStatus.CONFLICT).body(Map.of("error", e.getMessage()));
  }
}
