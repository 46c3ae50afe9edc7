package io.pgjobs.spring.example.docs;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.core.status.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;

/**
 * Every {@code ```java} block of README.md and docs/*.md compiles as written (the rule is
 * {@link DocSnippets}'s), against this module's test class path: pgjobs-core, -server, the Spring Boot
 * starter, Spring, HikariCP, Micrometer and OpenTelemetry. The logback.xml of docs/observability.md loads
 * as written.
 */
class DocSnippetsTest {
  private static final Path REPOSITORY = Path.of("..");

  @TempDir
  Path classes;

  @Test
  void everyJavaBlockOfTheReadmeAndTheDocsCompiles() throws IOException {
    List<DocSnippets.Block> blocks =
        new ArrayList<>(DocSnippets.javaBlocks(REPOSITORY.resolve("README.md"), "README.md"));
    assertThat(blocks).as("README.md's java blocks (the quick start)").isNotEmpty();
    try (var docs = Files.list(REPOSITORY.resolve("docs"))) {
      for (Path doc : docs.filter(p -> p.toString().endsWith(".md")).sorted().toList()) {
        blocks.addAll(DocSnippets.javaBlocks(doc, "docs/" + doc.getFileName()));
      }
    }
    assertThat(blocks).as("java blocks of README.md and docs/*.md").hasSizeGreaterThanOrEqualTo(7);

    List<DocSnippets.Failure> failures =
        DocSnippets.compile(blocks, System.getProperty("java.class.path"), classes);

    assertThat(failures)
        .withFailMessage(
            "blocks that do not compile as written (of %d: %s)%n%s",
            blocks.size(),
            blocks.stream().map(DocSnippets.Block::where).collect(Collectors.joining(", ")),
            failures.stream().map(DocSnippets.Failure::toString).collect(Collectors.joining("\n")))
        .isEmpty();
  }

  @Test
  void theDocumentedLogbackConfigurationLoadsAndLogsAtInfo() throws Exception {
    String doc = Files.readString(REPOSITORY.resolve("docs/observability.md"));
    int start = doc.indexOf("```xml\n<configuration>");
    assertThat(start).as("docs/observability.md's logback.xml block").isNotNegative();
    String xml = doc.substring(start + "```xml\n".length(), doc.indexOf("```", start + 3));

    LoggerContext context = new LoggerContext();
    JoranConfigurator configurator = new JoranConfigurator();
    configurator.setContext(context);
    configurator.doConfigure(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));

    assertThat(context.getStatusManager().getCopyOfStatusList())
        .filteredOn(status -> status.getLevel() >= Status.WARN)
        .as("logback's warnings and errors")
        .isEmpty();
    assertThat(context.getLogger(Logger.ROOT_LOGGER_NAME).getLevel()).isEqualTo(Level.INFO);
    assertThat(context.getLogger("io.pgjobs.worker.JobRunner").isDebugEnabled()).isFalse();
    assertThat(context.getLogger("com.zaxxer.hikari.pool.HikariPool").getEffectiveLevel())
        .isEqualTo(Level.WARN);
    context.stop();
  }

  @Test
  void aBlockThatDoesNotCompileIsNamedByItsLineWithTheCompilersMessage(@TempDir Path dir)
      throws IOException {
    Path markdown = dir.resolve("broken.md");
    Files.writeString(markdown, """
        # A document

        ```java
        import io.pgjobs.JobClient;

        static final String NAME = "fine";

        JobClient client = JobClient.builder(dataSource).build();
        client.enqueue(SEND_EMAIL, new SendEmail("ada@example.com", "Hi", NAME));
        ```

        ```java
        JobClient client = JobClient.builder(dataSource).build();   // no import
        client.migrate();
        int attempts = "three";
        ```
        """);
    List<DocSnippets.Block> blocks = DocSnippets.javaBlocks(markdown, "broken.md");

    List<DocSnippets.Failure> failures =
        DocSnippets.compile(blocks, System.getProperty("java.class.path"), classes);

    assertThat(blocks).extracting(DocSnippets.Block::firstLine).containsExactly(4, 13);
    assertThat(failures)
        .map(DocSnippets.Failure::toString)
        .anySatisfy(f -> assertThat(f)
            .startsWith("broken.md:13 (block at line 12): cannot find symbol")
            .contains("class JobClient")
            .contains("> JobClient client = JobClient.builder(dataSource).build();"))
        .anySatisfy(f -> assertThat(f).startsWith("broken.md:15 ").contains("incompatible types"))
        .noneMatch(f -> f.startsWith("broken.md:4")
            || f.startsWith("broken.md:6")
            || f.startsWith("broken.md:8")
            || f.startsWith("broken.md:9"));
  }
}
