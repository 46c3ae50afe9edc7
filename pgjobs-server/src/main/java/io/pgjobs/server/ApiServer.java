package io.pgjobs.server;

import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.http.HandlerType;
import io.javalin.http.HttpResponseException;
import io.javalin.http.staticfiles.JavalinStaticResourceHandler;
import io.javalin.http.staticfiles.Location;
import io.javalin.json.JavalinJackson3;
import io.javalin.router.Endpoint;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgjobs.JobClient;
import io.pgjobs.config.PgJobsSettings;
import io.pgjobs.server.api.DeadLettersApi;
import io.pgjobs.server.api.EventsApi;
import io.pgjobs.server.api.GraphsApi;
import io.pgjobs.server.api.HealthApi;
import io.pgjobs.server.api.JobTypesApi;
import io.pgjobs.server.api.JobsApi;
import io.pgjobs.server.api.MetricsApi;
import io.pgjobs.server.api.OriginGuard;
import io.pgjobs.server.api.QueuesApi;
import io.pgjobs.server.api.RecurringApi;
import io.pgjobs.server.api.Routes;
import io.pgjobs.server.api.StatsApi;
import io.pgjobs.server.api.WorkersApi;
import io.pgjobs.server.api.WorkflowsApi;
import io.pgjobs.server.api.WsApi;
import io.pgjobs.server.events.EventHub;
import io.pgjobs.server.openapi.OpenApiDocs;
import io.pgjobs.server.problem.ApiProblem;
import io.pgjobs.server.problem.ProblemMapper;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;
import tools.jackson.databind.json.JsonMapper;

/**
 * The pgjobs HTTP API: jobs, queues, workers, statistics, dead letters, live events, OpenAPI document
 * and Swagger UI, Prometheus metrics and health, on Javalin with handlers on virtual threads.
 *
 * <pre>{@code
 * ApiServer server = ApiServer.builder(client)
 *     .port(8080)
 *     .tokens(Map.of(adminToken, ApiServer.Scope.ADMIN, readToken, ApiServer.Scope.READ))
 *     .meterRegistry(registry)              // shared with the workers of this process
 *     .build()
 *     .start();
 * ...
 * server.close();
 * }</pre>
 *
 * Every error is an {@code application/problem+json} document. Every response carries
 * {@code X-Request-Id} (the caller's, or a new one), which is also the {@code request_id} of every log
 * line written while the request runs.
 */
public final class ApiServer implements AutoCloseable {
  // The defaults are declared in PgJobsSettings, with their ranges; these name them for callers.

  /** Host when none is given ({@link PgJobsSettings#HOST}: this machine only). */
  public static final String DEFAULT_HOST = PgJobsSettings.HOST.defaultValue();
  /** Port when none is given ({@link PgJobsSettings#PORT}). */
  public static final int DEFAULT_PORT = PgJobsSettings.PORT.defaultValue();
  /** Request timeout when none is given ({@link PgJobsSettings#REQUEST_TIMEOUT}). */
  public static final Duration DEFAULT_REQUEST_TIMEOUT =
      PgJobsSettings.REQUEST_TIMEOUT.defaultValue();
  /** Largest request body in bytes when none is given ({@link PgJobsSettings#MAX_BODY_BYTES}). */
  public static final long DEFAULT_MAX_BODY_BYTES = PgJobsSettings.MAX_BODY_BYTES.defaultValue();
  /** Header carrying the request id, in and out: {@value}. */
  public static final String REQUEST_ID_HEADER = "X-Request-Id";
  /** MDC key of the request id: {@value}. */
  public static final String REQUEST_ID_MDC = "request_id";

  private static final Logger log = LoggerFactory.getLogger(ApiServer.class);
  private static final Logger access = LoggerFactory.getLogger("io.pgjobs.server.access");
  private static final Pattern REQUEST_ID = Pattern.compile("[A-Za-z0-9._:\\-]{1,128}");
  private static final Duration SSE_PING = Duration.ofSeconds(15);
  private static final String ATTR_REQUEST_ID = "request_id";

  /** What a token may do. */
  public enum Scope {
    /** GET and HEAD requests only: read jobs, queues, workers, stats, events, metrics. */
    READ,
    /** Everything, including enqueue, cancel, retry, pause and resume. */
    ADMIN
  }

  /** The API's JSON mapper, for {@link #jobJson} and {@link #jobPageJson}. */
  private static final JsonMapper JSON = ApiJson.mapper();

  /**
   * One job as {@code GET /jobs/{id}} answers it (snake_case names, ISO-8601 instants), for tools that
   * show jobs the way the API does (the CLI's {@code --json}).
   */
  public static String jobJson(io.pgjobs.Job job) {
    return JSON.writeValueAsString(io.pgjobs.server.api.JobsApi.JobView.of(job));
  }

  /** A page of jobs as {@code GET /jobs} answers it: {@code {"jobs": [...], "next_cursor": ...}}. */
  public static String jobPageJson(io.pgjobs.JobPage page) {
    return JSON.writeValueAsString(new io.pgjobs.server.api.JobsApi.JobPageView(
        page.jobs().stream().map(io.pgjobs.server.api.JobsApi.JobView::of).toList(),
        page.nextCursor()));
  }

  /**
   * The handler of a {@link Builder#receiver} route: an inbound webhook that its sender authenticates
   * itself (typically by a signature over the body), and that usually enqueues a job through the
   * server's client.
   */
  @FunctionalInterface
  public interface Receiver {
    /**
     * Handles one request. An exception is answered as in an API route (500 for an unexpected one).
     *
     * @param header the request's header of a name (case-insensitive), or null
     * @param body the request body (at most {@link Builder#maxBodyBytes} bytes)
     * @return the response status (no body is sent)
     */
    int handle(java.util.function.Function<String, String> header, byte[] body) throws Exception;
  }

  private final JobClient client;
  private final String host;
  private final int requestedPort;
  private final boolean acceptUnknownTypes;
  private final Map<byte[], Scope> tokens;
  private final Duration requestTimeout;
  private final long maxBodyBytes;
  private final List<String> corsOrigins;
  private final OriginGuard originGuard;
  private final List<String> allowedHosts;
  private final PrometheusMeterRegistry registry;
  private final Map<String, Receiver> receivers;
  private final JsonMapper json = ApiJson.mapper();
  private final ProblemMapper problems;
  private final ExecutorService handlerThreads = Executors.newThreadPerTaskExecutor(
      Thread.ofVirtual().name("pgjobs-api-", 0).factory());
  private final EventHub events;
  private final boolean liveEvents;
  private final boolean separateListenSource;
  private final List<AutoCloseable> binders = new ArrayList<>();
  private final boolean ownRegistry;
  private Javalin app;
  /** True when listening on a port of its own, false when started as a servlet. */
  private boolean standalone;

  private boolean closed;

  private ApiServer(Builder b) {
    this.client = b.client;
    this.host = b.host;
    this.requestedPort = b.port;
    this.acceptUnknownTypes = b.acceptUnknownTypes;
    Map<byte[], Scope> t = new LinkedHashMap<>();
    b.tokens.forEach((token, scope) -> t.put(token.getBytes(StandardCharsets.UTF_8), scope));
    this.tokens = t;
    this.requestTimeout = b.requestTimeout;
    this.maxBodyBytes = b.maxBodyBytes;
    this.problems = new ProblemMapper(json, b.maxBodyBytes);
    this.corsOrigins = List.copyOf(b.corsOrigins);
    // The CORS origins may already call the API from their pages (with a preflight); they may write
    // too.
    List<String> writers = new ArrayList<>(b.corsOrigins);
    writers.addAll(b.allowedOrigins);
    // With tokens a rebound page has no token to send; without them the Host is all that tells it
    // apart.
    this.originGuard = new OriginGuard(writers, b.allowedHosts, b.tokens.isEmpty());
    this.allowedHosts = List.copyOf(b.allowedHosts);
    this.ownRegistry = b.registry == null;
    this.registry =
        b.registry != null ? b.registry : new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    this.receivers = Map.copyOf(b.receivers);
    // Behind a transaction-pooling PgBouncer, LISTEN needs a direct connection (listenDataSource).
    this.events = new EventHub(
        b.listenDataSource != null ? b.listenDataSource : client.dataSource(),
        client.eventsChannel(),
        json,
        SSE_PING,
        b.eventLimits,
        client.dataSource(),
        client.schema());
    this.liveEvents = b.liveEvents;
    this.separateListenSource = b.listenDataSource != null;
  }

  /** A builder for a server over {@code client}; the known job types are {@code client.knownTypes()}. */
  public static Builder builder(JobClient client) {
    return new Builder(client);
  }

  /**
   * Starts listening.
   *
   * @throws IllegalStateException if already started or closed, or the port cannot be bound
   */
  public synchronized ApiServer start() {
    app = createApp(true);
    try {
      requirePortFree();
      app.start();
    } catch (RuntimeException e) {
      closeQuietly();
      throw new IllegalStateException(
          "cannot start the API server on " + host + ":" + requestedPort + ": " + e.getMessage(),
          e);
    }
    startEvents();
    log.info(
        "pgjobs API listening on http://{}:{} (auth {}, CORS {})",
        host,
        port(),
        tokens.isEmpty() ? "off" : "on, " + tokens.size() + " tokens",
        corsOrigins.isEmpty() ? "off" : corsOrigins);
    return this;
  }

  /**
   * Fails with a plain message when the port is taken, before Javalin tries (which logs the bind failure
   * at ERROR with a stack trace before the caller can say what happened). A port taken between this
   * check and the start still fails, with Javalin's log line.
   */
  private void requirePortFree() {
    if (requestedPort == 0) {
      return;
    }
    try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
      probe.setReuseAddress(true);
      probe.bind(new java.net.InetSocketAddress(host, requestedPort));
    } catch (java.io.IOException e) {
      throw new IllegalStateException(
          "port " + requestedPort + " is already in use (" + e.getMessage() + ")", e);
    }
  }

  /**
   * Starts the API, dashboard and docs as a servlet for another servlet container instead of a port of its
   * own: map it to {@code /some/path/*} with async support (the event stream needs it), and the API answers
   * under that path ({@code /some/path/jobs}, the dashboard at {@code /some/path/}). Host and port are
   * ignored; tokens, CORS, timeouts and limits apply as in {@link #start()}. Live updates use the
   * Server-Sent Events stream; WebSocket routes are not served through the servlet. {@link #close()} ends
   * the event streams and the handler threads; the container owns the servlet's own lifecycle.
   *
   * @throws IllegalStateException if already started or closed
   */
  public synchronized jakarta.servlet.http.HttpServlet startServlet() {
    app = createApp(false);
    // Javalin readies its static files when its own Jetty starts; as a servlet no Jetty starts.
    app.unsafe.resourceHandler.init(app.unsafe.http.compressionStrategy);
    startEvents();
    log.info(
        "pgjobs API ready as a servlet (auth {}, CORS {})",
        tokens.isEmpty() ? "off" : "on, " + tokens.size() + " tokens",
        corsOrigins.isEmpty() ? "off" : corsOrigins);
    // Javalin's own servlet, not javalinServlet(): that one is Jetty's WebSocket servlet, which
    // needs Jetty.
    return new MountedServlet(new io.javalin.http.servlet.JavalinServlet(app.unsafe));
  }

  /** Starts the event hub's LISTEN, unless live events are off; says which host names a tokenless API answers. */
  private void startEvents() {
    if (tokens.isEmpty()) {
      log.info(
          "pgjobs API without tokens answers the Host names localhost, *.localhost and IP addresses{}",
          allowedHosts.isEmpty() ? " only (allowedHosts adds more)" : ", and " + allowedHosts);
    }
    if (liveEvents) {
      events.start();
      log.info(
          "pgjobs API: live events LISTEN on {}",
          separateListenSource
              ? "the listen data source (a direct connection)"
              : "the client's data source");
    } else {
      log.warn(
          "pgjobs API: live events are off (no LISTEN): event streams carry keep-alive pings only");
    }
  }

  /** The Javalin app with every route; {@code standalone}: it will listen on its own port. */
  private Javalin createApp(boolean standalone) {
    if (app != null || closed) {
      throw new IllegalStateException("an ApiServer can be started once");
    }
    this.standalone = standalone;
    // Mounted in an application that brought its own registry, the application binds the JVM's
    // metrics; binding them twice would count each GC pause twice.
    if (standalone || ownRegistry) {
      bindJvmMetrics();
    }
    QueuesApi queues = new QueuesApi(client);
    OpenApiDocs docs = new OpenApiDocs();
    return Javalin.create(cfg -> {
      cfg.concurrency.useVirtualThreads = true;
      cfg.startup.showJavalinBanner = false;
      // Mounted as a servlet no Jetty of Javalin's starts, by design: its "you never started it"
      // hint would only mislead.
      cfg.startup.startupWatcherEnabled = standalone;
      cfg.jetty.host = host;
      cfg.jetty.port = requestedPort;
      cfg.http.maxRequestSize = maxBodyBytes;
      cfg.http.prefer405over404 = true;
      cfg.jsonMapper(new JavalinJackson3(json, true));
      // Javalin's own handler reads class path files through the class loader's URLs. The default
      // (Jetty's ResourceHandler) needs a directory Resource as its base, and a directory inside a
      // nested jar of a Spring Boot fat jar (jar:nested:...!/BOOT-INF/lib/...) is "an alias" to
      // Jetty: it served nothing.
      cfg.resourceHandler(new JavalinStaticResourceHandler());
      cfg.staticFiles.enableWebjars();
      cfg.staticFiles.add(sf -> {
        sf.hostedPath = "/";
        sf.directory = "/io/pgjobs/server/dashboard";
        sf.location = Location.CLASSPATH;
      });
      cfg.staticFiles.add(sf -> {
        // The browser job tracker (/client/pgjobs.js) and its example page.
        sf.hostedPath = "/client";
        sf.directory = "/io/pgjobs/server/client";
        sf.location = Location.CLASSPATH;
      });
      cfg.staticFiles.add(sf -> {
        sf.hostedPath = "/dashboard";
        sf.directory = "/io/pgjobs/server/dashboard";
        sf.location = Location.CLASSPATH;
      });
      cfg.routes.before(this::beforeRequest);
      cfg.routes.beforeMatched(this::authorize);
      cfg.routes.exception(
          Exception.class, (e, ctx) -> unlessGone(ctx, e, () -> problems.respond(ctx, e)));
      // Javalin registers its own handler for HttpResponseException (404, 405, 413); take it over.
      cfg.routes.exception(
          HttpResponseException.class,
          (e, ctx) -> unlessGone(ctx, e, () -> {
            if (e.getStatus() == 405) {
              // RFC 9110 15.5.6: a 405 must say which methods the resource has.
              String allow = String.join(", ", allowedMethods(pathOf(ctx)));
              ctx.header("Allow", allow);
              problems.respond(
                  ctx,
                  ApiProblem.http(
                      405,
                      "method-not-allowed",
                      "Method not allowed",
                      ctx.method().name() + " is not allowed on " + ctx.path() + "; allowed: "
                          + allow));
              return;
            }
            problems.respond(ctx, e);
          }));
      cfg.requestLogger.http(this::afterRequest);

      Routes routes = new Routes(cfg.routes, requestTimeout, handlerThreads, json);
      new JobsApi(client, acceptUnknownTypes).register(routes);
      new GraphsApi(client, acceptUnknownTypes).register(routes);
      new WorkflowsApi(client, acceptUnknownTypes).register(routes);
      new JobTypesApi(client, acceptUnknownTypes).register(routes);
      queues.register(routes);
      new WorkersApi(client).register(routes);
      new StatsApi(client).register(routes);
      new DeadLettersApi(client).register(routes);
      EventsApi eventsApi = new EventsApi(client, events, queues, !tokens.isEmpty());
      eventsApi.register(routes);
      new WsApi(
              client,
              events,
              eventsApi,
              json,
              !tokens.isEmpty(),
              token -> scopeOf(token) != null,
              originGuard)
          .register(cfg.routes);
      new HealthApi(client).register(routes);
      new MetricsApi(registry, client).register(routes);
      new RecurringApi(client, acceptUnknownTypes).register(routes);
      docs.register(routes);
      receivers.forEach((path, handler) ->
          cfg.routes.post(path, ctx -> ctx.status(handler.handle(ctx::header, ctx.bodyAsBytes()))));
    });
  }

  /**
   * Runs an exception handler's answer, and gives it up when the request is gone. When an event stream
   * ends because a write to its client failed, Javalin resumes the stream's request on the writer's
   * thread — at times after the servlet container has already recycled it (the client went away, the
   * server is stopping). Every use of the request then throws, and an exception handler that throws makes
   * Javalin 7 queue another exception task for the same request, whose handler throws again: the writer
   * thread looped for as long as the JVM ran, logging two stack traces a millisecond (seen in the test
   * logs: 40,000 loops in one test JVM, hundreds of megabytes of logs, a core busy). There is nobody to
   * answer, so nothing is written and nothing is thrown.
   */
  private static void unlessGone(Context ctx, Exception error, Runnable answer) {
    try {
      answer.run();
    } catch (RuntimeException e) {
      log.debug("no answer for {} (the request is gone: {})", error.toString(), e.toString());
    }
  }

  /** The port the server listens on (the bound one when 0 was asked for). */
  public int port() {
    if (app == null) {
      throw new IllegalStateException("the server is not started");
    }
    if (!standalone) {
      throw new IllegalStateException(
          "the API runs as a servlet in another container and has no port of its own");
    }
    return app.port();
  }

  /** The base URI for a client on this machine ({@code http://127.0.0.1:port}). */
  public URI localUri() {
    String h = host.equals("0.0.0.0") || host.equals("::") ? "127.0.0.1" : host;
    return URI.create("http://" + (h.contains(":") ? "[" + h + "]" : h) + ":" + port());
  }

  /** The registry {@code /metrics} shows. */
  public PrometheusMeterRegistry meterRegistry() {
    return registry;
  }

  /** Every route the server answers, as {@code "GET /jobs/{id}"}, in registration order. */
  public List<String> routes() {
    if (app == null) {
      throw new IllegalStateException("the server is not started");
    }
    return app.unsafe.internalRouter.allHttpHandlers().stream()
        .map(p -> p.endpoint)
        .filter(e -> e.method.isHttpMethod())
        .map(e -> e.method.name() + " " + e.path)
        .toList();
  }

  /**
   * Ends the open event streams now (their clients reconnect), before {@link #close()}: a host container's
   * graceful shutdown waits for open requests, and an event stream never ends by itself.
   */
  public void endEventStreams() {
    events.close();
  }

  /** Stops the server: ends event streams, stops listening and waits for running requests briefly. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    closeQuietly();
    log.info("pgjobs API stopped");
  }

  private void closeQuietly() {
    events.close();
    if (app != null && standalone) {
      try {
        app.stop();
      } catch (RuntimeException e) {
        log.warn("stopping the HTTP server failed: {}", e.toString());
      }
    }
    handlerThreads.shutdownNow();
    try {
      handlerThreads.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (AutoCloseable binder : binders) {
      try {
        binder.close();
      } catch (Exception e) {
        log.debug("closing a metrics binder failed: {}", e.toString());
      }
    }
  }

  private void bindJvmMetrics() {
    new ClassLoaderMetrics().bindTo(registry);
    new JvmMemoryMetrics().bindTo(registry);
    JvmGcMetrics gc = new JvmGcMetrics();
    gc.bindTo(registry);
    binders.add(gc);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
  }

  // ---------------------------------------------------------------- request pipeline

  /** Request id, the Host and Origin checks, CORS, and the body size limit (before any routing). */
  private void beforeRequest(Context ctx) {
    String requestId = ctx.header(REQUEST_ID_HEADER);
    if (requestId == null || !REQUEST_ID.matcher(requestId).matches()) {
      requestId = UUID.randomUUID().toString();
    }
    ctx.attribute(ATTR_REQUEST_ID, requestId);
    ctx.header(REQUEST_ID_HEADER, requestId);
    MDC.put(REQUEST_ID_MDC, requestId);
    // Before anything can change: a cross-site write or a rebound host name is refused here
    // (421/403).
    originGuard.check(ctx, false);
    if (cors(ctx)) {
      return;
    }
    String path = pathOf(ctx);
    if (path.equals("/dashboard")
        || path.equals("/dashboard/")
        || path.equals("/dashboard/index.html")) {
      // The dashboard's page lives at the root: its API calls are relative to the directory its
      // scripts come from, which must be the root of the API (also when mounted under a path).
      ctx.status(302);
      ctx.header("Location", ctx.contextPath() + "/");
      ctx.skipRemainingHandlers();
      return;
    }
    long length = ctx.req().getContentLengthLong();
    if (length > maxBodyBytes) {
      throw ApiProblem.tooLarge(maxBodyBytes);
    }
  }

  /** The request's path below the context path (where the API is mounted; empty on its own port). */
  private static String pathOf(Context ctx) {
    return ctx.path().substring(ctx.contextPath().length());
  }

  /** CORS for the configured origins only; answers preflight requests. Returns true when answered. */
  private boolean cors(Context ctx) {
    String origin = ctx.header("Origin");
    if (origin == null || corsOrigins.isEmpty()) {
      return false;
    }
    boolean any = corsOrigins.contains("*");
    if (!any && !corsOrigins.contains(origin.toLowerCase(Locale.ROOT))) {
      return false;
    }
    ctx.header("Access-Control-Allow-Origin", any ? "*" : origin);
    ctx.header("Vary", "Origin");
    ctx.header(
        "Access-Control-Expose-Headers",
        REQUEST_ID_HEADER + ", Location, Idempotent-Replayed, Unique-Conflict");
    if (ctx.method() == HandlerType.OPTIONS
        && ctx.header("Access-Control-Request-Method") != null) {
      ctx.header("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS");
      ctx.header(
          "Access-Control-Allow-Headers",
          "Authorization, Content-Type, Idempotency-Key, " + REQUEST_ID_HEADER);
      ctx.header("Access-Control-Max-Age", "600");
      ctx.status(204);
      ctx.skipRemainingHandlers();
      return true;
    }
    return false;
  }

  /** Bearer-token auth for matched routes (static assets, docs and health are open). */
  private void authorize(Context ctx) {
    if (tokens.isEmpty()) {
      return;
    }
    Endpoint endpoint = ctx.endpoints().matchedHttpEndpoint();
    if (endpoint == null || isOpen(endpoint.path) || receivers.containsKey(endpoint.path)) {
      return;
    }
    String header = ctx.header("Authorization");
    if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
      throw ApiProblem.unauthorized(
          "this server needs a bearer token: send Authorization: Bearer <token>");
    }
    Scope scope = scopeOf(header.substring(7).trim());
    if (scope == null) {
      throw ApiProblem.unauthorized("the bearer token is not valid");
    }
    boolean read = ctx.method() == HandlerType.GET || ctx.method() == HandlerType.HEAD;
    if (!read && scope != Scope.ADMIN) {
      throw ApiProblem.forbidden("a READ token may only read (GET); " + ctx.method() + " "
          + endpoint.path + " needs an ADMIN token");
    }
  }

  private static boolean isOpen(String path) {
    return path.startsWith("/health/")
        || path.equals("/openapi.json")
        || path.equals("/openapi.yaml")
        || path.equals("/docs");
  }

  /** The token's scope, or null; compares every token in constant time. */
  private Scope scopeOf(String token) {
    byte[] given = token.getBytes(StandardCharsets.UTF_8);
    Scope found = null;
    for (Map.Entry<byte[], Scope> e : tokens.entrySet()) {
      if (MessageDigest.isEqual(e.getKey(), given)) {
        found = e.getValue();
      }
    }
    return found;
  }

  /** Access log line and the HTTP request timer. */
  private void afterRequest(Context ctx, Float millis) {
    Object requestId = ctx.attribute(ATTR_REQUEST_ID);
    if (requestId != null) {
      MDC.put(REQUEST_ID_MDC, requestId.toString());
    }
    try {
      Endpoint endpoint = ctx.endpoints().lastHttpEndpoint();
      int status = ctx.statusCode();
      // Unrouted answers get fixed labels, as Spring Boot's: the raw path would let any client grow
      // the number of time series without bound.
      String uri;
      if (endpoint != null && !endpoint.path.isEmpty() && !endpoint.path.equals("*")) {
        uri = endpoint.path;
      } else if (status == 404) {
        uri = "NOT_FOUND";
      } else if (status == 405) {
        uri = routeOf(pathOf(ctx));
      } else if (status < 400) {
        uri = "static";
      } else {
        uri = "UNKNOWN";
      }
      long nanos = (long) (millis * 1_000_000L);
      if (!standalone && !ownRegistry) {
        // Mounted in an application that brought its registry: the application measures its
        // requests under this name with tags of its own, and Prometheus takes one set of tag keys
        // per name.
        logAccess(ctx, uri, status, millis);
        return;
      }
      Timer.builder("http.server.requests")
          .description("HTTP requests served by the pgjobs API")
          .tag("method", ctx.method().name())
          .tag("uri", uri)
          .tag("status", Integer.toString(status))
          .tag("outcome", outcome(status))
          .register(registry)
          .record(nanos, TimeUnit.NANOSECONDS);
      logAccess(ctx, uri, status, millis);
    } finally {
      MDC.remove(REQUEST_ID_MDC);
    }
  }

  private static void logAccess(Context ctx, String uri, int status, Float millis) {
    if (uri.startsWith("/health/") || uri.equals("/metrics")) {
      access.debug(
          "{} {} {} {} ms",
          ctx.method().name(),
          ctx.path(),
          status,
          String.format(Locale.ROOT, "%.1f", millis));
    } else {
      access.info(
          "{} {} {} {} ms",
          ctx.method().name(),
          ctx.path(),
          status,
          String.format(Locale.ROOT, "%.1f", millis));
    }
  }

  /** The HTTP methods some route answers for {@code path}, GET before POST (for a 405's Allow header). */
  private List<String> allowedMethods(String path) {
    List<String> methods = new ArrayList<>();
    for (HandlerType type : HandlerType.values()) {
      if (type.isHttpMethod()
          && app.unsafe.internalRouter.findFirstHttpHandlerEntry(type, path) != null) {
        methods.add(type.name());
      }
    }
    return methods;
  }

  /** The route template for {@code path} under any method, or {@code UNKNOWN}. */
  private String routeOf(String path) {
    for (HandlerType type : HandlerType.values()) {
      if (type.isHttpMethod()) {
        var entry = app.unsafe.internalRouter.findFirstHttpHandlerEntry(type, path);
        if (entry != null) {
          return entry.endpoint.path;
        }
      }
    }
    return "UNKNOWN";
  }

  private static String outcome(int status) {
    if (status < 200) {
      return "INFORMATIONAL";
    } else if (status < 300) {
      return "SUCCESS";
    } else if (status < 400) {
      return "REDIRECTION";
    } else if (status < 500) {
      return "CLIENT_ERROR";
    }
    return "SERVER_ERROR";
  }

  /**
   * Javalin's servlet under a container's mapping {@code /path/*}. Javalin routes on the request URI
   * minus the context path, so the mapping's path is shown to it as part of the context path.
   * {@code /path} itself redirects to {@code /path/}, where the dashboard's relative URLs resolve.
   */
  private static final class MountedServlet extends jakarta.servlet.http.HttpServlet {
    private final jakarta.servlet.http.HttpServlet javalin;

    MountedServlet(jakarta.servlet.http.HttpServlet javalin) {
      this.javalin = javalin;
    }

    @Override
    public void init(jakarta.servlet.ServletConfig config) throws jakarta.servlet.ServletException {
      super.init(config);
      javalin.init(config);
    }

    @Override
    protected void service(
        jakarta.servlet.http.HttpServletRequest req, jakarta.servlet.http.HttpServletResponse res)
        throws jakarta.servlet.ServletException, java.io.IOException {
      String mount = req.getContextPath() + req.getServletPath();
      if (req.getPathInfo() == null) {
        String query = req.getQueryString();
        res.sendRedirect(mount + "/" + (query == null ? "" : "?" + query));
        return;
      }
      javalin.service(
          new jakarta.servlet.http.HttpServletRequestWrapper(req) {
            @Override
            public String getContextPath() {
              return mount;
            }

            @Override
            public String getServletPath() {
              return "";
            }

            @Override
            public boolean isAsyncStarted() {
              try {
                return super.isAsyncStarted();
              } catch (IllegalStateException e) {
                // The container already ended the request (an event stream whose client went away):
                // Javalin
                // asks when it finishes the stream, and there is nothing left to complete.
                return false;
              }
            }
          },
          res);
      if (req.isAsyncStarted()) {
        // A client that goes away ends an event stream here and now; without this the container
        // would dispatch the error to the application's error page, which cannot write to an event
        // stream.
        req.getAsyncContext().addListener(new jakarta.servlet.AsyncListener() {
          @Override
          public void onError(jakarta.servlet.AsyncEvent event) {
            try {
              event.getAsyncContext().complete();
            } catch (IllegalStateException e) {
              // the stream was already being completed by its own thread
            }
          }

          @Override
          public void onComplete(jakarta.servlet.AsyncEvent event) {}

          @Override
          public void onTimeout(jakarta.servlet.AsyncEvent event) {}

          @Override
          public void onStartAsync(jakarta.servlet.AsyncEvent event) {}
        });
      }
    }

    @Override
    public void destroy() {
      javalin.destroy();
    }
  }

  // ---------------------------------------------------------------- builder

  /** Builder of {@link ApiServer}; {@link #build()} validates every setting. */
  public static final class Builder {
    private static final Pattern ORIGIN =
        Pattern.compile("https?://[A-Za-z0-9.\\-\\[\\]:]+(:\\d{1,5})?");
    private static final Pattern ALLOWED_HOST =
        Pattern.compile("(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9\\-.]{0,251}[A-Za-z0-9])?");

    private final JobClient client;
    private String host = DEFAULT_HOST;
    private int port = DEFAULT_PORT;
    private boolean acceptUnknownTypes;
    private Map<String, Scope> tokens = Map.of();
    private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
    private long maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private List<String> corsOrigins = List.of();
    private List<String> allowedOrigins = List.of();
    private List<String> allowedHosts = List.of();
    private PrometheusMeterRegistry registry;
    private final Map<String, Receiver> receivers = new LinkedHashMap<>();
    private boolean allowUnauthenticated;
    private javax.sql.DataSource listenDataSource;
    private boolean liveEvents = true;
    private io.pgjobs.server.events.EventLimits eventLimits =
        io.pgjobs.server.events.EventLimits.DEFAULTS;

    private Builder(JobClient client) {
      this.client = Objects.requireNonNull(client, "client");
    }

    /**
     * Where the live event stream's one LISTEN connection comes from (default: the client's data source).
     * Behind PgBouncer in transaction pooling mode give a data source that connects to PostgreSQL directly:
     * LISTEN does not work through such a pooler.
     */
    public Builder listenDataSource(javax.sql.DataSource listenDataSource) {
      this.listenDataSource = Objects.requireNonNull(listenDataSource, "listenDataSource");
      return this;
    }

    /**
     * Whether {@code /events} streams live job events (default true). Off, the server opens no LISTEN
     * connection and event streams carry keep-alive pings only (behind a transaction pooler without a
     * direct connection); everything else works as before.
     */
    public Builder liveEvents(boolean liveEvents) {
      this.liveEvents = liveEvents;
      return this;
    }

    /**
     * Limits of {@code /events} and {@code /ws}: connections and subscriptions per server and per token,
     * and how far a subscriber may fall behind (default {@code EventLimits.DEFAULTS}). The record checks
     * its values when it is made.
     */
    public Builder eventLimits(io.pgjobs.server.events.EventLimits eventLimits) {
      this.eventLimits = Objects.requireNonNull(eventLimits, "eventLimits");
      return this;
    }

    /**
     * Address to bind (default {@link ApiServer#DEFAULT_HOST}: this machine only). A non-loopback
     * address ({@code 0.0.0.0}, a LAN address) needs {@link #tokens(Map)} or
     * {@link #allowUnauthenticated()}: {@link #build()} refuses to expose an API that can cancel every job
     * to the network without authentication.
     */
    public Builder host(String host) {
      this.host = host;
      return this;
    }

    /** Port ({@link PgJobsSettings#PORT}); 0 picks a free one, see {@link ApiServer#port()}. */
    public Builder port(int port) {
      this.port = port;
      return this;
    }

    /**
     * Whether {@code POST /jobs} accepts job types the client does not know (default false: 422 listing
     * the known types). Another service's workers may run such jobs.
     */
    public Builder acceptUnknownTypes(boolean acceptUnknownTypes) {
      this.acceptUnknownTypes = acceptUnknownTypes;
      return this;
    }

    /**
     * Bearer tokens and what each may do. Empty (the default) turns authentication off. Tokens are at
     * least 16 characters without white space.
     */
    public Builder tokens(Map<String, Scope> tokens) {
      this.tokens = tokens == null ? null : new LinkedHashMap<>(tokens);
      return this;
    }

    /** Longest a request may take before it is answered 504 ({@link PgJobsSettings#REQUEST_TIMEOUT}). Event streams are exempt. */
    public Builder requestTimeout(Duration requestTimeout) {
      this.requestTimeout = requestTimeout;
      return this;
    }

    /** Largest request body in bytes ({@link PgJobsSettings#MAX_BODY_BYTES}); larger ones get 413. */
    public Builder maxBodyBytes(long maxBodyBytes) {
      this.maxBodyBytes = maxBodyBytes;
      return this;
    }

    /**
     * Origins allowed to call the API from a browser ({@code https://ops.example.com}, or {@code *}).
     * Empty (the default) sends no CORS headers at all.
     */
    public Builder corsOrigins(List<String> corsOrigins) {
      this.corsOrigins = corsOrigins == null ? null : new ArrayList<>(corsOrigins);
      return this;
    }

    /**
     * Origins ({@code https://ops.example.com}, or {@code *} for any) whose web pages may send requests
     * that change something (POST, PUT, PATCH, DELETE, the WebSocket upgrade) besides the server's own
     * pages and the {@link #corsOrigins(List) CORS origins}. Default: none. Such a request from a page of
     * any other origin is refused with 403, so a page of another site cannot pause a queue or cancel a job
     * through the visitor's browser. Requests without {@code Origin} (programs) are not affected. Unlike
     * {@code corsOrigins}, this sends no CORS headers: the page may send, not read.
     */
    public Builder allowedOrigins(List<String> allowedOrigins) {
      this.allowedOrigins = allowedOrigins == null ? null : new ArrayList<>(allowedOrigins);
      return this;
    }

    /**
     * Host names the server answers to without tokens, besides {@code localhost}, {@code *.localhost}
     * and IP addresses: {@code jobs.internal}, {@code *.example.com} (its subdomains), or {@code *} (any:
     * turns the check off). Default: none. Without tokens, a request whose {@code Host} names another
     * host is refused with 421: a web page can make a name of its own resolve to this server (DNS
     * rebinding) and would otherwise read and change everything. With tokens, {@code Host} is not
     * checked. Names only, without scheme or port.
     */
    public Builder allowedHosts(List<String> allowedHosts) {
      this.allowedHosts = allowedHosts == null ? null : new ArrayList<>(allowedHosts);
      return this;
    }

    /**
     * Adds a receiver for inbound webhooks: a POST route beside the API for a sender that cannot hold
     * a bearer token (a payment provider, a Git host, another service's pgjobs webhook job) and
     * authenticates itself, usually by a signature over the body that {@code handler} checks. The
     * handler typically enqueues a job through the server's client and answers 202.
     *
     * <p>The route follows the API's transport rules (the {@code Host} check of a server without
     * tokens, the cross-site write check, {@link #maxBodyBytes}), but not its bearer tokens: the
     * handler alone decides who may post. It is not under {@link #requestTimeout} and not in the
     * OpenAPI document. {@code path} is fixed (no parameters) and must not be an API route; a second
     * receiver on the same path replaces the first. The CLI's {@code pgjobs demo} receives its sample
     * webhooks this way, at {@code /demo/webhook}.
     */
    public Builder receiver(String path, Receiver handler) {
      if (path == null || !path.matches("(/[A-Za-z0-9._~\\-]+)+")) {
        throw new IllegalArgumentException(
            "path must be a fixed path like /demo/webhook, was " + path);
      }
      receivers.put(path, java.util.Objects.requireNonNull(handler, "handler"));
      return this;
    }

    /**
     * The registry {@code /metrics} shows; pass the one the workers of this process record to
     * ({@code new MicrometerJobMetrics(registry)}). Default: a new one.
     */
    public Builder meterRegistry(PrometheusMeterRegistry registry) {
      this.registry = Objects.requireNonNull(registry, "meterRegistry");
      return this;
    }

    /**
     * Lets the server listen on a non-loopback address without tokens. Anyone who can reach the port
     * can then enqueue, cancel and retry jobs; use it only behind a proxy or on a trusted network.
     */
    public Builder allowUnauthenticated() {
      this.allowUnauthenticated = true;
      return this;
    }

    /**
     * Validates every setting and builds a server (not yet started).
     *
     * @throws IllegalArgumentException naming the setting, the value and what is allowed
     */
    public ApiServer build() {
      if (!liveEvents && listenDataSource != null) {
        throw new IllegalArgumentException(
            "liveEvents(false) and a listenDataSource contradict each other: drop one (no LISTEN, or LISTEN on it)");
      }
      if (host == null || host.isBlank()) {
        throw new IllegalArgumentException(
            "host must be a host name or IP address, was '" + host + "'");
      }
      if (port < PgJobsSettings.PORT.min() || port > PgJobsSettings.PORT.max()) {
        throw new IllegalArgumentException("port must be between " + PgJobsSettings.PORT.min()
            + " and " + PgJobsSettings.PORT.max() + " (0 = any free port), was " + port);
      }
      if (tokens == null) {
        throw new IllegalArgumentException(
            "tokens must not be null (use an empty map to turn authentication off)");
      }
      for (Map.Entry<String, Scope> e : tokens.entrySet()) {
        String token = e.getKey();
        if (token == null
            || token.length() < 16
            || !token.chars().noneMatch(Character::isWhitespace)) {
          throw new IllegalArgumentException(
              "every token must be at least 16 characters without white space; got one of "
                  + (token == null ? "null" : token.length() + " characters"));
        }
        if (e.getValue() == null) {
          throw new IllegalArgumentException("every token needs a scope (READ or ADMIN)");
        }
      }
      if (tokens.isEmpty() && !allowUnauthenticated && !isLoopback(host)) {
        throw new IllegalArgumentException(
            "refusing to listen on " + host + " without authentication: anyone who can"
                + " reach it could cancel and retry every job. Give API tokens, listen on 127.0.0.1 (the default), or"
                + " call allowUnauthenticated() (CLI: --insecure) if a proxy or the network protects it");
      }
      PgJobsSettings.REQUEST_TIMEOUT.require(requestTimeout);
      PgJobsSettings.MAX_BODY_BYTES.require(maxBodyBytes);
      if (corsOrigins == null) {
        throw new IllegalArgumentException(
            "corsOrigins must not be null (use an empty list to turn CORS off)");
      }
      List<String> origins = new ArrayList<>();
      for (String origin : corsOrigins) {
        if (origin == null || !(origin.equals("*") || ORIGIN.matcher(origin).matches())) {
          throw new IllegalArgumentException(
              "every CORS origin must be scheme://host[:port] (http or https, no path) or *, was '"
                  + origin + "'");
        }
        origins.add(origin.toLowerCase(Locale.ROOT));
      }
      corsOrigins = origins;
      if (allowedOrigins == null) {
        throw new IllegalArgumentException(
            "allowedOrigins must not be null (use an empty list for none)");
      }
      List<String> writers = new ArrayList<>();
      for (String origin : allowedOrigins) {
        if (origin == null || !(origin.equals("*") || ORIGIN.matcher(origin).matches())) {
          throw new IllegalArgumentException(
              "every allowed origin must be scheme://host[:port] (http or https, no"
                  + " path, like https://ops.example.com) or *, was '" + origin + "'");
        }
        writers.add(origin.toLowerCase(Locale.ROOT));
      }
      allowedOrigins = writers;
      if (allowedHosts == null) {
        throw new IllegalArgumentException(
            "allowedHosts must not be null (use an empty list for none)");
      }
      List<String> hosts = new ArrayList<>();
      for (String name : allowedHosts) {
        if (name == null || !(name.equals("*") || ALLOWED_HOST.matcher(name).matches())) {
          throw new IllegalArgumentException(
              "every allowed host must be a host name like jobs.example.com, *.example.com"
                  + " for its subdomains, or * for any host (no scheme, no port), was '" + name
                  + "'");
        }
        hosts.add(name.toLowerCase(Locale.ROOT));
      }
      allowedHosts = hosts;
      return new ApiServer(this);
    }

    /** True if every address {@code host} names is a loopback address; false when it cannot be resolved. */
    private static boolean isLoopback(String host) {
      try {
        java.net.InetAddress[] addresses = java.net.InetAddress.getAllByName(host);
        for (java.net.InetAddress a : addresses) {
          if (!a.isLoopbackAddress()) {
            return false;
          }
        }
        return addresses.length > 0;
      } catch (java.net.UnknownHostException e) {
        return false;
      }
    }
  }
}
