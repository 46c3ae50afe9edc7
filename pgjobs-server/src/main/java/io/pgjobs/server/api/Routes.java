package io.pgjobs.server.api;

import io.javalin.config.RoutesConfig;
import io.javalin.http.Context;
import io.javalin.http.sse.SseClient;
import io.pgjobs.SqlDeadline;
import io.pgjobs.server.problem.ApiProblem;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.slf4j.MDC;
import tools.jackson.databind.json.JsonMapper;

/**
 * Registers the API's routes. Each handler runs on a virtual thread of its own under the request
 * timeout: past it the request thread answers 504 and interrupts the handler, whose late reply is
 * dropped, and the handler's SQL statements carry the same timeout ({@link SqlDeadline}), so
 * PostgreSQL cancels a statement still running then. Event streams are exempt from the timeout.
 */
public final class Routes {
  private final RoutesConfig routes;
  private final Duration timeout;
  private final ExecutorService handlers;
  private final JsonMapper json;

  /**
   * @param routes Javalin's route configuration
   * @param timeout the request timeout
   * @param handlers where handlers run (virtual threads)
   * @param json the snake_case mapper for JSON replies
   */
  public Routes(RoutesConfig routes, Duration timeout, ExecutorService handlers, JsonMapper json) {
    this.routes = routes;
    this.timeout = timeout;
    this.handlers = handlers;
    this.json = json;
  }

  /** The mapper replies are written with. */
  public JsonMapper json() {
    return json;
  }

  /** A GET route. */
  public void get(String path, ApiHandler handler) {
    routes.get(path, ctx -> run(ctx, handler));
  }

  /** A POST route. */
  public void post(String path, ApiHandler handler) {
    routes.post(path, ctx -> run(ctx, handler));
  }

  /** A PUT route (replacing a resource: {@code PUT /recurring/{name}}). */
  public void put(String path, ApiHandler handler) {
    routes.put(path, ctx -> run(ctx, handler));
  }

  /** A DELETE route ({@code DELETE /recurring/{name}}). */
  public void delete(String path, ApiHandler handler) {
    routes.delete(path, ctx -> run(ctx, handler));
  }

  /**
   * A Server-Sent Events route. {@code Accept: text/event-stream} gets the stream (Javalin's SSE
   * handler needs that header). A browser opening the URL (its Accept names {@code text/html} first) gets a
   * small page that subscribes to the same URL and shows the events as they come. Anything else gets
   * 406, since Javalin would otherwise answer it with an empty 200.
   */
  public void sse(String path, Consumer<Context> check, Consumer<SseClient> client) {
    io.javalin.http.sse.SseHandler sse = new io.javalin.http.sse.SseHandler(0, client);
    routes.get(path, ctx -> {
      String accept = ctx.header("Accept") == null ? "" : ctx.header("Accept");
      if (!accept.contains("text/event-stream") && accept.contains("text/html")) {
        check.accept(ctx);
        ctx.contentType("text/html; charset=utf-8");
        ctx.result(eventsPage(path));
        return;
      }
      if (!accept.contains("text/event-stream")) {
        throw ApiProblem.notAcceptable(
            path + " is a Server-Sent Events stream: send Accept: text/event-stream"
                + " (or open it in a browser)");
      }
      check.accept(ctx);
      sse.handle(ctx);
    });
  }

  /** The page a browser gets for an event stream: it opens the stream and lists the events. */
  private static String eventsPage(String path) {
    return """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>pgjobs events</title>
        <link rel="icon" href="favicon.svg" type="image/svg+xml">
        <style>body{font:14px system-ui,sans-serif;margin:1.5em}pre{white-space:pre-wrap;font-size:12px}</style>
        </head><body>
        <h1>pgjobs events</h1>
        <p>PATH is a <a href="https://html.spec.whatwg.org/multipage/server-sent-events.html">Server-Sent Events</a>
        stream for programs (<code>curl -N -H 'Accept: text/event-stream' URL</code>, or <code>EventSource</code>).
        This page subscribes to it and shows each event as it arrives; the dashboard is at <a href="./">./</a>.</p>
        <p id="status">connecting…</p>
        <pre id="events"></pre>
        <script>
        const out = document.getElementById('events'), status = document.getElementById('status');
        const source = new EventSource(location.href);
        source.onopen = () => { status.textContent = 'connected'; };
        source.onerror = () => { status.textContent = 'disconnected; retrying…'; };
        for (const name of ['snapshot', 'state', 'progress', 'resync']) {
          source.addEventListener(name, e => {
            out.textContent = new Date().toISOString() + ' ' + name + ' ' + e.data + '\\n' + out.textContent.slice(0, 200000);
          });
        }
        </script>
        </body></html>
        """.replace("PATH", path);
  }

  private void run(Context ctx, ApiHandler handler) throws Exception {
    Map<String, String> mdc = MDC.getCopyOfContextMap();
    Future<Reply> future = handlers.submit(() -> {
      if (mdc != null) {
        MDC.setContextMap(mdc);
      }
      try {
        // The handler's statements are cancelled in PostgreSQL once the request has timed out.
        return SqlDeadline.call(timeout, () -> handler.handle(ctx));
      } finally {
        MDC.clear();
      }
    });
    Reply reply;
    try {
      reply = future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      future.cancel(true);
      throw ApiProblem.timeout(timeout.toMillis());
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cancelledByDeadline(cause)) {
        throw ApiProblem.timeout(timeout.toMillis());
      }
      if (cause instanceof Exception ex) {
        throw ex;
      }
      throw (Error) cause;
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw e;
    }
    apply(ctx, reply);
  }

  /** A statement PostgreSQL cancelled (SQLSTATE 57014): here, the request's statement deadline passed. */
  private static boolean cancelledByDeadline(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof java.sql.SQLException sql && "57014".equals(sql.getSQLState())) {
        return true;
      }
    }
    return false;
  }

  private void apply(Context ctx, Reply reply) {
    ctx.status(reply.status());
    reply.headers().forEach(ctx::header);
    Object body = reply.body();
    if (body == null) {
      return;
    }
    if (body instanceof Reply.Text text) {
      ctx.contentType(text.contentType());
      ctx.result(text.text().getBytes(StandardCharsets.UTF_8));
    } else {
      // JSON is UTF-8 by definition (RFC 8259); write bytes so no default charset gets in the way.
      ctx.contentType("application/json");
      ctx.result(json.writeValueAsBytes(body));
    }
  }
}
