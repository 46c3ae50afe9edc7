/**
 * INTERNAL. Problem documents (RFC 9457): {@link io.pgjobs.server.problem.ApiProblem} raised by
 * handlers, and {@link io.pgjobs.server.problem.ProblemMapper}, the single place where any exception
 * becomes an {@code application/problem+json} response (internal errors are logged, never echoed).
 */
package io.pgjobs.server.problem;
