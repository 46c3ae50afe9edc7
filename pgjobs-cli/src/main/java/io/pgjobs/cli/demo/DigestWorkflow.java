package io.pgjobs.cli.demo;

import io.pgjobs.json.PayloadCodec;
import io.pgjobs.worker.JobWorker;
import io.pgjobs.workflow.WorkflowContext;
import io.pgjobs.workflow.WorkflowRunner;
import io.pgjobs.workflow.WorkflowType;
import java.util.Map;

/**
 * The demo's durable step workflow, built from its job kinds: summarize a text, e-mail the summary, then
 * deliver a signed webhook saying so. Each step is recorded as it ends, so a run that fails at the webhook
 * and is retried does not summarize or e-mail again; if the run fails for good, the e-mail's compensation
 * sends a second one withdrawing the digest.
 */
public final class DigestWorkflow {
  /**
   * A digest to make.
   *
   * @param text the text to summarize
   * @param to who gets the summary
   * @param webhookUrl where the webhook goes
   * @param secret the webhook's signing secret
   */
  public record Digest(String text, String to, String webhookUrl, String secret) {}

  /**
   * The workflow (its runs are jobs of type {@code demo_digest}), with an example input for
   * {@code GET /workflow-types} (its webhook goes to the demo's receiver on the default port); a run that
   * has not ended 10 minutes after it started compensates and fails.
   */
  public static final WorkflowType<Digest> TYPE = WorkflowType.of("demo_digest", Digest.class)
      .withMaxAttempts(3)
      .withDeadline(java.time.Duration.ofMinutes(10))
      .withExample(new Digest(
          "Jobs are rows. Workers claim them with SKIP LOCKED. A crash never loses a job.",
          "ada@example.com",
          "http://127.0.0.1:8080/demo/webhook",
          "demo-webhook-secret"));

  private final SummarizeTextJob summarizer;
  private final SendEmailJob mailer;
  private final WebhookDeliveryJob webhooks;

  /** Runs its steps with the demo kinds' own code. */
  public DigestWorkflow(
      SummarizeTextJob summarizer, SendEmailJob mailer, WebhookDeliveryJob webhooks) {
    this.summarizer = summarizer;
    this.mailer = mailer;
    this.webhooks = webhooks;
  }

  /** The workflow's type with its runner, for a worker of schema {@code schema}. */
  public JobWorker.Registration<Digest> registration(String schema) {
    return new JobWorker.Registration<>(
        TYPE.jobType(),
        new WorkflowRunner<>(
            this::run,
            TYPE.version(),
            TYPE.deadline().orElse(null),
            () -> schema,
            () -> PayloadCodec.DEFAULT_MAPPER));
  }

  @SuppressWarnings("unchecked")
  Map<String, Object> run(WorkflowContext ctx, Digest digest) throws Exception {
    Map<String, Object> summarized = ctx.step("summarize", Map.class, () -> (Map<String, Object>)
            summarizer.run(ctx.job(), new SummarizeTextJob.SummarizeText(digest.text(), 1)))
        .run();
    String summary = String.valueOf(summarized.get("summary"));
    ctx.step("email", Map.class, () -> (Map<String, Object>) mailer.run(
            ctx.job(), new SendEmailJob.SendEmail(digest.to(), "Your pgjobs digest", summary)))
        .compensate(sent -> mailer.run(
            ctx.job(),
            new SendEmailJob.SendEmail(
                digest.to(),
                "Digest withdrawn",
                "The digest sent earlier could not be completed; please ignore it.")))
        .run();
    ctx.step("notify", Map.class, () -> (Map<String, Object>) webhooks.run(
            ctx.job(),
            new WebhookDeliveryJob.WebhookDelivery(
                digest.webhookUrl(),
                "{\"digest\": \"sent\", \"to\": \"" + digest.to() + "\"}",
                digest.secret())))
        .run();
    return Map.of("summary", summary, "emailed", digest.to());
  }
}
