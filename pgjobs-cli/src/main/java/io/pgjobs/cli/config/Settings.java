package io.pgjobs.cli.config;

import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.config.DurationText;
import io.pgjobs.config.PgJobsSettings;
import io.pgjobs.config.Setting;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Every setting of the {@code pgjobs} command, where it comes from, and its validation. One immutable
 * instance per command run.
 *
 * <p>Precedence, highest first: a command-line flag, then the environment, then the config file
 * ({@code --config FILE} or {@code PGJOBS_CONFIG}; Java properties with the setting names below as
 * keys), then the default. An empty environment variable or file entry counts as unset. Every value is
 * validated; an invalid one fails with {@link InvalidSettingException} naming where it came from, the
 * value, what was wrong and what is allowed.
 *
 * <p>The settings pgjobs' Java builders share (schema, concurrency, durations, the API's host and port)
 * are declared once in {@link PgJobsSettings}: their name, flag, environment variable, default, range and
 * description come from there. Those only the command has (the database URL, logging, the demo kinds'
 * SMTP and webhook settings, the API's tokens) are declared here. The table of every setting,
 * {@link #markdownTable()}, is in the documentation; a test keeps the two equal.
 */
public final class Settings {

  /** Where a value came from. */
  public enum Source {
    /** A command-line flag. */
    FLAG,
    /** An environment variable. */
    ENVIRONMENT,
    /** The config file. */
    CONFIG_FILE,
    /** The built-in default. */
    DEFAULT
  }

  /** Least severe pgjobs log events written ({@code debug} adds a line per job start and finish). */
  public enum LogLevel {
    /** Errors only. */
    ERROR,
    /** Warnings and errors. */
    WARN,
    /** The default: lifecycle events, retries, warnings and errors. */
    INFO,
    /** Also one line per job start and finish, claims and HTTP requests. */
    DEBUG
  }

  /** How logs are written. */
  public enum LogFormat {
    /** One human-readable line per event. */
    PLAIN,
    /** One JSON object per line (logstash-logback-encoder), MDC fields included. */
    JSON
  }

  /**
   * One setting.
   *
   * @param name the name, also the config file key
   * @param flag the command-line flag
   * @param environment the environment variables, highest precedence first
   * @param defaultText the default as text, or null for none
   * @param defaultDescription how the default reads in documentation
   * @param allowed what values are allowed, for messages and documentation
   * @param description what the setting does
   * @param parser turns text into the value, or throws {@link IllegalArgumentException} saying what
   *     was wrong
   */
  public record Definition(
      String name,
      String flag,
      List<String> environment,
      String defaultText,
      String defaultDescription,
      String allowed,
      String description,
      Function<String, Object> parser) {}

  /**
   * One resolved value.
   *
   * @param value the parsed value, or null when unset with no default
   * @param text the text it was parsed from, or null
   * @param source where it came from
   * @param origin the flag, environment variable or file it came from ({@code default} for defaults)
   */
  public record Value(Object value, String text, Source source, String origin) {}

  public static final String CONFIG = "config";
  public static final String DATABASE_URL = "database_url";
  public static final String LISTEN_DATABASE_URL = "listen_database_url";
  /** The value of {@link #LISTEN_DATABASE_URL} that turns LISTEN off: polling only. */
  public static final String LISTEN_OFF = "off";

  public static final String SCHEMA = "schema";
  public static final String POOL_SIZE = "pool_size";
  public static final String LOG_FORMAT = "log_format";
  public static final String LOG_LEVEL = "log_level";
  public static final String QUEUES = "queues";
  public static final String CAPABILITIES = "capabilities";
  public static final String CONCURRENCY = "concurrency";
  public static final String CLAIM_BATCH = "claim_batch";
  public static final String POLL_INTERVAL = "poll_interval";
  public static final String SHUTDOWN_GRACE = "shutdown_grace";
  public static final String STALE_THRESHOLD = "stale_threshold";
  public static final String WORKER_DEAD_AFTER = "worker_dead_after";
  public static final String RETENTION = "retention";
  public static final String SMTP_HOST = "smtp_host";
  public static final String SMTP_PORT = "smtp_port";
  public static final String SMTP_FROM = "smtp_from";
  public static final String WEBHOOK_TIMEOUT = "webhook_timeout";
  public static final String WORKER_METRICS_BIND = "worker_metrics_bind";
  public static final String HOST = "host";
  public static final String PORT = "port";
  public static final String API_TOKENS = "api_tokens";
  public static final String ALLOWED_ORIGINS = "allowed_origins";
  public static final String ALLOWED_HOSTS = "allowed_hosts";

  private static final Pattern SCHEMA_NAME = Pattern.compile("[a-z_][a-z0-9_]{0,50}");
  /** As {@code JobType.requireCapability}: the jobs table's CHECK says the same. */
  private static final Pattern CAPABILITY_NAME = Pattern.compile("[A-Za-z0-9_.\\-]{1,64}");

  private static final Pattern QUEUE_NAME = Pattern.compile("[A-Za-z0-9_.:\\-/]{1,255}");
  private static final Pattern HOST_NAME = Pattern.compile(
      "[A-Za-z0-9]([A-Za-z0-9\\-.]{0,252}[A-Za-z0-9])?|\\[[0-9A-Fa-f:.]+]|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*");
  private static final Pattern EMAIL =
      Pattern.compile("[^@\\s<>,;\"]+@[A-Za-z0-9]([A-Za-z0-9\\-.]*[A-Za-z0-9])?");
  private static final Pattern TOKEN = Pattern.compile("[\\x21-\\x2b\\x2d-\\x7e]{16,256}");
  /** As {@code ApiServer.Builder}'s checks of its allowed origins and hosts. */
  private static final Pattern ORIGIN =
      Pattern.compile("https?://[A-Za-z0-9.\\-\\[\\]:]+(:\\d{1,5})?");

  private static final Pattern ALLOWED_HOST =
      Pattern.compile("(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9\\-.]{0,251}[A-Za-z0-9])?");

  /** Every setting, in documentation order. */
  public static final List<Definition> DEFINITIONS = List.of(
      new Definition(
          CONFIG,
          "--config",
          List.of("PGJOBS_CONFIG"),
          null,
          "none",
          "a readable Java properties file",
          "a file with more settings (keys are the setting names)",
          text -> Path.of(text)),
      new Definition(
          DATABASE_URL,
          "--database-url",
          List.of("DATABASE_URL", "PGJOBS_DATABASE_URL"),
          DatabaseUrl.DEFAULT,
          "`" + DatabaseUrl.DEFAULT + "`",
          "`postgres://user:password@host:port/db`, `postgresql://…` or `jdbc:postgresql://…`; in the user"
              + " name and password write `/`, `?`, `#` and `%` as `%2F`, `%3F`, `%23` and `%25` (`@` and `:`"
              + " may stay: the last `@` before the host ends the password); for a primary with standbys list"
              + " every host, `postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write` (docs/operations.md,"
              + " \"High availability\")",
          "the PostgreSQL database",
          DatabaseUrl::parse),
      new Definition(
          LISTEN_DATABASE_URL,
          "--listen-database-url",
          List.of("PGJOBS_LISTEN_DATABASE_URL"),
          null,
          "none (LISTEN through `database_url`)",
          "a URL as for `database_url`, or `off`",
          "where the one LISTEN connection of `work`, `serve` and `demo` goes: behind PgBouncer in transaction"
              + " mode, a direct connection to PostgreSQL (LISTEN cannot work through it); `off`: workers poll"
              + " only (every `poll_interval`) and the API's live event stream stays silent",
          text -> text.equalsIgnoreCase(LISTEN_OFF) ? LISTEN_OFF : DatabaseUrl.parse(text)),
      text(
          PgJobsSettings.SCHEMA,
          "1–51 of lowercase letters, digits and _, not starting with a digit",
          Settings::parseSchema),
      new Definition(
          POOL_SIZE,
          "--pool-size",
          List.of("PGJOBS_POOL_SIZE"),
          "20",
          "20",
          "an integer from 2 to 1000",
          "most database connections of this process",
          text -> parseInt(text, 2, 1000)),
      new Definition(
          LOG_FORMAT,
          "--log-format",
          List.of("PGJOBS_LOG_FORMAT", "LOG_FORMAT"),
          "plain",
          "`plain`",
          "`plain` or `json`",
          "log lines as text or as JSON objects (to stderr)",
          Settings::parseLogFormat),
      new Definition(
          LOG_LEVEL,
          "--log-level",
          List.of("PGJOBS_LOG_LEVEL"),
          "info",
          "`info`",
          "`error`, `warn`, `info` or `debug`",
          "least severe log events of pgjobs written; `debug` adds one line per job start and finish"
              + " (libraries log warnings and errors only)",
          Settings::parseLogLevel),
      new Definition(
          QUEUES,
          "--queues",
          List.of("PGJOBS_QUEUES"),
          null,
          "the queues of the registered job types",
          "comma-separated `queue` or `queue=concurrency` (queue: 1–255 of letters, digits, `_ . : - /`;"
              + " concurrency " + PgJobsSettings.CONCURRENCY.allowedText() + ")",
          "queues `work` serves; a queue without `=N` gets `concurrency`",
          Settings::parseQueues),
      new Definition(
          CAPABILITIES,
          "--capabilities",
          List.of("PGJOBS_CAPABILITIES"),
          null,
          "none",
          "comma-separated names, each 1–64 of letters, digits and `_ . -`",
          "capabilities this worker has (`media,gpu`): it also runs jobs that need one of them, those first;"
              + " without any it runs only jobs that need none",
          Settings::parseCapabilities),
      integer(PgJobsSettings.CONCURRENCY, ""),
      integer(PgJobsSettings.CLAIM_BATCH, ""),
      duration(PgJobsSettings.POLL_INTERVAL),
      duration(PgJobsSettings.SHUTDOWN_GRACE),
      duration(PgJobsSettings.STALE_THRESHOLD),
      duration(PgJobsSettings.WORKER_DEAD_AFTER),
      duration(PgJobsSettings.RETENTION),
      new Definition(
          SMTP_HOST,
          "--smtp-host",
          List.of("PGJOBS_SMTP_HOST"),
          "localhost",
          "`localhost`",
          "a host name or IP address",
          "SMTP server of the `send_email` demo kind (`work`)",
          Settings::parseHost),
      new Definition(
          SMTP_PORT,
          "--smtp-port",
          List.of("PGJOBS_SMTP_PORT"),
          "1025",
          "1025",
          "an integer from 1 to 65535",
          "port of that SMTP server (1025: where `pgjobs demo` runs its own, as MailHog and Mailpit do)",
          text -> parseInt(text, 1, 65_535)),
      new Definition(
          SMTP_FROM,
          "--smtp-from",
          List.of("PGJOBS_SMTP_FROM"),
          "pgjobs@localhost",
          "`pgjobs@localhost`",
          "an e-mail address (`name@host`)",
          "sender address of `send_email`",
          Settings::parseEmail),
      new Definition(
          WEBHOOK_TIMEOUT,
          "--webhook-timeout",
          List.of("PGJOBS_WEBHOOK_TIMEOUT"),
          "10s",
          "`10s`",
          durationAllowed("100ms", "10m"),
          "connect and response timeout of `webhook_delivery`",
          text ->
              parseDuration(text, Duration.ofMillis(100), Duration.ofMinutes(10), "100ms", "10m")),
      new Definition(
          WORKER_METRICS_BIND,
          "--metrics-bind",
          List.of("PGJOBS_WORKER_METRICS_BIND", "WORKER_METRICS_BIND_ADDR"),
          "127.0.0.1:9091",
          "`127.0.0.1:9091`",
          "`host:port` (port 0–65535, 0: any free port) or `off`",
          "where `work` serves its own `/metrics` (Prometheus) and `/health/live`, `/health/ready`; this"
              + " machine only by default, `0.0.0.0:9091` for every interface (a scraper on another host)",
          Settings::parseBind),
      text(PgJobsSettings.HOST, PgJobsSettings.HOST.allowed(), Settings::parseHost),
      integer(PgJobsSettings.PORT, " (0: any free port)"),
      new Definition(
          API_TOKENS,
          "--api-tokens",
          List.of("PGJOBS_API_TOKENS"),
          null,
          "none (no authentication)",
          "comma-separated tokens, each 16–256 visible ASCII characters other than `,`",
          "bearer tokens the HTTP API accepts (`serve`, `demo`)",
          Settings::parseTokens),
      new Definition(
          ALLOWED_ORIGINS,
          "--allowed-origins",
          List.of("PGJOBS_ALLOWED_ORIGINS"),
          null,
          "none (the API's own pages only)",
          "comma-separated origins `scheme://host[:port]` (http or https, no path), or `*` (any)",
          "web pages besides the API's own that may change jobs, queues and schedules through it (`serve`,"
              + " `demo`); a POST from any other page is refused with 403 (cross-site requests)",
          Settings::parseOrigins),
      new Definition(
          ALLOWED_HOSTS,
          "--allowed-hosts",
          List.of("PGJOBS_ALLOWED_HOSTS"),
          null,
          "none (`localhost`, `*.localhost` and IP addresses only)",
          "comma-separated host names (`jobs.example.com`, `*.example.com` for its subdomains, no port), or"
              + " `*` (any)",
          "names the HTTP API answers to without `api_tokens`, besides `localhost`, `*.localhost` and IP"
              + " addresses (`serve`, `demo`); any other `Host` gets 421 (DNS rebinding)",
          Settings::parseAllowedHosts));

  /** A setting of the catalogue whose values are text, checked by {@code parser}. */
  private static Definition text(
      Setting<String> setting, String allowed, Function<String, Object> parser) {
    return fromCatalogue(setting, allowed, parser);
  }

  /** An integer setting of the catalogue; {@code note} follows its range in the documentation. */
  private static Definition integer(Setting<Integer> setting, String note) {
    int min = setting.min();
    int max = setting.max();
    return fromCatalogue(
        setting, "an integer from " + min + " to " + max + note, text -> parseInt(text, min, max));
  }

  /** A duration setting of the catalogue, its range written as the catalogue writes it. */
  private static Definition duration(Setting<Duration> setting) {
    return fromCatalogue(
        setting,
        durationAllowed(setting.minText(), setting.maxText()),
        text -> parseDuration(
            text, setting.min(), setting.max(), setting.minText(), setting.maxText()));
  }

  private static Definition fromCatalogue(
      Setting<?> setting, String allowed, Function<String, Object> parser) {
    if (!setting.cli()) {
      throw new IllegalStateException(
          setting.key() + " is not a setting of the command in PgJobsSettings");
    }
    return new Definition(
        setting.key(),
        setting.flag(),
        List.of(setting.environmentVariable()),
        setting.defaultText(),
        PgJobsSettings.markdownDefault(setting),
        allowed,
        setting.description(),
        parser);
  }

  private static final Map<String, Definition> BY_NAME = DEFINITIONS.stream()
      .collect(Collectors.toMap(Definition::name, d -> d, (a, b) -> a, LinkedHashMap::new));

  private final Map<String, Value> values;

  private Settings(Map<String, Value> values) {
    this.values = Collections.unmodifiableMap(values);
  }

  /**
   * Resolves every setting.
   *
   * @param flags values given as command-line flags, by setting name (null values are ignored)
   * @param environment the process environment
   * @throws InvalidSettingException naming the offending flag, variable or file entry and what is allowed
   */
  public static Settings resolve(Map<String, String> flags, Map<String, String> environment) {
    Map<String, String> given = new LinkedHashMap<>();
    flags.forEach((name, text) -> {
      if (!BY_NAME.containsKey(name)) {
        throw new IllegalArgumentException("no setting named " + name);
      }
      if (text != null) {
        given.put(name, text);
      }
    });
    Map<String, Value> values = new LinkedHashMap<>();
    // The config file is itself a setting (flag or environment), read first.
    Value config = fromFlagOrEnvironment(BY_NAME.get(CONFIG), given, environment);
    values.put(CONFIG, config != null ? config : new Value(null, null, Source.DEFAULT, "default"));
    Map<String, String> file = config == null ? Map.of() : readFile(config);
    String fileName = config == null ? null : config.text();
    for (Definition def : DEFINITIONS) {
      if (def.name().equals(CONFIG)) {
        continue;
      }
      Value value = fromFlagOrEnvironment(def, given, environment);
      if (value == null && file.containsKey(def.name())) {
        value = parse(def, file.get(def.name()), Source.CONFIG_FILE, "config file " + fileName);
      }
      if (value == null) {
        value = def.defaultText() == null
            ? new Value(null, null, Source.DEFAULT, "default")
            : new Value(
                def.parser().apply(def.defaultText()),
                def.defaultText(),
                Source.DEFAULT,
                "default");
      }
      values.put(def.name(), value);
    }
    return new Settings(values);
  }

  /** Settings from the defaults, overridden by {@code values} (setting name to text), as if given as flags. */
  public static Settings of(Map<String, String> values) {
    return resolve(values, Map.of());
  }

  /** The definition of a setting. */
  public static Definition definition(String name) {
    Definition def = BY_NAME.get(name);
    if (def == null) {
      throw new IllegalArgumentException("no setting named " + name);
    }
    return def;
  }

  private static Value fromFlagOrEnvironment(
      Definition def, Map<String, String> flags, Map<String, String> env) {
    String flag = flags.get(def.name());
    if (flag != null) {
      if (flag.isBlank()) {
        throw new InvalidSettingException(
            def.name(),
            Source.FLAG,
            "option " + def.flag() + " is empty; allowed: " + plain(def.allowed()));
      }
      return parse(def, flag, Source.FLAG, def.flag());
    }
    for (String variable : def.environment()) {
      String text = env.get(variable);
      if (text != null && !text.isBlank()) {
        return parse(def, text, Source.ENVIRONMENT, variable);
      }
    }
    return null;
  }

  private static Value parse(Definition def, String text, Source source, String origin) {
    String trimmed = text.strip();
    try {
      return new Value(def.parser().apply(trimmed), trimmed, source, origin);
    } catch (IllegalArgumentException e) {
      String shown = def.name().equals(DATABASE_URL)
              || def.name().equals(LISTEN_DATABASE_URL)
              || def.name().equals(API_TOKENS)
          ? "(hidden)"
          : "'" + trimmed + "'";
      String where = switch (source) {
        case FLAG -> "invalid value " + shown + " for option " + origin;
        case ENVIRONMENT -> "invalid value " + shown + " in environment variable " + origin;
        case CONFIG_FILE -> "invalid value " + shown + " for " + def.name() + " in " + origin;
        case DEFAULT -> "invalid default " + shown + " for " + def.name();
      };
      throw new InvalidSettingException(
          def.name(),
          source,
          where + " (setting " + def.name() + "): " + reason(e) + "; allowed: "
              + plain(def.allowed()),
          e);
    }
  }

  private static String reason(IllegalArgumentException e) {
    String message = e.getMessage() == null ? "not allowed" : e.getMessage();
    int allowed = message.indexOf("; allowed:");
    return allowed < 0 ? message : message.substring(0, allowed);
  }

  private static Map<String, String> readFile(Value config) {
    Path path = (Path) config.value();
    Properties properties = new Properties();
    try (Reader reader = Files.newBufferedReader(path)) {
      properties.load(reader);
    } catch (IOException | IllegalArgumentException e) {
      throw new InvalidSettingException(
          CONFIG,
          config.source(),
          "cannot read config file " + path + " (from " + config.origin() + "): " + describe(e)
              + "; allowed: a readable Java properties file with keys "
              + String.join(", ", fileKeys()));
    }
    Map<String, String> entries = new LinkedHashMap<>();
    for (String key : new TreeSet<>(properties.stringPropertyNames())) {
      String name = key.strip();
      if (!BY_NAME.containsKey(name) || name.equals(CONFIG)) {
        throw new InvalidSettingException(
            name,
            Source.CONFIG_FILE,
            "unknown setting '" + key + "' in config file " + path + "; allowed keys: "
                + String.join(", ", fileKeys()));
      }
      String text = properties.getProperty(key);
      if (text != null && !text.isBlank()) {
        entries.put(name, text);
      }
    }
    return entries;
  }

  private static String describe(Exception e) {
    if (e instanceof java.nio.file.NoSuchFileException) {
      return "no such file";
    }
    if (e instanceof java.nio.file.AccessDeniedException) {
      return "permission denied";
    }
    return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
  }

  private static String plain(String markdown) {
    return markdown.replace("`", "");
  }

  private static List<String> fileKeys() {
    return DEFINITIONS.stream()
        .map(Definition::name)
        .filter(n -> !n.equals(CONFIG))
        .toList();
  }

  // ---------------------------------------------------------------- typed access

  /** A resolved value with its source. */
  public Value value(String name) {
    definition(name);
    return values.get(name);
  }

  /** Every resolved value, in documentation order. */
  public Map<String, Value> values() {
    return values;
  }

  /** The config file, or null. */
  public Path configFile() {
    return (Path) values.get(CONFIG).value();
  }

  /** The database. */
  public DatabaseUrl databaseUrl() {
    return (DatabaseUrl) values.get(DATABASE_URL).value();
  }

  /** The direct database for LISTEN, when {@code listen_database_url} is a URL. */
  public Optional<DatabaseUrl> listenDatabaseUrl() {
    return values.get(LISTEN_DATABASE_URL).value() instanceof DatabaseUrl url
        ? Optional.of(url)
        : Optional.empty();
  }

  /** True when {@code listen_database_url} is {@code off}: no LISTEN at all, workers poll only. */
  public boolean listenOff() {
    return LISTEN_OFF.equals(values.get(LISTEN_DATABASE_URL).value());
  }

  /** The pgjobs schema. */
  public String schema() {
    return (String) values.get(SCHEMA).value();
  }

  /** Most connections in this process's pool. */
  public int poolSize() {
    return (Integer) values.get(POOL_SIZE).value();
  }

  /** How logs are written. */
  public LogFormat logFormat() {
    return (LogFormat) values.get(LOG_FORMAT).value();
  }

  /** The log level of pgjobs' own loggers. */
  public LogLevel logLevel() {
    return (LogLevel) values.get(LOG_LEVEL).value();
  }

  /**
   * The queues to serve with their concurrency; empty when none were named (then the queues of the
   * registered types are served, each with {@link #concurrency()}).
   */
  public Map<String, Integer> queues() {
    @SuppressWarnings("unchecked")
    Map<String, Integer> named = (Map<String, Integer>) values.get(QUEUES).value();
    if (named == null) {
      return Map.of();
    }
    Map<String, Integer> queues = new LinkedHashMap<>();
    named.forEach((queue, concurrency) ->
        queues.put(queue, concurrency != null ? concurrency : concurrency()));
    return Collections.unmodifiableMap(queues);
  }

  /** The capabilities the worker declares; empty when none were given. */
  @SuppressWarnings("unchecked")
  public List<String> capabilities() {
    Object capabilities = values.get(CAPABILITIES).value();
    return capabilities == null ? List.of() : (List<String>) capabilities;
  }

  /** Jobs run at once per queue. */
  public int concurrency() {
    return (Integer) values.get(CONCURRENCY).value();
  }

  /** Most jobs claimed per statement. */
  public int claimBatch() {
    return (Integer) values.get(CLAIM_BATCH).value();
  }

  /** Poll interval of an idle queue. */
  public Duration pollInterval() {
    return (Duration) values.get(POLL_INTERVAL).value();
  }

  /** Time running jobs get on shutdown. */
  public Duration shutdownGrace() {
    return (Duration) values.get(SHUTDOWN_GRACE).value();
  }

  /** Heartbeat age after which a running job is rescued. */
  public Duration staleThreshold() {
    return (Duration) values.get(STALE_THRESHOLD).value();
  }

  /** Where {@code work} serves its metrics and health, or empty when {@code off}. */
  @SuppressWarnings("unchecked")
  public Optional<Bind> workerMetricsBind() {
    return (Optional<Bind>) values.get(WORKER_METRICS_BIND).value();
  }

  /** A worker whose heartbeat row is this old is presumed dead. */
  public Duration workerDeadAfter() {
    return (Duration) values.get(WORKER_DEAD_AFTER).value();
  }

  /** How long finished jobs are kept. */
  public Duration retention() {
    return (Duration) values.get(RETENTION).value();
  }

  /** SMTP server host. */
  public String smtpHost() {
    return (String) values.get(SMTP_HOST).value();
  }

  /** SMTP server port. */
  public int smtpPort() {
    return (Integer) values.get(SMTP_PORT).value();
  }

  /** Sender address. */
  public String smtpFrom() {
    return (String) values.get(SMTP_FROM).value();
  }

  /** Connect and response timeout of webhook deliveries. */
  public Duration webhookTimeout() {
    return (Duration) values.get(WEBHOOK_TIMEOUT).value();
  }

  /** Address the HTTP API listens on. */
  public String host() {
    return (String) values.get(HOST).value();
  }

  /** Port of the HTTP API (0: any free port). */
  public int port() {
    return (Integer) values.get(PORT).value();
  }

  /** Tokens the HTTP API accepts; empty for no authentication. */
  @SuppressWarnings("unchecked")
  public List<String> apiTokens() {
    Object tokens = values.get(API_TOKENS).value();
    return tokens == null ? List.of() : (List<String>) tokens;
  }

  /** Origins whose pages may change things through the HTTP API besides its own; empty for none. */
  @SuppressWarnings("unchecked")
  public List<String> allowedOrigins() {
    Object origins = values.get(ALLOWED_ORIGINS).value();
    return origins == null ? List.of() : (List<String>) origins;
  }

  /** Host names the HTTP API answers to without tokens besides loopback names and IP addresses; empty for none. */
  @SuppressWarnings("unchecked")
  public List<String> allowedHosts() {
    Object hosts = values.get(ALLOWED_HOSTS).value();
    return hosts == null ? List.of() : (List<String>) hosts;
  }

  /** The value as shown to people: the database password and API tokens hidden. */
  public String shown(String name) {
    Value value = value(name);
    if (value.value() == null) {
      return "(none)";
    }
    return switch (name) {
      case DATABASE_URL, LISTEN_DATABASE_URL -> value.value().toString();
      case API_TOKENS -> apiTokens().size() + " token(s)";
      case CAPABILITIES -> capabilities().isEmpty() ? "(none)" : String.join(",", capabilities());
      case QUEUES ->
        queues().entrySet().stream()
            .map(e -> e.getKey() + "=" + e.getValue())
            .collect(Collectors.joining(","));
      default -> value.text();
    };
  }

  // ---------------------------------------------------------------- documentation

  /** The settings table in Markdown, as in docs/configuration.md, "CLI and environment". */
  public static String markdownTable() {
    StringBuilder out = new StringBuilder();
    out.append(
        "| setting (config file key) | flag | environment | default | allowed | what it does |\n");
    out.append("|---|---|---|---|---|---|\n");
    for (Definition def : DEFINITIONS) {
      out.append("| `")
          .append(def.name())
          .append("` | `")
          .append(def.flag())
          .append("` | ")
          .append(def.environment().stream()
              .map(v -> "`" + v + "`")
              .collect(Collectors.joining(", then ")))
          .append(" | ")
          .append(def.defaultDescription())
          .append(" | ")
          .append(def.allowed())
          .append(" | ")
          .append(def.description())
          .append(" |\n");
    }
    return out.toString();
  }

  /** A one-line description for a flag's help: what it does, its default and its variable. */
  public static String helpText(String name) {
    Definition def = definition(name);
    String what = plain(def.description());
    return Character.toUpperCase(what.charAt(0)) + what.substring(1) + ". Default: "
        + plain(def.defaultDescription())
        + ". Environment: " + String.join(", then ", def.environment()) + ". Allowed: "
        + plain(def.allowed()) + ".";
  }

  // ---------------------------------------------------------------- parsers

  private static String durationAllowed(String min, String max) {
    return "a duration from " + min + " to " + max
        + ", written like `500ms`, `5s`, `10m`, `1h` or `1h30m`";
  }

  static int parseInt(String text, int min, int max) {
    int value;
    try {
      value = Integer.parseInt(text.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not an integer");
    }
    if (value < min || value > max) {
      throw new IllegalArgumentException("out of range");
    }
    return value;
  }

  static Duration parseDuration(
      String text, Duration min, Duration max, String minText, String maxText) {
    Duration value;
    try {
      value = DurationText.parse(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("not a duration");
    }
    if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new IllegalArgumentException("out of range (" + minText + " to " + maxText + ")");
    }
    return value;
  }

  private static String parseSchema(String text) {
    if (!SCHEMA_NAME.matcher(text).matches()) {
      throw new IllegalArgumentException("not a schema name");
    }
    return text;
  }

  private static LogLevel parseLogLevel(String text) {
    return switch (text.strip().toLowerCase(java.util.Locale.ROOT)) {
      case "error" -> LogLevel.ERROR;
      case "warn", "warning" -> LogLevel.WARN;
      case "info" -> LogLevel.INFO;
      case "debug" -> LogLevel.DEBUG;
      default -> throw new IllegalArgumentException("unknown log level");
    };
  }

  private static LogFormat parseLogFormat(String text) {
    return switch (text.strip().toLowerCase(java.util.Locale.ROOT)) {
      case "plain", "text" -> LogFormat.PLAIN;
      case "json" -> LogFormat.JSON;
      default -> throw new IllegalArgumentException("unknown log format");
    };
  }

  private static List<String> parseCapabilities(String text) {
    List<String> capabilities = new ArrayList<>();
    for (String part : text.split(",", -1)) {
      String name = part.strip();
      if (name.isEmpty()) {
        throw new IllegalArgumentException("empty capability name");
      }
      if (!CAPABILITY_NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("invalid capability name '" + name + "'");
      }
      if (capabilities.contains(name)) {
        throw new IllegalArgumentException("capability '" + name + "' is named twice");
      }
      capabilities.add(name);
    }
    return List.copyOf(capabilities);
  }

  private static Map<String, Integer> parseQueues(String text) {
    Map<String, Integer> queues = new LinkedHashMap<>();
    for (String part : text.split(",", -1)) {
      String item = part.strip();
      if (item.isEmpty()) {
        throw new IllegalArgumentException("empty queue name");
      }
      String[] kv = item.split("=", 2);
      String queue = kv[0].strip();
      if (!QUEUE_NAME.matcher(queue).matches()) {
        throw new IllegalArgumentException("invalid queue name '" + queue + "'");
      }
      Integer concurrency = null;
      if (kv.length == 2) {
        try {
          concurrency =
              parseInt(kv[1], PgJobsSettings.CONCURRENCY.min(), PgJobsSettings.CONCURRENCY.max());
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(
              "concurrency '" + kv[1].strip() + "' of queue '" + queue + "' is " + e.getMessage());
        }
      }
      if (queues.containsKey(queue)) {
        throw new IllegalArgumentException("queue '" + queue + "' is named twice");
      }
      queues.put(queue, concurrency);
    }
    return Collections.unmodifiableMap(queues);
  }

  /** Where a process listens: a host and a port. */
  public record Bind(String host, int port) {
    @Override
    public String toString() {
      return host + ":" + port;
    }
  }

  /** {@code host:port}, or {@code off} (an empty Optional). */
  private static Optional<Bind> parseBind(String text) {
    if (text.equalsIgnoreCase("off")) {
      return Optional.empty();
    }
    int colon = text.lastIndexOf(':');
    if (colon <= 0 || colon == text.length() - 1) {
      throw new IllegalArgumentException("not host:port or off");
    }
    String host = text.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    parseHost(host);
    int port;
    try {
      port = Integer.parseInt(text.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("the port is not a number");
    }
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("the port is out of range (0 to 65535)");
    }
    return Optional.of(new Bind(host, port));
  }

  private static String parseHost(String text) {
    if (!HOST_NAME.matcher(text).matches()) {
      throw new IllegalArgumentException("not a host name or IP address");
    }
    return text;
  }

  private static String parseEmail(String text) {
    if (!EMAIL.matcher(text).matches()) {
      throw new IllegalArgumentException("not an e-mail address");
    }
    return text;
  }

  private static List<String> parseOrigins(String text) {
    return parseList(text, "origin", ORIGIN);
  }

  private static List<String> parseAllowedHosts(String text) {
    return parseList(text, "host", ALLOWED_HOST);
  }

  /** Comma-separated items each matching {@code pattern} or {@code *}. */
  private static List<String> parseList(String text, String what, Pattern pattern) {
    List<String> items = new ArrayList<>();
    for (String part : text.split(",", -1)) {
      String item = part.strip();
      if (item.isEmpty()) {
        throw new IllegalArgumentException("empty " + what);
      }
      if (!item.equals("*") && !pattern.matcher(item).matches()) {
        throw new IllegalArgumentException(
            "'" + item + "' is not " + (what.equals("origin") ? "an " : "a ") + what);
      }
      items.add(item);
    }
    return List.copyOf(items);
  }

  private static List<String> parseTokens(String text) {
    List<String> tokens = new ArrayList<>();
    for (String part : text.split(",", -1)) {
      String token = part.strip();
      if (!TOKEN.matcher(token).matches()) {
        throw new IllegalArgumentException(
            token.isEmpty()
                ? "empty token"
                : "token " + (tokens.size() + 1) + " has " + token.length()
                    + " characters or characters other than visible ASCII");
      }
      tokens.add(token);
    }
    return List.copyOf(tokens);
  }
}
