package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.javalin.http.HandlerType;
import io.pgjobs.server.problem.ApiProblem;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Refuses what a web page of another site can make a visitor's browser send to this server, and
 * requests that reach it under a host name it does not answer for (DNS rebinding).
 *
 * <p>Cross-site writes: a page may send a POST without a CORS preflight (a form, or {@code fetch} with
 * {@code Content-Type: text/plain}), and the API's body-less POSTs (pause, resume, cancel, retry, run)
 * need nothing more. CORS only keeps the page from reading the answer; the job is cancelled all the
 * same. So a request that can change something (any method but GET, HEAD, OPTIONS and TRACE, and the
 * WebSocket upgrade) is refused with 403 when its {@code Origin} is neither the server's own nor an
 * allowed one, or when the browser says {@code Sec-Fetch-Site: cross-site} and the origin is not
 * allowed. A request without {@code Origin} (curl, other servers, the CLI) passes: browsers always send
 * it with such requests.
 *
 * <p>DNS rebinding: a page of {@code evil.example} whose name is made to resolve to 127.0.0.1 is
 * same-origin with itself and reads and writes freely, but its requests carry
 * {@code Host: evil.example}. When the server has no tokens (nothing else stops such a page), the
 * {@code Host} must be a loopback name ({@code localhost}, {@code *.localhost}), an IP address (a page
 * whose address is an IP address is the server's own: rebinding needs a name), or one of the allowed
 * hosts; otherwise 421. With tokens, the browser has no token to send, and {@code Host} is not checked.
 */
public final class OriginGuard {
  /** How the settings are named in messages: the builder's, the CLI's and the Spring starter's. */
  static final String ORIGINS_SETTING =
      "allowedOrigins (pgjobs serve --allowed-origins or PGJOBS_ALLOWED_ORIGINS; Spring: pgjobs.web.allowed-origins)";

  static final String HOSTS_SETTING =
      "allowedHosts (pgjobs serve --allowed-hosts or PGJOBS_ALLOWED_HOSTS; Spring: pgjobs.web.allowed-hosts)";

  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
  private static final Set<HandlerType> SAFE =
      Set.of(HandlerType.GET, HandlerType.HEAD, HandlerType.OPTIONS, HandlerType.TRACE);

  private final List<String> allowedOrigins;
  private final List<String> allowedHosts;
  private final boolean checkHost;

  /**
   * @param allowedOrigins origins ({@code scheme://host[:port]}, lower case) whose pages may change
   *     things, or {@code *} for every origin
   * @param allowedHosts host names (lower case) accepted in {@code Host} besides the loopback names and
   *     IP addresses: {@code jobs.example.com}, {@code *.example.com} (its subdomains) or {@code *}
   * @param checkHost whether {@code Host} is checked at all (false when tokens authenticate requests)
   */
  public OriginGuard(
      Collection<String> allowedOrigins, Collection<String> allowedHosts, boolean checkHost) {
    this.allowedOrigins = List.copyOf(allowedOrigins);
    this.allowedHosts = List.copyOf(allowedHosts);
    this.checkHost = checkHost && !allowedHosts.contains("*");
  }

  /**
   * Checks one request before anything else runs.
   *
   * @param upgrade true for a WebSocket upgrade, which is checked as a write: the socket it opens can
   *     follow jobs, and browsers apply no CORS to it
   * @throws ApiProblem 421 for a host that is not allowed, 403 for a cross-site write
   */
  public void check(Context ctx, boolean upgrade) {
    String host = ctx.header("Host");
    if (checkHost && host != null && !hostAllowed(host)) {
      throw ApiProblem.hostNotAllowed(
          host,
          "this server has no API tokens and answers only to loopback names"
              + " (localhost, *.localhost), IP addresses and the allowed hosts, not to '" + host
              + "' (a page can make"
              + " a name of its own point to this server: DNS rebinding). If this is a name of this server, add it to "
              + HOSTS_SETTING + ", or give the server API tokens");
    }
    if (!upgrade && SAFE.contains(ctx.method())) {
      return;
    }
    String origin = ctx.header("Origin");
    boolean listed = origin != null && originAllowed(origin);
    String what = upgrade ? "WebSocket connections" : ctx.method().name() + " requests";
    if (origin != null && !listed && !sameOrigin(origin, ctx)) {
      throw ApiProblem.crossSite(
          origin,
          what + " from pages of " + origin + " are refused: only this server's own"
              + " pages and the allowed origins may change jobs, queues and schedules. To allow that site, add "
              + origin
              + " to " + ORIGINS_SETTING + " (the CORS origins are allowed too)");
    }
    if (!listed && "cross-site".equalsIgnoreCase(ctx.header("Sec-Fetch-Site"))) {
      throw ApiProblem.crossSite(
          origin,
          what + " a browser marks as cross-site (Sec-Fetch-Site: cross-site) are"
              + " refused unless their Origin is one of " + ORIGINS_SETTING);
    }
  }

  /** True for an origin the settings allow (CORS origins included by the caller). */
  public boolean originAllowed(String origin) {
    return allowedOrigins.contains("*") || allowedOrigins.contains(origin.toLowerCase(Locale.ROOT));
  }

  /**
   * True if {@code origin} is the request's own: its host and port are the {@code Host} header as the
   * browser wrote it (the scheme is not compared: behind a TLS proxy the server sees http while the page
   * is https), or it is the scheme, name and port the container resolved (forwarded headers included).
   */
  private static boolean sameOrigin(String origin, Context ctx) {
    int scheme = origin.indexOf("://");
    if (scheme <= 0) {
      return false; // "null" (sandboxed frames, some redirects) is nobody's own origin
    }
    String host = ctx.header("Host");
    if (host != null && origin.substring(scheme + 3).equalsIgnoreCase(host)) {
      return true;
    }
    String requestScheme = ctx.req().getScheme();
    String name = ctx.req().getServerName();
    if (name == null) {
      return false;
    }
    if (name.contains(":") && !name.startsWith("[")) {
      name = "[" + name + "]";
    }
    int port = ctx.req().getServerPort();
    boolean defaultPort = ("http".equals(requestScheme) && port == 80)
        || ("https".equals(requestScheme) && port == 443);
    String own = requestScheme + "://" + name + (defaultPort || port <= 0 ? "" : ":" + port);
    return origin.equalsIgnoreCase(own);
  }

  private boolean hostAllowed(String header) {
    String name = header.strip().toLowerCase(Locale.ROOT);
    if (name.startsWith("[")) {
      return name.indexOf(']') > 0; // an IPv6 address
    }
    int colon = name.lastIndexOf(':');
    if (colon >= 0) {
      name = name.substring(0, colon);
    }
    if (name.endsWith(".")) {
      name = name.substring(0, name.length() - 1);
    }
    if (IPV4.matcher(name).matches() || name.equals("localhost") || name.endsWith(".localhost")) {
      return true;
    }
    for (String allowed : allowedHosts) {
      if (allowed.startsWith("*.") ? name.endsWith(allowed.substring(1)) : allowed.equals(name)) {
        return true;
      }
    }
    return false;
  }
}
