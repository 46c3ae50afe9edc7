/**
 * The {@code pgjobs} command line: {@link io.pgjobs.cli.PgJobsCommand} (root) and one class per
 * subcommand; each writes to the root's injected {@link java.io.PrintWriter}s. {@link io.pgjobs.cli.Main}
 * runs it on the process's streams.
 */
package io.pgjobs.cli;
