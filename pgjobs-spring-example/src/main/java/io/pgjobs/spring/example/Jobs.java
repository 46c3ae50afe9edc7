package io.pgjobs.spring.example;

import io.pgjobs.JobDefaults;
import io.pgjobs.JobType;

/** The example's job types: one constant shared by the code that enqueues and the handler bean. */
public final class Jobs {
  private Jobs() {}

  /** Sends the receipt of an order. */
  @JobDefaults(name = "send_receipt", queue = "receipts", maxAttempts = 5)
  public record SendReceipt(long orderId, String email) {}

  public static final JobType<SendReceipt> SEND_RECEIPT = JobType.of(SendReceipt.class);
}
