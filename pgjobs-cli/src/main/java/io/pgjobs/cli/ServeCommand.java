package io.pgjobs.cli;

import io.pgjobs.cli.config.Settings;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code pgjobs serve}: the HTTP API, OpenAPI document, dashboard and {@code /metrics}. Hidden until the
 * {@code pgjobs-server} module is part of the build.
 *
 * <p>To wire it: depend on {@code pgjobs-server}, open the database as {@link WorkCommand} does
 * ({@code Database.open(settings, true, JobKinds.types(settings))}, then {@code migrate()}), and start
 * {@code ApiServer.builder(db.client()).host(settings.host()).port(settings.port())
 * .tokens(settings.apiTokens()).meterRegistry(registry).build().start()}; then wait as {@code work} does
 * (the JVM's shutdown hook stops the server).
 */
@Command(
    name = "serve",
    hidden = true,
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = "Run the HTTP API (needs the pgjobs-server module).")
final class ServeCommand extends Subcommand {
  @Mixin ServerOptions server = new ServerOptions();

  @Override
  public Integer call() {
    Map<String, String> flags = new LinkedHashMap<>(server.flags());
    settings(flags); // validates --host, --port, --api-tokens and their variables now
    throw new CommandFailedException(
        "'pgjobs serve' is not available in this build: the HTTP server module (pgjobs-server) is not part of it yet");
  }
}
