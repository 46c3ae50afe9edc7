package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.config.DurationText;
import io.pgjobs.config.PgJobsSettings;
import io.pgjobs.config.Setting;
import io.pgjobs.testkit.GeneratedDocs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The {@code pgjobs.*} properties agree with the settings catalogue ({@link PgJobsSettings}): the same
 * defaults, under the names the catalogue gives, shown by the configuration metadata and the documentation.
 */
class PgJobsPropertiesDocsTest {
  private static final Path METADATA = Path.of(
      "src", "main", "resources", "META-INF", "additional-spring-configuration-metadata.json");

  static List<Setting<?>> springSettings() {
    return PgJobsSettings.ALL.stream().filter(s -> s.springProperty() != null).toList();
  }

  @Test
  void everyPropertyOfTheCatalogueDefaultsToTheCataloguesDefault() {
    BeanWrapperImpl properties = new BeanWrapperImpl(new PgJobsProperties());
    assertThat(springSettings())
        .extracting(Setting::key)
        .contains(
            "schema", "concurrency", "stale_threshold", "worker_dead_after", "request_timeout");
    for (Setting<?> s : springSettings()) {
      assertThat(properties.getPropertyValue(beanPath(s.springProperty())))
          .as("default of %s (%s)", s.springProperty(), s.key())
          .isEqualTo(s.defaultValue());
    }
  }

  @Test
  void everyPropertyOfTheCatalogueBindsUnderItsName() {
    Map<String, String> given = new LinkedHashMap<>();
    Map<String, Object> expected = new LinkedHashMap<>();
    for (Setting<?> s : springSettings()) {
      Object other = otherValue(s);
      given.put(
          s.springProperty(),
          other instanceof Duration d ? DurationText.format(d) : String.valueOf(other));
      expected.put(s.springProperty(), other);
    }
    PgJobsProperties bound = new Binder(new MapConfigurationPropertySource(given))
        .bind("pgjobs", PgJobsProperties.class)
        .get();
    BeanWrapperImpl properties = new BeanWrapperImpl(bound);
    expected.forEach((property, value) ->
        assertThat(properties.getPropertyValue(beanPath(property))).as(property).isEqualTo(value));
  }

  @Test
  void theConfigurationMetadataShowsTheCataloguesDefaults() throws Exception {
    JsonMapper mapper = JsonMapper.builder().build();
    JsonNode current = mapper.readTree(Files.readString(METADATA));
    ObjectNode generated = ((ObjectNode) current).deepCopy();
    ArrayNode properties = generated.putArray("properties");
    List<String> catalogued =
        springSettings().stream().map(Setting::springProperty).toList();
    for (JsonNode property : current.get("properties")) {
      if (!catalogued.contains(property.get("name").asString())) {
        properties.add(property);
      }
    }
    for (Setting<?> s : springSettings()) {
      ObjectNode property = properties.addObject().put("name", s.springProperty());
      switch (s.defaultValue()) {
        case Integer i -> property.put("defaultValue", i);
        case Long l -> property.put("defaultValue", l);
        case Boolean b -> property.put("defaultValue", b);
        default -> property.put("defaultValue", s.defaultText());
      }
    }
    if (generated.equals(current)) {
      return;
    }
    String text = mapper.writerWithDefaultPrettyPrinter().writeValueAsString(generated) + "\n";
    if (Boolean.getBoolean(GeneratedDocs.REGENERATE)) {
      Files.writeString(METADATA, text);
      return;
    }
    assertThat(Files.readString(METADATA))
        .as(
            "%s holds the catalogue's defaults of the pgjobs.* properties (the annotation processor cannot"
                + " read them from PgJobsProperties); regenerate it with ./mvnw -B -o test -pl pgjobs-spring-boot-starter"
                + " -am -Dtest=PgJobsPropertiesDocsTest -Dsurefire.failIfNoSpecifiedTests=false -D%s=true",
            METADATA, GeneratedDocs.REGENERATE)
        .isEqualTo(text);
  }

  @Test
  void theDocumentationsTableOfThePropertiesIsGeneratedFromTheCatalogue() {
    List<String> inTable = SpringPropertiesTable.rows().stream()
        .map(SpringPropertiesTable.Row::property)
        .toList();
    assertThat(inTable)
        .containsAll(springSettings().stream().map(Setting::springProperty).toList());

    GeneratedDocs.check(
        "spring",
        SpringPropertiesTable.markdown(),
        "pgjobs-spring-boot-starter",
        PgJobsPropertiesDocsTest.class.getSimpleName());
  }

  /** {@code pgjobs.worker.dead-after} as a bean path of {@link PgJobsProperties}: {@code worker.deadAfter}. */
  private static String beanPath(String property) {
    return List.of(property.substring("pgjobs.".length()).split("\\.")).stream()
        .map(PgJobsPropertiesDocsTest::camel)
        .collect(Collectors.joining("."));
  }

  private static String camel(String kebab) {
    StringBuilder out = new StringBuilder();
    boolean upper = false;
    for (char c : kebab.toCharArray()) {
      if (c == '-') {
        upper = true;
      } else {
        out.append(upper ? Character.toUpperCase(c) : c);
        upper = false;
      }
    }
    return out.toString();
  }

  /** A valid value other than the default: the greatest allowed, the other boolean, another schema. */
  private static Object otherValue(Setting<?> s) {
    return switch (s.defaultValue()) {
      case Boolean b -> !b;
      case String text -> text + "_other";
      default -> s.max();
    };
  }
}
