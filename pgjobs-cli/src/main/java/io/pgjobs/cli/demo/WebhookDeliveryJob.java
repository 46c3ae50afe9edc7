package io.pgjobs.cli.demo;

import io.pgjobs.DiscardJobException;
import io.pgjobs.JobContext;
import io.pgjobs.JobType;
import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.QueueLimits;
import io.pgjobs.worker.JobWorker;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.databind.DeserializationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ValueDeserializer;
import tools.jackson.databind.annotation.JsonDeserialize;
import tools.jackson.databind.json.JsonMapper;

/**
 * The {@code webhook_delivery} demo kind: POSTs a body to a URL, signed with
 * {@value #SIGNATURE_HEADER}: the lowercase hex HMAC-SHA256 of the body's UTF-8 bytes keyed with the
 * secret. The receiver recomputes it to check the sender and the body.
 *
 * <p>Payload {@code {"url": "https://...", "body": {...} or "text", "secret": "...", "host": "..."}}; output
 * {@code {"status": 200}}. Outcomes: 2xx succeeds; 5xx, 408, 429, a timeout or a connection failure
 * fails the attempt (retried with backoff); any other answer (3xx — redirects are not followed — or 4xx)
 * fails the job at once ({@link DiscardJobException}). Each request also carries
 * {@value #JOB_ID_HEADER} and {@value #ATTEMPT_HEADER}, so a receiver can drop a repeated delivery.
 *
 * <p>Deliveries run on their own queue, {@value #QUEUE}, limited per target host ({@link #LIMITS}: at most
 * 2 at a time and 5 a second to one host, across every worker), so a burst of webhooks to one receiver
 * neither overwhelms it nor holds up the deliveries to the others (hosts take turns). A job's partition is its host:
 * computed by the type from the payload ({@code JobType.withPartition}) when the enqueuing client knows the
 * type, else the payload's {@code host} field, which the queue's rule {@code partition_by: "input.host"}
 * reads.
 */
public final class WebhookDeliveryJob {
  /**
   * The payload.
   *
   * @param url http or https URL
   * @param body the request body (sent as {@code application/json} if it is JSON, else as text). In
   *     the payload's JSON it may be any JSON value: a string is sent as given, an object, array, number
   *     or boolean is sent as its JSON text
   * @param secret the HMAC key
   * @param host the url's host, lowercase: the job's partition under {@link #LIMITS}. Optional in JSON
   *     (null: taken from {@code url}); if given it must be the url's host. Java callers get it from the
   *     url ({@link #WebhookDelivery(String, String, String)}); a JSON payload sent without it is stored
   *     without it, and its partition is still its host when the enqueuing client knows this type (the
   *     type computes it, {@code JobType.withPartition}); a client that does not (another service) leaves
   *     it to the queue's rule, and such jobs share one partition (the jobs of no host), limited like one
   *     host, unless the enqueue names the partition itself
   */
  public record WebhookDelivery(
      String url,
      @JsonDeserialize(using = JsonValueAsText.class) String body,
      String secret,
      String host) {
    /** Fills {@code host} from {@code url} when it is not given. */
    public WebhookDelivery {
      if (host == null) {
        host = hostOf(url);
      }
    }

    /** A delivery to {@code url}, its host taken from it. */
    public WebhookDelivery(String url, String body, String secret) {
      this(url, body, secret, null);
    }
  }

  /** The queue of webhook deliveries: {@value}. */
  public static final String QUEUE = "webhooks";

  /**
   * The limits of {@link #QUEUE}, declared by the workers that run deliveries: one partition per target
   * host ({@code input.host}), at most 2 deliveries to a host at once and 5 started a second (a receiver
   * sees a steady trickle, not a burst), across the whole fleet. {@code pgjobs limits set webhooks ...}
   * replaces them at run time.
   */
  public static final QueueLimits LIMITS = QueueLimits.builder()
      .partitionBy("input.host")
      .partitionConcurrency(2)
      .partitionRate(5, Duration.ofSeconds(1))
      .build();

  /** The lowercase host of {@code url}, or null if it is not a URL with a host. */
  public static String hostOf(String url) {
    if (url == null) {
      return null;
    }
    try {
      String host = new URI(url.strip()).getHost();
      return host == null ? null : host.toLowerCase(Locale.ROOT);
    } catch (URISyntaxException e) {
      return null;
    }
  }

  /** Reads any JSON value as text: a string as it is, anything else as its compact JSON. */
  static final class JsonValueAsText extends ValueDeserializer<String> {
    @Override
    public String deserialize(JsonParser p, DeserializationContext ctxt) {
      JsonNode node = ctxt.readTree(p);
      return node.isString() ? node.asString() : node.toString();
    }
  }

  /** The signature header: {@value}. */
  public static final String SIGNATURE_HEADER = "X-Signature-SHA256";
  /** The header carrying the job id: {@value}. */
  public static final String JOB_ID_HEADER = "X-Pgjobs-Job-Id";
  /** The header carrying the attempt number: {@value}. */
  public static final String ATTEMPT_HEADER = "X-Pgjobs-Attempt";
  /** Longest body: {@value} characters. */
  public static final int MAX_BODY = 1_000_000;

  /** The job type, with payload validation. */
  public static final JobType<WebhookDelivery> TYPE = JobType.of(
          "webhook_delivery", WebhookDelivery.class)
      .withQueue(QUEUE)
      .withValidator(WebhookDeliveryJob::validate)
      // The host as the job's partition, computed from the payload as read (its url's host when the
      // JSON has no host field): a client that knows this type (the demo's API server does)
      // partitions a delivery by its host even when the JSON sent leaves the field out.
      .withPartition(d -> d.host() == null ? "" : d.host());

  private static final JsonMapper JSON = JsonMapper.builder().build();

  private final Duration timeout;

  /**
   * A deliverer whose responses time out after {@code timeout}. Requests go through the worker's shared
   * client ({@code ctx.http()}: its connect timeout, no redirects followed, the job's id and attempt as
   * {@code Pgjobs-Job-Id}/{@code Pgjobs-Attempt} headers), set up by the CLI with the same timeout.
   */
  public WebhookDeliveryJob(Duration timeout) {
    this.timeout = Objects.requireNonNull(timeout, "timeout");
  }

  /** The type with this deliverer as handler. */
  public JobWorker.Registration<WebhookDelivery> registration() {
    return new JobWorker.Registration<>(TYPE, this::run);
  }

  /** Checks the payload: an absolute http(s) URL with a host, a body, a non-empty secret. */
  public static List<FieldProblem> validate(WebhookDelivery job) {
    if (job == null) {
      return PayloadProblems.missingPayload("url, body and secret");
    }
    PayloadProblems problems = new PayloadProblems();
    if (problems.text("url", job.url(), 2048, true)) {
      try {
        URI uri = new URI(job.url().strip());
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https")) {
          problems.add("url", "must be an http or https URL, was '" + job.url() + "'");
        } else if (uri.getHost() == null) {
          problems.add("url", "must name a host, was '" + job.url() + "'");
        } else if (job.host() != null && !job.host().equals(hostOf(job.url()))) {
          // The host is the job's partition: one that is not the url's would escape its limits.
          problems.add(
              "host",
              "must be the url's host, lowercase ('" + hostOf(job.url()) + "'), or left out, was '"
                  + job.host() + "'");
        }
      } catch (URISyntaxException e) {
        problems.add("url", "is not a URL: " + e.getReason());
      }
    }
    if (job.body() == null) {
      problems.add(
          "body", "is required (any JSON value: a string is sent as given, anything else as JSON)");
    } else if (job.body().length() > MAX_BODY) {
      problems.add(
          "body",
          "must be at most " + MAX_BODY + " characters, was " + job.body().length());
    }
    if (job.secret() == null || job.secret().isEmpty()) {
      problems.add("secret", "is required (the HMAC-SHA256 key)");
    } else if (job.secret().length() > 1024) {
      problems.add(
          "secret", "must be at most 1024 characters, was " + job.secret().length());
    }
    return problems.list();
  }

  /** The lowercase hex HMAC-SHA256 of {@code body} (UTF-8) keyed with {@code secret} (UTF-8). */
  public static String signature(String secret, String body) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
      return HexFormat.of().formatHex(mac.doFinal(body.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException | InvalidKeyException e) {
      throw new IllegalStateException("HmacSHA256 is not available", e);
    }
  }

  /** Delivers the webhook. */
  Object run(JobContext ctx, WebhookDelivery job) throws IOException, InterruptedException {
    if (!validate(job).isEmpty()) {
      throw new DiscardJobException("invalid payload: " + validate(job));
    }
    URI uri = URI.create(job.url().strip());
    HttpRequest.Builder request = ctx.http()
        .request(uri)
        .timeout(timeout)
        .header(
            "Content-Type", isJson(job.body()) ? "application/json" : "text/plain; charset=utf-8")
        .header(SIGNATURE_HEADER, signature(job.secret(), job.body()))
        .header(JOB_ID_HEADER, ctx.jobId().toString())
        .header(ATTEMPT_HEADER, String.valueOf(ctx.attempt()))
        .POST(HttpRequest.BodyPublishers.ofString(job.body(), StandardCharsets.UTF_8));
    HttpResponse<InputStream> response;
    try {
      response = ctx.http().send(request, HttpResponse.BodyHandlers.ofInputStream());
    } catch (HttpTimeoutException e) {
      throw new IOException(
          "webhook " + uri + " did not answer within " + timeout.toMillis() + " ms", e);
    }
    int status = response.statusCode();
    String head = head(response.body());
    if (status >= 200 && status < 300) {
      return Map.of("status", status);
    }
    String message = "webhook " + uri + " answered " + status + (head.isEmpty() ? "" : ": " + head);
    if (status >= 500 || status == 408 || status == 429) {
      // No "(will retry)": the same text ends the job's history when it was the last attempt; the
      // job's state says whether it is retried.
      throw new IOException(message);
    }
    throw new DiscardJobException(message + " (not retried)");
  }

  private static boolean isJson(String body) {
    String t = body.strip();
    if (!(t.startsWith("{") || t.startsWith("["))) {
      return false;
    }
    try {
      JSON.readTree(t);
      return true;
    } catch (JacksonException e) {
      return false;
    }
  }

  /** The first 200 characters of a response body, on one line. */
  private static String head(InputStream body) throws IOException {
    try (InputStream in = body) {
      byte[] bytes = in.readNBytes(200);
      return new String(bytes, StandardCharsets.UTF_8).replaceAll("\\s+", " ").strip();
    }
  }
}
