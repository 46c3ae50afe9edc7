package io.pgjobs.worker;

import io.pgjobs.JobHttp;
import io.pgjobs.store.ClaimedJob;
import java.net.http.HttpClient;
import java.time.Duration;

/**
 * The worker's HTTP for handlers ({@link io.pgjobs.JobContext#http()}): one client, created on first use
 * (a worker whose handlers never call out pays nothing), shared by every job.
 */
final class HttpSupport {
  private final Duration connectTimeout;
  private final Duration requestTimeout;
  private final String userAgent;
  private volatile HttpClient client;

  HttpSupport(Duration connectTimeout, Duration requestTimeout) {
    this.connectTimeout = connectTimeout;
    this.requestTimeout = requestTimeout;
    String version = HttpSupport.class.getPackage().getImplementationVersion();
    this.userAgent = "pgjobs/" + (version == null ? "dev" : version);
  }

  /** The {@link JobHttp} of one attempt. */
  JobHttp forJob(ClaimedJob job) {
    return new JobHttp(client(), requestTimeout, userAgent + " (" + job.type() + ")", job.id(), job.attempt());
  }

  private HttpClient client() {
    HttpClient c = client;
    if (c == null) {
      synchronized (this) {
        c = client;
        if (c == null) {
          c = HttpClient.newBuilder()
              .connectTimeout(connectTimeout)
              // Redirects are not followed: a job's request goes where its payload says, and a 3xx is
              // the handler's to judge (a redirect could otherwise carry a signed body elsewhere).
              .followRedirects(HttpClient.Redirect.NEVER)
              .build();
          client = c;
        }
      }
    }
    return c;
  }

  /** Releases the client's threads and connections (on the worker's close). */
  void close() {
    HttpClient c = client;
    if (c != null) {
      c.close();
    }
  }
}
