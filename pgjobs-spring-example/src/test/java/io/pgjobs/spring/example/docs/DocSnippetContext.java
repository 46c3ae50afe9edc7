package io.pgjobs.spring.example.docs;

import io.opentelemetry.api.OpenTelemetry;
import io.pgjobs.JobClient;
import io.pgjobs.JobDefaults;
import io.pgjobs.JobHandler;
import io.pgjobs.JobType;
import io.pgjobs.Priority;
import java.sql.Connection;
import java.util.List;
import javax.sql.DataSource;

/**
 * Everything the documentation's Java blocks use without declaring it: the reader's own objects, which
 * the text calls "yours" (a pool, a mailer, a repository), and the quick start's {@code SendEmail} and
 * {@code SEND_EMAIL}, which later blocks reuse. The class {@link DocSnippets} makes of each block extends
 * this one. It is only compiled, never run, so nothing here has a value.
 */
public abstract class DocSnippetContext {
  /** The quick start's payload (README.md, "Quick start"); a block that declares its own hides this one. */
  @JobDefaults(name = "send_email", queue = "emails", priority = Priority.HIGH, maxAttempts = 5)
  public record SendEmail(String to, String subject, String body) {}

  /** The quick start's job type. */
  public static final JobType<SendEmail> SEND_EMAIL = JobType.of(SendEmail.class);

  /** docs/API.md's second known type. */
  public record ResizeImage(String source, int width, int height, String target) {}

  /** Its job type. */
  public static final JobType<ResizeImage> RESIZE_IMAGE =
      JobType.of("resize_image", ResizeImage.class);

  /** docs/guarantees.md's payloads. */
  public record Invoice(String orderId) {}

  /** A row of docs/guarantees.md's import; {@code row_id} is its idempotency key. */
  public record ImportRow(String row_id) {}

  /** The reader's mail sender. */
  public interface Mailer {
    /** Sends {@code message}. */
    void send(Object message);
  }

  /** The reader's user (docs/spring.md). */
  public record User(String email) {}

  /** The reader's user repository. */
  public interface Users {
    /** Stores {@code user}. */
    void insert(User user);
  }

  protected DataSource dataSource;
  protected JobClient client;
  protected Mailer mailer;
  protected Users users;
  protected JobHandler<SendEmail> handler;
  protected OpenTelemetry openTelemetry;
  protected String adminToken;
  protected String readToken;
  protected List<ImportRow> rows;

  /** The reader's own writes in the enqueue's transaction. */
  protected void insertOrder(Connection tx) {}

  /** The reader's effect in docs/guarantees.md's transaction. */
  protected void insertInvoice(Connection c, Invoice invoice) {}

  /** The welcome mail of {@code user}. */
  protected SendEmail welcome(User user) {
    return null;
  }

  /** Waits before the next try. */
  protected void backOff() {}
}
