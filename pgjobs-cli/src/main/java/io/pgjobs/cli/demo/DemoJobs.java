package io.pgjobs.cli.demo;

import io.pgjobs.JobType;
import io.pgjobs.QueueLimits;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.worker.JobWorker;
import java.util.List;
import java.util.Map;

/**
 * The four demo job kinds of seed 003, doing the real thing: {@code send_email} (SMTP),
 * {@code resize_image} ({@code javax.imageio}), {@code summarize_text} (extractive summary) and
 * {@code webhook_delivery} (signed HTTP POST). Each validates its payload, so an enqueue with a bad
 * payload fails with an {@link io.pgjobs.InvalidPayloadException} listing the fields.
 *
 * <pre>{@code
 * JobClient client = JobClient.builder(dataSource).knownTypes(DemoJobs.types()).build();
 * JobWorker worker = JobWorker.builder(dataSource).registerAll(DemoJobs.registrations(settings)).build();
 * }</pre>
 */
public final class DemoJobs {
  private DemoJobs() {}

  /** The four job types, for {@code JobClient.Builder.knownTypes} (defaults and payload validation). */
  public static List<JobType<?>> types() {
    return List.of(
        SendEmailJob.TYPE, ResizeImageJob.TYPE, SummarizeTextJob.TYPE, WebhookDeliveryJob.TYPE);
  }

  /**
   * The demo's workflows ({@link DigestWorkflow}), for {@code JobClient.Builder.knownWorkflows}: a server
   * over that client lists them and starts them by name.
   */
  public static List<io.pgjobs.workflow.WorkflowType<?>> workflows() {
    return List.of(DigestWorkflow.TYPE);
  }

  /**
   * The limits the demo kinds' queues need, for {@code JobWorker.Builder.limits}: webhook deliveries per
   * target host ({@link WebhookDeliveryJob#LIMITS} on {@value WebhookDeliveryJob#QUEUE}). Declared by every
   * worker that runs them, so the limits hold (and the dashboard's Queues page shows them) however the
   * fleet was started; limits set at run time win.
   */
  public static Map<String, QueueLimits> limits() {
    return Map.of(WebhookDeliveryJob.QUEUE, WebhookDeliveryJob.LIMITS);
  }

  /**
   * The four types with their handlers, configured from {@code settings} (SMTP server, webhook timeout),
   * and the demo's workflow ({@link DigestWorkflow}) that runs three of them as steps.
   */
  public static List<JobWorker.Registration<?>> registrations(Settings settings) {
    SendEmailJob mailer = new SendEmailJob(
        settings.smtpHost(), settings.smtpPort(), settings.smtpFrom(), SendEmailJob.SMTP_TIMEOUT);
    SummarizeTextJob summarizer = new SummarizeTextJob();
    WebhookDeliveryJob webhooks = new WebhookDeliveryJob(settings.webhookTimeout());
    return List.of(
        mailer.registration(),
        new ResizeImageJob().registration(),
        summarizer.registration(),
        webhooks.registration(),
        // The durable step workflow made of three of them (its runs are jobs of type demo_digest).
        new DigestWorkflow(summarizer, mailer, webhooks).registration(settings.schema()));
  }
}
