package io.pgjobs.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.InvalidPayloadException;
import io.pgjobs.JobFilter;
import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.cli.demo.ResizeImageJob.ResizeImage;
import io.pgjobs.cli.demo.SendEmailJob.SendEmail;
import io.pgjobs.cli.demo.SummarizeTextJob.SummarizeText;
import io.pgjobs.cli.demo.WebhookDeliveryJob.WebhookDelivery;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PayloadValidationTest extends DemoJobsTestBase {
  @TempDir
  Path dir;

  @AfterEach
  void nothingWasStored() {
    assertThat(client.list(JobFilter.all()).jobs()).isEmpty();
  }

  private static void rejected(ThrowingCallable enqueue, String... fields) {
    assertThatThrownBy(enqueue)
        .isInstanceOfSatisfying(
            InvalidPayloadException.class,
            e -> assertThat(e.problems()).extracting(FieldProblem::field).containsExactly(fields));
  }

  @Test
  void sendEmailNeedsAnAddressASingleLineSubjectAndABody() {
    rejected(
        () -> client.enqueue(
            SendEmailJob.TYPE, new SendEmail("not-an-address", "Hi\r\nBcc: x@y.z", null)),
        "to",
        "subject",
        "body");
    rejected(
        () -> client.enqueue(SendEmailJob.TYPE, new SendEmail(null, " ", "")), "to", "subject");
    assertThatThrownBy(() -> client.enqueue(SendEmailJob.TYPE, new SendEmail("ada", "Hi", "x")))
        .hasMessageContaining("to must be an e-mail address (name@host), was 'ada'");
  }

  @Test
  void resizeImageNeedsAnExistingSourcePositiveSizesUpTo10000AndAnImageTarget() throws Exception {
    Path source = Files.writeString(dir.resolve("in.png"), "x");
    rejected(
        () -> client.enqueue(
            ResizeImageJob.TYPE,
            new ResizeImage(
                dir.resolve("missing.png").toString(),
                0,
                10_001,
                dir.resolve("out.gif").toString())),
        "source",
        "width",
        "height",
        "target");
    rejected(
        () -> client.enqueue(ResizeImageJob.TYPE, new ResizeImage("in.png", null, -1, "out.png")),
        "source",
        "width",
        "height",
        "target");
    rejected(
        () -> client.enqueue(
            ResizeImageJob.TYPE, new ResizeImage(source.toString(), 10, 10, source.toString())),
        "target");
  }

  @Test
  void summarizeTextNeedsTextAndOneToOneHundredSentences() {
    rejected(
        () -> client.enqueue(SummarizeTextJob.TYPE, new SummarizeText("  ", 0)),
        "text",
        "sentences");
    rejected(
        () -> client.enqueue(SummarizeTextJob.TYPE, new SummarizeText(null, 101)),
        "text",
        "sentences");
    rejected(
        () -> client.enqueue(SummarizeTextJob.TYPE, new SummarizeText("ok.", null)), "sentences");
  }

  @Test
  void webhookDeliveryNeedsAnHttpUrlABodyAndASecret() {
    rejected(
        () -> client.enqueue(
            WebhookDeliveryJob.TYPE, new WebhookDelivery("ftp://example.com/x", null, "")),
        "url",
        "body",
        "secret");
    rejected(
        () -> client.enqueue(
            WebhookDeliveryJob.TYPE, new WebhookDelivery("http:///nohost", "{}", "k")),
        "url");
    rejected(
        () -> client.enqueue(WebhookDeliveryJob.TYPE, new WebhookDelivery("not a url", "{}", "k")),
        "url");
  }

  @Test
  void enqueueByNameValidatesTheJsonPayloadToo() {
    rejected(
        () -> client.enqueue(
            "send_email", Map.of("to", "x", "subject", "s"), EnqueueOptions.DEFAULTS),
        "to",
        "body");
    rejected(
        () -> client.enqueue("webhook_delivery", Map.of(), EnqueueOptions.DEFAULTS),
        "url",
        "body",
        "secret");
  }
}
