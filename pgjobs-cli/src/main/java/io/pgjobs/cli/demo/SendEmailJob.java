package io.pgjobs.cli.demo;

import io.pgjobs.DiscardJobException;
import io.pgjobs.JobContext;
import io.pgjobs.JobType;
import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.worker.JobWorker;
import jakarta.mail.Message;
import jakarta.mail.MessagingException;
import jakarta.mail.SendFailedException;
import jakarta.mail.Session;
import jakarta.mail.Transport;
import jakarta.mail.internet.InternetAddress;
import jakarta.mail.internet.MimeMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * The {@code send_email} demo kind: sends a plain-text e-mail through an SMTP server.
 *
 * <p>Payload {@code {"to": "ada@example.com", "subject": "Hi", "body": "Welcome"}}; output
 * {@code {"messageId": "<job-id@pgjobs>", "to": ...}}. The Message-ID is derived from the job id, so an
 * attempt repeated after a crash sends a message the receiver can recognise as a duplicate. A recipient
 * the server rejects fails the job at once (no retry); an unreachable server or a temporary refusal is
 * retried.
 */
public final class SendEmailJob {
  /**
   * The payload.
   *
   * @param to recipient address
   * @param subject subject line (one line)
   * @param body plain-text body
   */
  public record SendEmail(String to, String subject, String body) {}

  /** Longest subject: the SMTP line limit, {@value}. */
  public static final int MAX_SUBJECT = 998;
  /** Longest body: {@value} characters. */
  public static final int MAX_BODY = 1_000_000;
  /** Connect, read and write timeout of the SMTP connection the demo worker uses: 30 s. */
  public static final Duration SMTP_TIMEOUT = Duration.ofSeconds(30);

  private static final Pattern ADDRESS =
      Pattern.compile("[^@\\s<>,;\"()\\[\\]]+@[A-Za-z0-9]([A-Za-z0-9\\-.]*[A-Za-z0-9])?");

  /** The job type, with payload validation. */
  public static final JobType<SendEmail> TYPE = JobType.of("send_email", SendEmail.class)
      .withValidator(SendEmailJob::validate)
      .withExample(new SendEmail("ada@example.com", "Hi", "Welcome to pgjobs."));

  private final String host;
  private final int port;
  private final String from;
  private final Duration timeout;

  /**
   * A sender through {@code host:port}.
   *
   * @param from the sender address
   * @param timeout connect, read and write timeout of the SMTP connection
   */
  public SendEmailJob(String host, int port, String from, Duration timeout) {
    this.host = Objects.requireNonNull(host, "host");
    this.port = port;
    this.from = Objects.requireNonNull(from, "from");
    this.timeout = Objects.requireNonNull(timeout, "timeout");
  }

  /** The type with this sender as handler. */
  public JobWorker.Registration<SendEmail> registration() {
    return new JobWorker.Registration<>(TYPE, this::run);
  }

  /** Checks the payload: an address in {@code to}, a one-line subject, a body. */
  public static List<FieldProblem> validate(SendEmail email) {
    if (email == null) {
      return PayloadProblems.missingPayload("to, subject and body");
    }
    PayloadProblems problems = new PayloadProblems();
    if (problems.text("to", email.to(), 254, true)
        && !ADDRESS.matcher(email.to().strip()).matches()) {
      problems.add("to", "must be an e-mail address (name@host), was '" + email.to() + "'");
    }
    problems.text("subject", email.subject(), MAX_SUBJECT, true);
    if (email.body() == null) {
      problems.add("body", "is required (may be empty)");
    } else if (email.body().length() > MAX_BODY) {
      problems.add(
          "body",
          "must be at most " + MAX_BODY + " characters, was " + email.body().length());
    }
    return problems.list();
  }

  /** Sends the e-mail. */
  Object run(JobContext ctx, SendEmail email) throws MessagingException {
    if (!validate(email).isEmpty()) {
      throw new DiscardJobException("invalid payload: " + validate(email));
    }
    Properties props = new Properties();
    props.put("mail.smtp.host", host);
    props.put("mail.smtp.port", String.valueOf(port));
    props.put("mail.smtp.connectiontimeout", String.valueOf(timeout.toMillis()));
    props.put("mail.smtp.timeout", String.valueOf(timeout.toMillis()));
    props.put("mail.smtp.writetimeout", String.valueOf(timeout.toMillis()));
    Session session = Session.getInstance(props);
    String messageId = "<" + ctx.jobId() + "@pgjobs>";
    MimeMessage message = new MimeMessage(session) {
      @Override
      protected void updateMessageID() throws MessagingException {
        setHeader("Message-ID", messageId);
      }
    };
    message.setFrom(new InternetAddress(from));
    message.setRecipient(
        Message.RecipientType.TO, new InternetAddress(email.to().strip(), true));
    message.setSubject(email.subject(), StandardCharsets.UTF_8.name());
    message.setText(email.body(), StandardCharsets.UTF_8.name());
    message.setSentDate(new Date());
    ctx.progress(50, "sending to " + host + ":" + port);
    try {
      Transport.send(message);
    } catch (SendFailedException e) {
      if (e.getInvalidAddresses() != null && e.getInvalidAddresses().length > 0) {
        throw new DiscardJobException(
            "the SMTP server rejected the recipient " + email.to() + ": " + e.getMessage(), e);
      }
      throw e;
    }
    ctx.progress(100, "sent");
    return Map.of("messageId", messageId, "to", email.to().strip());
  }
}
