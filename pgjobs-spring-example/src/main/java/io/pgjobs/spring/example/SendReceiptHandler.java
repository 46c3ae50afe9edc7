package io.pgjobs.spring.example;

import io.pgjobs.JobContext;
import io.pgjobs.JobType;
import io.pgjobs.spring.PgJobsHandler;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/** The handler bean of {@link Jobs#SEND_RECEIPT}: "sends" the receipt (a log line) and marks the order. */
@Component
public class SendReceiptHandler implements PgJobsHandler<Jobs.SendReceipt> {
  private static final Logger log = LoggerFactory.getLogger(SendReceiptHandler.class);

  private final OrderRepository orders;

  public SendReceiptHandler(OrderRepository orders) {
    this.orders = orders;
  }

  @Override
  public JobType<Jobs.SendReceipt> type() {
    return Jobs.SEND_RECEIPT;
  }

  @Override
  public Object run(JobContext ctx, Jobs.SendReceipt receipt) {
    log.info(
        "sending the receipt of order {} to {} (attempt {})",
        receipt.orderId(),
        receipt.email(),
        ctx.attempt());
    orders.markReceiptSent(receipt.orderId());
    return Map.of("sentTo", receipt.email());
  }
}
