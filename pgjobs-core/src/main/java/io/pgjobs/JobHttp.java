package io.pgjobs;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Objects;

/**
 * HTTP for a running handler ({@link JobContext#http()}): one {@link HttpClient} shared by every job of
 * a worker (its connection pool and threads are reused), with the worker's connect timeout and no
 * redirects followed (a 3xx is the handler's to judge), and request
 * builders that carry the worker's request timeout, a {@code User-Agent} and the job's identity:
 *
 * <ul>
 *   <li>{@code Pgjobs-Job-Id}: the job's id — a natural idempotency key for the receiving service;
 *   <li>{@code Pgjobs-Attempt}: the attempt number (1 on the first run);
 *   <li>{@code User-Agent}: {@code pgjobs/<version> (job type)}.
 * </ul>
 *
 * <pre>{@code
 * HttpResponse<String> response = ctx.http().send(
 *     ctx.http().request(URI.create(url)).POST(BodyPublishers.ofString(json)).header("Content-Type", "application/json"),
 *     BodyHandlers.ofString());
 * }</pre>
 *
 * A handler whose job is cancelled or timed out is interrupted; {@link #send} then throws
 * {@link InterruptedException}, which ends the attempt as the stop asked.
 */
public final class JobHttp {
  /** The header carrying the job's id. */
  public static final String JOB_ID_HEADER = "Pgjobs-Job-Id";
  /** The header carrying the attempt number. */
  public static final String ATTEMPT_HEADER = "Pgjobs-Attempt";

  private final HttpClient client;
  private final Duration requestTimeout;
  private final String userAgent;
  private final String jobId;
  private final String attempt;

  /**
   * @param client the worker's shared client
   * @param requestTimeout the time a request may take, from sending to the response's headers
   * @param userAgent the {@code User-Agent} header
   * @param jobId the running job
   * @param attempt its attempt number
   */
  public JobHttp(
      HttpClient client,
      Duration requestTimeout,
      String userAgent,
      java.util.UUID jobId,
      int attempt) {
    this.client = Objects.requireNonNull(client, "client");
    this.requestTimeout = Objects.requireNonNull(requestTimeout, "requestTimeout");
    this.userAgent = Objects.requireNonNull(userAgent, "userAgent");
    this.jobId = jobId.toString();
    this.attempt = Integer.toString(attempt);
  }

  /** A request builder for {@code uri} with the timeout and headers above already set. */
  public HttpRequest.Builder request(URI uri) {
    return HttpRequest.newBuilder(uri)
        .timeout(requestTimeout)
        .header("User-Agent", userAgent)
        .header(JOB_ID_HEADER, jobId)
        .header(ATTEMPT_HEADER, attempt);
  }

  /** Sends {@code request} (built from {@link #request}) with the shared client. */
  public <T> HttpResponse<T> send(HttpRequest.Builder request, HttpResponse.BodyHandler<T> body)
      throws IOException, InterruptedException {
    return client.send(request.build(), body);
  }

  /** The shared client itself, for what {@link #send} does not cover (async sends, WebSockets). */
  public HttpClient client() {
    return client;
  }
}
