/**
 * The pgjobs HTTP API server. Public: {@link io.pgjobs.server.ApiServer} (builder, start, port, close)
 * and its {@link io.pgjobs.server.ApiServer.Scope}. Everything under this package is internal to the
 * server.
 */
package io.pgjobs.server;
