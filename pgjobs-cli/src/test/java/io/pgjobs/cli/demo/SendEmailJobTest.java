package io.pgjobs.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.icegreen.greenmail.util.GreenMail;
import com.icegreen.greenmail.util.ServerSetupTest;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.cli.demo.SendEmailJob.SendEmail;
import jakarta.mail.internet.MimeMessage;
import java.net.ServerSocket;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class SendEmailJobTest extends DemoJobsTestBase {
  private GreenMail smtp;

  @BeforeEach
  void startSmtpServer() {
    smtp = new GreenMail(ServerSetupTest.SMTP.dynamicPort());
    smtp.start();
  }

  @AfterEach
  void stopSmtpServer() {
    smtp.stop();
  }

  @Test
  void sendsTheMessageThroughTheConfiguredSmtpServer() throws Exception {
    startWorker(Map.of(
        "smtp_host", "127.0.0.1",
        "smtp_port", String.valueOf(smtp.getSmtp().getPort()),
        "smtp_from", "jobs@pgjobs.test"));

    var id = client
        .enqueue(
            SendEmailJob.TYPE,
            new SendEmail("ada@example.com", "Welcome, Ada", "Hello from pgjobs.\n"))
        .job()
        .id();

    Job job = awaitState(id, JobState.SUCCEEDED);
    MimeMessage[] received = smtp.getReceivedMessages();
    assertThat(received).hasSize(1);
    MimeMessage message = received[0];
    assertThat(message.getSubject()).isEqualTo("Welcome, Ada");
    assertThat(message.getAllRecipients())
        .extracting(Object::toString)
        .containsExactly("ada@example.com");
    assertThat(message.getFrom()).extracting(Object::toString).containsExactly("jobs@pgjobs.test");
    assertThat(((String) message.getContent()).strip()).isEqualTo("Hello from pgjobs.");
    assertThat(message.getMessageID()).isEqualTo("<" + id + "@pgjobs>");
    assertThat(job.output().get("messageId").asString()).isEqualTo("<" + id + "@pgjobs>");
  }

  @Test
  void retriesWhileTheSmtpServerCannotBeReached() throws Exception {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    startWorker(Map.of("smtp_host", "127.0.0.1", "smtp_port", String.valueOf(closedPort)));

    var id = client
        .enqueue(
            SendEmailJob.TYPE,
            new SendEmail("ada@example.com", "Hi", "body"),
            EnqueueOptions.builder().maxAttempts(5).build())
        .job()
        .id();

    Job job = awaitState(id, JobState.RETRYING);
    assertThat(job.errors()).hasSize(1);
    assertThat(job.errors().get(0).message()).contains("connect");
  }
}
