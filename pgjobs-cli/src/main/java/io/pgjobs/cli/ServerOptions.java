package io.pgjobs.cli;

import io.pgjobs.cli.config.Settings;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/** The flags of the HTTP API ({@code serve}, {@code demo}); validated by {@link Settings}. */
final class ServerOptions {
  @Option(names = "--host", paramLabel = "<host>", descriptionKey = Settings.HOST)
  String host;

  @Option(names = "--port", paramLabel = "<port>", descriptionKey = Settings.PORT)
  String port;

  @Option(names = "--api-tokens", paramLabel = "<token,...>", descriptionKey = Settings.API_TOKENS)
  String apiTokens;

  @Option(
      names = "--allowed-origins",
      paramLabel = "<origin,...>",
      descriptionKey = Settings.ALLOWED_ORIGINS)
  String allowedOrigins;

  @Option(
      names = "--allowed-hosts",
      paramLabel = "<host,...>",
      descriptionKey = Settings.ALLOWED_HOSTS)
  String allowedHosts;

  @Option(
      names = "--insecure",
      description =
          "Allow listening on a non-loopback --host without --api-tokens: anyone who can reach the port"
              + " may then enqueue, cancel and retry jobs.")
  boolean insecure;

  /** The flags given, by setting name (null when not given). */
  Map<String, String> flags() {
    Map<String, String> flags = new LinkedHashMap<>();
    flags.put(Settings.HOST, host);
    flags.put(Settings.PORT, port);
    flags.put(Settings.API_TOKENS, apiTokens);
    flags.put(Settings.ALLOWED_ORIGINS, allowedOrigins);
    flags.put(Settings.ALLOWED_HOSTS, allowedHosts);
    return flags;
  }
}
