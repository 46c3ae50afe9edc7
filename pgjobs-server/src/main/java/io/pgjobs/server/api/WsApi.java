package io.pgjobs.server.api;

import io.javalin.config.RoutesConfig;
import io.javalin.websocket.WsContext;
import io.pgjobs.JobClient;
import io.pgjobs.server.events.EventFilter;
import io.pgjobs.server.events.EventHub;
import io.pgjobs.server.events.EventLimits;
import io.pgjobs.server.events.EventSink;
import io.pgjobs.server.problem.ApiProblem;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;
import org.eclipse.jetty.websocket.api.Callback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code /ws}: the WebSocket twin of {@code /events}, for job trackers and the dashboard. A client
 * sends JSON messages ({@code op}: {@code auth}, {@code subscribe}, {@code unsubscribe}, {@code events},
 * {@code events_off}); the server answers with {@code job} messages (the whole job, first when
 * subscribed and again after each change of it), {@code event} messages (the {@code /events} stream's
 * events) and {@code error} messages. docs/API.md describes the protocol.
 *
 * <p>Every job message is read from the database after the change it reports, so a client that
 * (re)subscribes always gets the job's current state, including a final state it missed while it was
 * disconnected. Each subscription runs on the {@link EventHub} with its bounded queue; a connection
 * whose subscription falls behind, or that does not take a message within {@link #SEND_TIMEOUT}, is
 * closed (code 1008), and its client resubscribes from fresh snapshots. The hub's {@link EventLimits}
 * bound connections (over the limit: closed with code {@value EventLimits#CLOSE_TRY_AGAIN_LATER} and
 * the reason) and subscriptions (over the limit: an {@code error} message with the reason).
 */
public final class WsApi {
  /** Close code for a missing or rejected token: {@value}. */
  public static final int CLOSE_UNAUTHORIZED = 4401;
  /** Longest a message may wait for a slow client before the connection is closed. */
  static final Duration SEND_TIMEOUT = Duration.ofSeconds(10);
  /** WebSocket ping interval: keeps proxies from closing idle connections and finds dead ones. */
  static final Duration PING = Duration.ofSeconds(15);

  private static final Logger log = LoggerFactory.getLogger(WsApi.class);

  private final JobClient client;
  private final EventHub hub;
  private final EventsApi events;
  private final JsonMapper json;
  private final boolean tokensRequired;
  private final Predicate<String> validToken;
  private final OriginGuard originGuard;
  private final Map<String, Connection> connections = new ConcurrentHashMap<>();

  /**
   * @param tokensRequired whether clients must authenticate
   * @param validToken true for a token of any scope (following jobs is reading)
   * @param originGuard the server's Host and Origin checks, applied to the upgrade
   */
  public WsApi(
      JobClient client,
      EventHub hub,
      EventsApi events,
      JsonMapper json,
      boolean tokensRequired,
      Predicate<String> validToken,
      OriginGuard originGuard) {
    this.client = client;
    this.hub = hub;
    this.events = events;
    this.json = json;
    this.tokensRequired = tokensRequired;
    this.validToken = validToken;
    this.originGuard = originGuard;
  }

  /** Registers {@code /ws}. */
  public void register(RoutesConfig routes) {
    // A client that can send headers authenticates at the upgrade; a bad header is refused with 401
    // there.
    routes.wsBeforeUpgrade("/ws", ctx -> {
      // Browsers apply no CORS to WebSockets: without this check any web page could read job
      // updates from a server on the visitor's machine that has no tokens (cross-site WebSocket
      // hijacking). The same checks as every write (OriginGuard): own pages, allowed and CORS
      // origins; a rebound Host is 421.
      originGuard.check(ctx, true);
      String header = ctx.header("Authorization");
      if (tokensRequired && header != null && !validToken.test(bearer(header))) {
        throw ApiProblem.unauthorized("the bearer token is not valid");
      }
    });
    routes.ws("/ws", ws -> {
      ws.onConnect(ctx -> {
        String header = ctx.header("Authorization");
        String token = tokensRequired && header != null && validToken.test(bearer(header))
            ? bearer(header)
            : null;
        EventHub.Peer peer;
        try {
          peer = hub.connect(token);
        } catch (EventHub.Refused e) {
          ctx.closeSession(EventLimits.CLOSE_TRY_AGAIN_LATER, e.getMessage());
          return;
        }
        Connection c = new Connection(ctx, peer, !tokensRequired || token != null);
        connections.put(ctx.sessionId(), c);
        ctx.enableAutomaticPings(PING.toMillis(), TimeUnit.MILLISECONDS);
      });
      ws.onMessage(ctx -> {
        Connection c = connections.get(ctx.sessionId());
        if (c != null) {
          c.receive(ctx.message());
        }
      });
      ws.onClose(ctx -> {
        Connection c = connections.remove(ctx.sessionId());
        if (c != null) {
          c.stopAll();
          c.peer.close();
        }
      });
      ws.onError(ctx -> {
        Connection c = connections.remove(ctx.sessionId());
        if (c != null) {
          c.stopAll();
          c.peer.close();
        }
      });
    });
  }

  /** Connections open now. */
  public int connections() {
    return connections.size();
  }

  private static String bearer(String header) {
    return header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : "";
  }

  /** A job message: the whole job as {@code GET /jobs/{id}} shows it, or null once it no longer exists. */
  record JobMessage(String type, UUID id, JobsApi.JobView job) {
    JobMessage(UUID id, JobsApi.JobView job) {
      this("job", id, job);
    }
  }

  /** One event of the {@code /events} stream. */
  record EventMessage(String type, String event, Object data, String id) {
    EventMessage(String event, Object data, String id) {
      this("event", event, data, id);
    }
  }

  /** A message the server could not act on; the connection stays open. */
  record ErrorMessage(String type, String op, String detail) {
    ErrorMessage(String op, String detail) {
      this("error", op, detail);
    }
  }

  /** One WebSocket connection: its subscriptions and the lock that keeps its writes in order. */
  private final class Connection {
    private final WsContext ctx;
    private final EventHub.Peer peer;
    private final Object sendLock = new Object();
    // Touched by the receiving thread and by the hub's subscriber threads (stopAll), hence
    // concurrent.
    private final Map<UUID, JobSink> jobs = new ConcurrentHashMap<>();
    private volatile boolean authenticated;
    private volatile boolean closed;
    private volatile StreamSink eventStream;

    Connection(WsContext ctx, EventHub.Peer peer, boolean authenticated) {
      this.ctx = ctx;
      this.peer = peer;
      this.authenticated = authenticated;
    }

    synchronized void receive(String text) {
      if (closed) {
        return;
      }
      JsonNode msg;
      try {
        msg = json.readTree(text);
      } catch (JacksonException e) {
        send(new ErrorMessage(
            null, "a message must be a JSON object with \"op\"; this one is not valid JSON"));
        return;
      }
      String op = msg != null && msg.isObject() && msg.path("op").isString()
          ? msg.path("op").asString()
          : null;
      if (op == null) {
        send(new ErrorMessage(
            null,
            "a message must be a JSON object with \"op\": auth, subscribe, unsubscribe,"
                + " events or events_off"));
        return;
      }
      if (op.equals("auth")) {
        auth(msg);
        return;
      }
      if (!authenticated) {
        close(
            CLOSE_UNAUTHORIZED,
            "this server needs a token: send {\"op\":\"auth\",\"token\":\"...\"} first"
                + " (or Authorization: Bearer <token> with the upgrade request)");
        return;
      }
      switch (op) {
        case "subscribe" -> subscribe(ids(op, msg));
        case "unsubscribe" ->
          ids(op, msg).forEach(id -> {
            JobSink sink = jobs.remove(id);
            if (sink != null) {
              sink.end();
            }
          });
        case "events" -> events(msg);
        case "events_off" -> {
          StreamSink sink = eventStream;
          eventStream = null;
          if (sink != null) {
            sink.end();
          }
        }
        default ->
          send(new ErrorMessage(
              op,
              "unknown op '" + op + "'; allowed: auth, subscribe, unsubscribe,"
                  + " events, events_off"));
      }
    }

    private void auth(JsonNode msg) {
      String token = msg.path("token").isString() ? msg.path("token").asString() : null;
      if (!tokensRequired) {
        authenticated = true;
      } else if (token == null || !validToken.test(token)) {
        close(
            CLOSE_UNAUTHORIZED,
            token == null ? "auth needs \"token\": a string" : "the token is not valid");
      } else {
        try {
          peer.authenticate(token);
        } catch (EventHub.Refused e) {
          close(EventLimits.CLOSE_TRY_AGAIN_LATER, e.getMessage());
          return;
        }
        authenticated = true;
      }
    }

    /** The {@code jobs} member as UUIDs; reports the bad ones and leaves them out. */
    private Set<UUID> ids(String op, JsonNode msg) {
      Set<UUID> ids = new java.util.LinkedHashSet<>();
      JsonNode list = msg.path("jobs");
      if (!list.isArray()) {
        send(new ErrorMessage(op, "\"jobs\" must be an array of job ids (UUIDs)"));
        return ids;
      }
      for (JsonNode n : list) {
        String s = n.isString() ? n.asString() : n.toString();
        try {
          if (s.length() != 36) {
            throw new IllegalArgumentException();
          }
          ids.add(UUID.fromString(s));
        } catch (IllegalArgumentException e) {
          send(new ErrorMessage(op, "\"jobs\" must hold job ids (UUIDs); '" + s + "' is not one"));
        }
      }
      return ids;
    }

    private void subscribe(Set<UUID> ids) {
      for (UUID id : ids) {
        if (jobs.containsKey(id)) {
          // Already followed: a fresh snapshot is what a resubscribing client wants.
          send(new JobMessage(id, read(id)));
          continue;
        }
        JobSink sink = new JobSink(id);
        jobs.put(id, sink);
        try {
          sink.stop = peer.subscribe(sink, new EventFilter(id, Set.of(), Set.of()), () -> read(id));
        } catch (EventHub.Refused e) {
          jobs.remove(id, sink);
          send(new ErrorMessage("subscribe", e.getMessage() + " (not subscribed: " + id + ")"));
        }
      }
    }

    private void events(JsonNode msg) {
      List<String> types = strings(msg, "types");
      List<String> queues = strings(msg, "queues");
      if (types == null || queues == null) {
        send(new ErrorMessage(
            "events", "\"types\" and \"queues\" must be arrays of strings when given"));
        return;
      }
      StreamSink old = eventStream;
      if (old != null) {
        old.end();
      }
      EventFilter filter = new EventFilter(null, new HashSet<>(types), new HashSet<>(queues));
      StreamSink sink = new StreamSink();
      eventStream = sink;
      try {
        sink.stop = peer.subscribe(sink, filter, () -> events.snapshot(filter));
      } catch (EventHub.Refused e) {
        eventStream = null;
        send(new ErrorMessage("events", e.getMessage()));
      }
    }

    private static List<String> strings(JsonNode msg, String field) {
      JsonNode n = msg.path(field);
      if (n.isMissingNode() || n.isNull()) {
        return List.of();
      }
      if (!n.isArray()) {
        return null;
      }
      List<String> out = new java.util.ArrayList<>();
      for (JsonNode v : n) {
        if (!v.isString()) {
          return null;
        }
        out.add(v.asString());
      }
      return out;
    }

    private JobsApi.JobView read(UUID id) {
      return client.get(id).map(JobsApi.JobView::of).orElse(null);
    }

    /** Writes one message and waits until it is out; a client that takes too long is closed. */
    void send(Object message) {
      if (closed) {
        return;
      }
      String text = json.writeValueAsString(message);
      synchronized (sendLock) {
        try {
          Callback.Completable done = new Callback.Completable();
          ctx.session.sendText(text, done);
          done.get(SEND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          log.warn(
              "WebSocket client {} took over {} to take a message; closing it",
              ctx.sessionId(),
              SEND_TIMEOUT);
          close(1008, "too slow: a message waited over " + SEND_TIMEOUT.toSeconds() + " s");
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (Exception e) {
          log.debug("WebSocket client {}: send failed: {}", ctx.sessionId(), e.toString());
          closed = true;
        }
      }
    }

    void close(int code, String reason) {
      closed = true;
      try {
        ctx.closeSession(code, reason);
      } catch (RuntimeException e) {
        log.debug("closing WebSocket client {} failed: {}", ctx.sessionId(), e.toString());
      }
      stopAll();
      peer.close(); // again in onClose; counted once
    }

    /** Ends every subscription; not synchronized, since a subscriber thread may call it while sending. */
    void stopAll() {
      closed = true;
      for (UUID id : List.copyOf(jobs.keySet())) {
        JobSink sink = jobs.remove(id);
        if (sink != null) {
          sink.end();
        }
      }
      StreamSink sink = eventStream;
      eventStream = null;
      if (sink != null) {
        sink.end();
      }
    }

    /** A subscription on the hub; {@link #end()} stops it on purpose, any other end closes the connection. */
    private abstract class Sub implements EventSink {
      volatile Runnable stop = () -> {};
      volatile boolean ended;

      void end() {
        ended = true;
        stop.run();
      }

      @Override
      public void ping() {
        // WebSocket pings are automatic (enableAutomaticPings).
      }

      @Override
      public boolean wantsPings() {
        return false;
      }

      @Override
      public boolean isClosed() {
        return closed || ended || !ctx.session.isOpen();
      }

      @Override
      public void close() {
        // The hub ended the subscription by itself (it fell behind, or the hub closes): close the
        // connection, so the client reconnects and resubscribes from snapshots instead of silently
        // missing updates.
        if (!ended && !closed) {
          if (hub.isClosed()) {
            Connection.this.close(1001, "the server is stopping; reconnect and subscribe again");
          } else {
            Connection.this.close(1008, "fell behind; reconnect and subscribe again");
          }
        }
      }
    }

    /** One followed job: every event about it becomes the whole job, read after the event. */
    private final class JobSink extends Sub {
      private final UUID id;

      JobSink(UUID id) {
        this.id = id;
      }

      @Override
      public void send(String event, Object data, String eventId) {
        switch (event) {
          case "snapshot" -> Connection.this.send(new JobMessage(id, (JobsApi.JobView) data));
          case "state", "progress" -> Connection.this.send(new JobMessage(id, read(id)));
          default -> {} // resync: a snapshot follows
        }
      }
    }

    /** The {@code events} subscription: the {@code /events} stream's events, one message each. */
    private final class StreamSink extends Sub {
      @Override
      public void send(String event, Object data, String eventId) {
        Connection.this.send(new EventMessage(event, data, eventId));
      }
    }
  }
}
