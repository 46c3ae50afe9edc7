package io.pgjobs.server.api;

import io.javalin.config.RoutesConfig;
import io.javalin.http.Context;
import io.javalin.http.sse.SseClient;
import io.pgjobs.server.problem.ApiProblem;
import io.pgjobs.store.StatementDeadline;
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
 * dropped, and the handler's SQL statements carry the same timeout ({@link StatementDeadline}), so
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

  /**
   * A Server-Sent Events route. A request without {@code Accept: text/event-stream} gets 406, since
   * Javalin would otherwise answer it with an empty 200.
   */
  public void sse(String path, Consumer<Context> check, Consumer<SseClient> client) {
    io.javalin.http.sse.SseHandler sse = new io.javalin.http.sse.SseHandler(0, client);
    routes.get(path, ctx -> {
      String accept = ctx.header("Accept");
      if (accept == null || !accept.contains("text/event-stream")) {
        throw ApiProblem.notAcceptable(path + " is a Server-Sent Events stream: send Accept: text/event-stream");
      }
      check.accept(ctx);
      sse.handle(ctx);
    });
  }

  private void run(Context ctx, ApiHandler handler) throws Exception {
    Map<String, String> mdc = MDC.getCopyOfContextMap();
    Future<Reply> future = handlers.submit(() -> {
      if (mdc != null) {
        MDC.setContextMap(mdc);
      }
      try {
        // The handler's statements are cancelled in PostgreSQL once the request has timed out.
        return StatementDeadline.call(timeout, () -> handler.handle(ctx));
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
