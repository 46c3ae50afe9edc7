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
    this.userAgent = "pgjobs/" + version();
  }

  /** The library's version, from the resource the build writes (a jar's manifest is not there in tests). */
  static String version() {
    try (java.io.InputStream in =
        HttpSupport.class.getResourceAsStream("/io/pgjobs/version.properties")) {
      if (in != null) {
        java.util.Properties p = new java.util.Properties();
        p.load(in);
        String v = p.getProperty("version");
        if (v != null && !v.isBlank() && !v.startsWith("${")) {
          return v;
        }
      }
    } catch (java.io.IOException ignored) {
      // fall through
    }
    return "dev";
  }

  /** The {@link JobHttp} of one attempt. */
  JobHttp forJob(ClaimedJob job) {
    return new JobHttp(
        client(), requestTimeout, userAgent + " (" + job.type() + ")", job.id(), job.attempt());
  }

  private HttpClient client() {
    HttpClient c = client;
    if (c == null) {
      synchronized (this) {
        c = client;
        if (c == null) {
          c = HttpClient.newBuilder()
              .connectTimeout(connectTimeout)
              // Redirects are not followed: a job's request goes where its payload says, and a 3xx
              // is the handler's to judge (a redirect could otherwise carry a signed body
              // elsewhere).
              .followRedirects(HttpClient.Redirect.NEVER)
              // HTTP/1.1: the client's default (HTTP/2) asks plain-http receivers to upgrade
              // ("Upgrade:
              // h2c"), which many webhook endpoints and proxies refuse or mishandle.
              .version(HttpClient.Version.HTTP_1_1)
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
