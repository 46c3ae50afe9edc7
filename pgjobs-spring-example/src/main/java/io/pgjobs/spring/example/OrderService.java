package io.pgjobs.spring.example;

import io.pgjobs.EnqueuedJob;
import io.pgjobs.spring.TransactionalJobClient;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Places orders: the order row and its receipt job commit together, or neither does. */
@Service
public class OrderService {
  private final OrderRepository orders;
  private final TransactionalJobClient jobs;

  public OrderService(OrderRepository orders, TransactionalJobClient jobs) {
    this.orders = orders;
    this.jobs = jobs;
  }

  /** The placed order's id and its receipt job's id. */
  public record Placed(long orderId, UUID receiptJobId) {}

  @Transactional
  public Placed place(String email, String item, boolean failAfterEnqueue) {
    long id = orders.insert(email, item);
    EnqueuedJob receipt = jobs.enqueue(Jobs.SEND_RECEIPT, new Jobs.SendReceipt(id, email));
    if (failAfterEnqueue) {
      // the order and its job are rolled back together: no receipt for an order that does not exist
      throw new OrderFailedException(
          "order " + id + " failed after its receipt was enqueued; rolled back");
    }
    return new Placed(id, receipt.job().id());
  }

  /** An order that could not be placed (answered 409 by the controller). */
  public static final class OrderFailedException extends RuntimeException {
    OrderFailedException(String message) {
      super(message);
    }
  }
}
