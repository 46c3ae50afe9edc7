package io.pgjobs.server.api;

import io.javalin.http.Context;

/**
 * A request handler that returns its {@link Reply} instead of writing to the context, so the server
 * can apply a request timeout: the reply of a handler that is too late is dropped, never half written.
 */
@FunctionalInterface
public interface ApiHandler {
  /** Reads the request from {@code ctx} (never writes to it) and returns the reply. */
  Reply handle(Context ctx) throws Exception;
}
