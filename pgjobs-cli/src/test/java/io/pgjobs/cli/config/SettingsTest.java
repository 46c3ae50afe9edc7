package io.pgjobs.cli.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.config.PgJobsSettings;
import io.pgjobs.config.Setting;
import io.pgjobs.testkit.GeneratedDocs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SettingsTest {
  @TempDir
  Path dir;

  @Test
  void everySettingHasADefaultWhenNothingIsGiven() {
    Settings s = Settings.resolve(Map.of(), Map.of());

    assertThat(s.databaseUrl().jdbcUrl()).isEqualTo("jdbc:postgresql://127.0.0.1:5432/pgjobs");
    assertThat(s.databaseUrl().user()).isEqualTo("postgres");
    assertThat(s.schema()).isEqualTo("pgjobs");
    assertThat(s.concurrency()).isEqualTo(10);
    assertThat(s.claimBatch()).isEqualTo(1000);
    assertThat(s.pollInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(s.shutdownGrace()).isEqualTo(Duration.ofSeconds(30));
    assertThat(s.staleThreshold()).isEqualTo(Duration.ofMinutes(5));
    assertThat(s.retention()).isEqualTo(Duration.ofHours(24));
    assertThat(s.queues()).isEmpty();
    assertThat(s.port()).isEqualTo(8080);
    assertThat(s.host()).isEqualTo("127.0.0.1");
    assertThat(s.apiTokens()).isEmpty();
    assertThat(s.logFormat()).isEqualTo(Settings.LogFormat.PLAIN);
    assertThat(s.smtpPort()).isEqualTo(1025);
    assertThat(s.configFile()).isNull();
    assertThat(s.values().values())
        .allSatisfy(v -> assertThat(v.source()).isEqualTo(Settings.Source.DEFAULT));
    assertThat(s.workerMetricsBind()).contains(new Settings.Bind("127.0.0.1", 9091));
    assertThat(s.allowedOrigins()).isEmpty();
    assertThat(s.allowedHosts()).isEmpty();
  }

  @Test
  void allowedOriginsAndHostsAreListsCheckedItemByItem() {
    Settings s = Settings.resolve(
        Map.of(Settings.ALLOWED_ORIGINS, "https://ops.example.com, http://127.0.0.1:3000"),
        Map.of("PGJOBS_ALLOWED_HOSTS", "jobs.internal,*.corp.example"));
    assertThat(s.allowedOrigins())
        .containsExactly("https://ops.example.com", "http://127.0.0.1:3000");
    assertThat(s.allowedHosts()).containsExactly("jobs.internal", "*.corp.example");
    assertThat(Settings.of(Map.of(Settings.ALLOWED_HOSTS, "*")).allowedHosts())
        .containsExactly("*");

    assertThatThrownBy(
            () -> Settings.of(Map.of(Settings.ALLOWED_ORIGINS, "https://ops.example.com/path")))
        .isInstanceOf(InvalidSettingException.class)
        .hasMessageContaining("--allowed-origins")
        .hasMessageContaining("'https://ops.example.com/path' is not an origin")
        .hasMessageContaining("scheme://host[:port]");
    assertThatThrownBy(
            () -> Settings.resolve(Map.of(), Map.of("PGJOBS_ALLOWED_HOSTS", "jobs.internal:8080")))
        .isInstanceOf(InvalidSettingException.class)
        .hasMessageContaining("PGJOBS_ALLOWED_HOSTS")
        .hasMessageContaining("'jobs.internal:8080' is not a host")
        .hasMessageContaining("no port");
  }

  @Test
  void aFlagBeatsTheEnvironmentWhichBeatsTheFileWhichBeatsTheDefault() throws Exception {
    Path file = Files.writeString(
        dir.resolve("pgjobs.properties"),
        "concurrency = 3\nclaim_batch=4\nretention=2d\n# comment\nport=\n");
    Map<String, String> env = Map.of(
        "PGJOBS_CONFIG",
        file.toString(),
        "PGJOBS_CONCURRENCY",
        "20",
        "PGJOBS_CLAIM_BATCH",
        "30",
        "PGJOBS_PORT",
        "");

    Settings s = Settings.resolve(Map.of("concurrency", "7"), env);

    assertThat(s.concurrency()).isEqualTo(7);
    assertThat(s.value("concurrency").source()).isEqualTo(Settings.Source.FLAG);
    assertThat(s.claimBatch()).isEqualTo(30);
    assertThat(s.value("claim_batch").origin()).isEqualTo("PGJOBS_CLAIM_BATCH");
    assertThat(s.retention()).isEqualTo(Duration.ofDays(2));
    assertThat(s.value("retention").source()).isEqualTo(Settings.Source.CONFIG_FILE);
    assertThat(s.port()).as("empty variable and file entry count as unset").isEqualTo(8080);
    assertThat(s.value("port").source()).isEqualTo(Settings.Source.DEFAULT);
    assertThat(s.configFile()).isEqualTo(file);
  }

  @Test
  void listenDatabaseUrlIsUnsetADirectUrlOrOffAndItsPasswordIsNeverShown() {
    Settings unset = Settings.resolve(Map.of(), Map.of());
    assertThat(unset.listenDatabaseUrl()).isEmpty();
    assertThat(unset.listenOff()).isFalse();

    Settings direct = Settings.resolve(
        Map.of(),
        Map.of("PGJOBS_LISTEN_DATABASE_URL", "postgres://app:secret@db-primary:5432/app"));
    assertThat(direct.listenDatabaseUrl()).get().satisfies(u -> {
      assertThat(u.jdbcUrl()).isEqualTo("jdbc:postgresql://db-primary:5432/app");
      assertThat(u.password()).isEqualTo("secret");
    });
    assertThat(direct.listenOff()).isFalse();
    assertThat(direct.shown("listen_database_url")).doesNotContain("secret");

    Settings off = Settings.resolve(Map.of("listen_database_url", "off"), Map.of());
    assertThat(off.listenOff()).isTrue();
    assertThat(off.listenDatabaseUrl()).isEmpty();

    assertThatThrownBy(() -> Settings.resolve(
            Map.of(), Map.of("PGJOBS_LISTEN_DATABASE_URL", "mysql://app:secret@db/app")))
        .isInstanceOf(InvalidSettingException.class)
        .hasMessageContaining("PGJOBS_LISTEN_DATABASE_URL")
        .hasMessageContaining("setting listen_database_url")
        .hasMessageContaining("or off")
        .hasMessageNotContaining("secret");
  }

  @Test
  void theConfigFileFlagBeatsPgjobsConfig() throws Exception {
    Path a = Files.writeString(dir.resolve("a.properties"), "schema=from_a\n");
    Path b = Files.writeString(dir.resolve("b.properties"), "schema=from_b\n");

    Settings s =
        Settings.resolve(Map.of("config", b.toString()), Map.of("PGJOBS_CONFIG", a.toString()));

    assertThat(s.schema()).isEqualTo("from_b");
  }

  @Test
  void databaseUrlPrefersTheFlagThenDatabaseUrlThenPgjobsDatabaseUrlInAnyOfThreeForms() {
    Map<String, String> env = new HashMap<>(Map.of(
        "DATABASE_URL",
        "postgres://app:pw@db:6543/app",
        "PGJOBS_DATABASE_URL",
        "jdbc:postgresql://other:5432/other"));
    assertThat(Settings.resolve(Map.of(), env).databaseUrl().jdbcUrl())
        .isEqualTo("jdbc:postgresql://db:6543/app");
    assertThat(Settings.resolve(Map.of(), env).databaseUrl().password()).isEqualTo("pw");
    assertThat(Settings.resolve(Map.of("database_url", "postgresql://flag/f"), env)
            .databaseUrl()
            .jdbcUrl())
        .isEqualTo("jdbc:postgresql://flag:5432/f");
    env.remove("DATABASE_URL");
    assertThat(Settings.resolve(Map.of(), env).databaseUrl().jdbcUrl())
        .isEqualTo("jdbc:postgresql://other:5432/other");
  }

  @Test
  void logFormatComesFromPgjobsLogFormatThenLogFormat() {
    assertThat(Settings.resolve(Map.of(), Map.of("LOG_FORMAT", "json")).logFormat())
        .isEqualTo(Settings.LogFormat.JSON);
    assertThat(
            Settings.resolve(Map.of(), Map.of("LOG_FORMAT", "json", "PGJOBS_LOG_FORMAT", "plain"))
                .logFormat())
        .isEqualTo(Settings.LogFormat.PLAIN);
  }

  @Test
  void queuesWithoutAConcurrencyGetTheConcurrencySetting() {
    Settings s = Settings.resolve(
        Map.of("queues", "emails=20, images ,webhooks=5"), Map.of("PGJOBS_CONCURRENCY", "3"));

    assertThat(s.queues())
        .containsExactly(Map.entry("emails", 20), Map.entry("images", 3), Map.entry("webhooks", 5));
    assertThat(s.shown("queues")).isEqualTo("emails=20,images=3,webhooks=5");
  }

  @Test
  void capabilitiesComeFromTheFlagOrPgjobsCapabilitiesAndBadNamesSayWhatIsAllowed() {
    assertThat(Settings.resolve(Map.of(), Map.of()).capabilities()).isEmpty();
    Settings s = Settings.resolve(Map.of(), Map.of("PGJOBS_CAPABILITIES", "general, media"));
    assertThat(s.capabilities()).containsExactly("general", "media");
    assertThat(s.shown("capabilities")).isEqualTo("general,media");
    assertThat(
            Settings.resolve(Map.of("capabilities", "gpu"), Map.of("PGJOBS_CAPABILITIES", "media"))
                .capabilities())
        .containsExactly("gpu");

    assertInvalid(
        Map.of(),
        Map.of("PGJOBS_CAPABILITIES", "media,needs gpu"),
        "invalid value 'media,needs gpu' in environment variable PGJOBS_CAPABILITIES (setting capabilities):"
            + " invalid capability name 'needs gpu'; allowed: comma-separated names, each 1–64 of letters, digits"
            + " and _ . -");
    assertInvalid(
        Map.of("capabilities", "media,"),
        Map.of(),
        "for option --capabilities (setting capabilities):" + " empty capability name");
    assertInvalid(Map.of("capabilities", "a,a"), Map.of(), "capability 'a' is named twice");
    assertInvalid(Map.of("capabilities", "x".repeat(65)), Map.of(), "invalid capability name");
  }

  @Test
  void tokensAreSplitAndHiddenWhenShown() {
    Settings s = Settings.of(Map.of("api_tokens", "0123456789abcdef,fedcba9876543210-x"));

    assertThat(s.apiTokens()).containsExactly("0123456789abcdef", "fedcba9876543210-x");
    assertThat(s.shown("api_tokens")).isEqualTo("2 token(s)");
  }

  @Test
  void everyInvalidValueSaysWhereItCameFromWhatWasWrongAndWhatIsAllowed() {
    assertInvalid(
        Map.of(),
        Map.of("PGJOBS_CONCURRENCY", "abc"),
        "invalid value 'abc' in environment variable PGJOBS_CONCURRENCY (setting concurrency): not an integer;"
            + " allowed: an integer from 1 to 10000");
    assertInvalid(
        Map.of(),
        Map.of("PGJOBS_STALE_THRESHOLD", "5x"),
        "invalid value '5x' in environment variable PGJOBS_STALE_THRESHOLD (setting stale_threshold): not a duration;"
            + " allowed: a duration from 1s to 24h, written like 500ms, 5s, 10m, 1h or 1h30m");
    assertInvalid(
        Map.of("stale_threshold", "500ms"),
        Map.of(),
        "invalid value '500ms' for option --stale-threshold (setting stale_threshold): out of range (1s to 24h)");
    assertInvalid(
        Map.of("port", "65536"),
        Map.of(),
        "for option --port (setting port): out of range;"
            + " allowed: an integer from 0 to 65535 (0: any free port)");
    assertInvalid(
        Map.of("queues", "emails=0"),
        Map.of(),
        "(setting queues): concurrency '0' of queue 'emails' is out of range");
    assertInvalid(Map.of("queues", "a,a"), Map.of(), "queue 'a' is named twice");
    assertInvalid(Map.of("queues", "bad queue"), Map.of(), "invalid queue name 'bad queue'");
    assertInvalid(
        Map.of("schema", "1abc"),
        Map.of(),
        "not a schema name; allowed: 1–51 of lowercase letters");
    assertInvalid(Map.of("smtp_host", "mail server"), Map.of(), "not a host name or IP address");
    assertInvalid(Map.of("api_tokens", "0123456789abcdef,"), Map.of(), "empty token");
    assertInvalid(
        Map.of("log_format", "yaml"), Map.of(), "unknown log format; allowed: plain or json");
    assertInvalid(
        Map.of("concurrency", " "),
        Map.of(),
        "option --concurrency is empty; allowed: an integer from 1 to 10000");
    assertInvalid(
        Map.of(),
        Map.of("DATABASE_URL", "postgres://user:topsecret@/db"),
        "invalid value (hidden) in environment variable DATABASE_URL (setting database_url)");
  }

  @Test
  void aSecretNeverAppearsInAnErrorMessage() {
    assertThatThrownBy(
            () -> Settings.resolve(Map.of(), Map.of("DATABASE_URL", "postgres://u:topsecret@/db")))
        .hasMessageNotContaining("topsecret");
    assertThatThrownBy(() -> Settings.resolve(Map.of("api_tokens", "short-secret"), Map.of()))
        .hasMessageNotContaining("short-secret");
  }

  @Test
  void unknownKeysInTheConfigFileAreRejected() throws Exception {
    Path file = Files.writeString(dir.resolve("typo.properties"), "stale_treshold=5s\n");

    assertThatThrownBy(() -> Settings.resolve(Map.of("config", file.toString()), Map.of()))
        .isInstanceOf(InvalidSettingException.class)
        .hasMessageContaining("unknown setting 'stale_treshold' in config file " + file)
        .hasMessageContaining("allowed keys: database_url, listen_database_url, schema, pool_size");
  }

  @Test
  void theConfigurationDocumentsEverySettingExactlyAsTheCodeDefinesIt() throws Exception {
    GeneratedDocs.check(
        "cli", Settings.markdownTable(), "pgjobs-cli", getClass().getSimpleName());
    String configuration = Files.readString(Path.of("..", "docs", "configuration.md"));

    assertThat(configuration).contains("## CLI and environment");
    assertThat(configuration).contains(Settings.markdownTable());
    List<String> names =
        Settings.DEFINITIONS.stream().map(Settings.Definition::name).toList();
    assertThat(names).doesNotHaveDuplicates();
  }

  @Test
  void theSettingsSharedWithTheBuildersComeFromTheCatalogue() {
    Settings defaults = Settings.of(Map.of());
    List<Setting<?>> shared = PgJobsSettings.ALL.stream().filter(Setting::cli).toList();
    assertThat(shared)
        .extracting(Setting::key)
        .contains(
            Settings.SCHEMA,
            Settings.CONCURRENCY,
            Settings.STALE_THRESHOLD,
            Settings.WORKER_DEAD_AFTER,
            Settings.PORT);
    for (Setting<?> s : shared) {
      Settings.Definition def = Settings.definition(s.key());
      assertThat(def.flag()).as(s.key()).isEqualTo(s.flag());
      assertThat(def.environment()).as(s.key()).containsExactly(s.environmentVariable());
      assertThat(def.defaultText()).as(s.key()).isEqualTo(s.defaultText());
      assertThat(def.description()).as(s.key()).isEqualTo(s.description());
      assertThat(defaults.value(s.key()).value()).as(s.key()).isEqualTo(s.defaultValue());
      if (s.max() != null) {
        assertThat(Settings.of(Map.of(s.key(), text(s.max()))).value(s.key()).value())
            .as(s.key())
            .isEqualTo(s.max());
        assertThat(Settings.of(Map.of(s.key(), text(s.min()))).value(s.key()).value())
            .as(s.key())
            .isEqualTo(s.min());
      }
    }
    // A name of the catalogue the command has is taken from it, not declared a second time here.
    List<String> catalogueKeys = PgJobsSettings.ALL.stream().map(Setting::key).toList();
    assertThat(Settings.DEFINITIONS)
        .filteredOn(d -> catalogueKeys.contains(d.name()))
        .allSatisfy(
            d -> assertThat(PgJobsSettings.byKey(d.name()).cli()).as(d.name()).isTrue());
  }

  @Test
  void everyFlagOfTheCommandsIsItsSettingsFlag() throws Exception {
    java.util.Set<String> checked = new java.util.HashSet<>();
    for (String name : List.of("PgJobsCommand", "WorkerOptions", "ServerOptions", "WorkCommand")) {
      for (java.lang.reflect.Field field :
          Class.forName("io.pgjobs.cli." + name).getDeclaredFields()) {
        picocli.CommandLine.Option option = field.getAnnotation(picocli.CommandLine.Option.class);
        if (option != null && !option.descriptionKey().isEmpty()) {
          assertThat(option.names())
              .as("%s.%s", name, field.getName())
              .containsExactly(Settings.definition(option.descriptionKey()).flag());
          checked.add(option.descriptionKey());
        }
      }
    }
    assertThat(checked)
        .containsExactlyInAnyOrderElementsOf(
            Settings.DEFINITIONS.stream().map(Settings.Definition::name).toList());
  }

  private static String text(Object value) {
    return value instanceof Duration d
        ? io.pgjobs.config.DurationText.format(d)
        : String.valueOf(value);
  }

  private static void assertInvalid(
      Map<String, String> flags, Map<String, String> env, String message) {
    assertThatThrownBy(() -> Settings.resolve(flags, env))
        .isInstanceOf(InvalidSettingException.class)
        .hasMessageContaining(message);
  }
}
