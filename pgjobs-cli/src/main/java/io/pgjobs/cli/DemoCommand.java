package io.pgjobs.cli;

import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code pgjobs demo}: the HTTP API plus a worker running the demo kinds in one process. Hidden until
 * the {@code pgjobs-server} module is part of the build.
 *
 * <p>To wire it: as {@link ServeCommand}, plus a worker built as {@link WorkCommand} builds it
 * ({@code JobKinds.registrations(settings)} contains {@code DemoJobs.registrations(settings)}) on the
 * same pool, and the embedded PostgreSQL fallback of DESIGN.md when no database answers.
 */
@Command(
    name = "demo",
    hidden = true,
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = "Run the HTTP API and a worker with the demo job kinds (needs the pgjobs-server module).")
final class DemoCommand extends Subcommand {
  @Mixin WorkerOptions worker = new WorkerOptions();
  @Mixin ServerOptions server = new ServerOptions();

  @Override
  public Integer call() {
    Map<String, String> flags = new LinkedHashMap<>(worker.flags());
    flags.putAll(server.flags());
    settings(flags);
    throw new CommandFailedException(
        "'pgjobs demo' is not available in this build: the HTTP server module (pgjobs-server) is not part of it yet");
  }
}
