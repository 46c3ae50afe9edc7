package io.pgjobs.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Blocks of the documentation generated from code, such as the settings tables: each lies between
 * {@code <!-- settings:NAME:start -->} and {@code <!-- settings:NAME:end -->} in README.md or one file under
 * docs/, wherever it was moved. A test calls {@link #check} with what the code generates: the test fails
 * with the lines that differ and the command that rewrites the block, which is the same test run with
 * {@code -Dpgjobs.regenerateDocs=true}.
 */
public final class GeneratedDocs {
  /** The system property that makes {@link #check} rewrite the block instead of failing. */
  public static final String REGENERATE = "pgjobs.regenerateDocs";

  private GeneratedDocs() {}

  /**
   * Checks that the block {@code name} of the documentation holds {@code generated}, or rewrites it when
   * {@value #REGENERATE} is {@code true}.
   *
   * @param name the block's name ({@code java} for {@code <!-- settings:java:start -->})
   * @param generated what the code generates, ending with a line break
   * @param module the module whose test calls this ({@code pgjobs-cli}), for the command in the message
   * @param testClass the simple name of that test class, for the command in the message
   * @throws AssertionError when the block is missing, found twice, or differs
   */
  public static void check(String name, String generated, String module, String testClass) {
    String start = "<!-- settings:" + name + ":start -->\n";
    String end = "<!-- settings:" + name + ":end -->";
    Path root = repositoryRoot();
    List<Path> holders = new ArrayList<>();
    for (Path file : documents(root)) {
      if (read(file).contains(start)) {
        holders.add(file);
      }
    }
    if (holders.size() != 1) {
      throw new AssertionError("the block " + start.strip() + " ... " + end
          + " must be in exactly one of README.md" + " and docs/*.md, found in "
          + holders.stream().map(root::relativize).toList());
    }
    Path file = holders.getFirst();
    String text = read(file);
    int from = text.indexOf(start) + start.length();
    int to = text.indexOf(end, from);
    if (to < 0) {
      throw new AssertionError(root.relativize(file) + " has " + start.strip() + " but no " + end);
    }
    String current = text.substring(from, to);
    if (current.equals(generated)) {
      return;
    }
    if (Boolean.getBoolean(REGENERATE)) {
      write(file, text.substring(0, from) + generated + text.substring(to));
      return;
    }
    throw new AssertionError(
        root.relativize(file) + ": the block settings:" + name + " differs from the code"
            + " (- in the file, + generated):\n" + diff(current, generated)
            + "\nRegenerate it with: ./mvnw -B -o test -pl "
            + module + " -am -Dtest=" + testClass + " -Dsurefire.failIfNoSpecifiedTests=false -D"
            + REGENERATE + "=true");
  }

  /** The lines only one side has, each once, in order: enough to see what changed in a table. */
  static String diff(String current, String generated) {
    List<String> was = current.lines().toList();
    List<String> now = generated.lines().toList();
    Set<String> wasSet = new HashSet<>(was);
    Set<String> nowSet = new HashSet<>(now);
    StringBuilder out = new StringBuilder();
    was.stream()
        .filter(l -> !nowSet.contains(l))
        .forEach(l -> out.append("- ").append(l).append('\n'));
    now.stream()
        .filter(l -> !wasSet.contains(l))
        .forEach(l -> out.append("+ ").append(l).append('\n'));
    return out.isEmpty()
        ? "(the same lines, in another order or with other blank lines)\n"
        : out.toString();
  }

  private static Path repositoryRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null
        && !(Files.isRegularFile(dir.resolve("README.md"))
            && Files.isRegularFile(dir.resolve("mvnw")))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new AssertionError(
          "no README.md with mvnw beside it above " + Path.of("").toAbsolutePath());
    }
    return dir;
  }

  private static List<Path> documents(Path root) {
    List<Path> files = new ArrayList<>(List.of(root.resolve("README.md")));
    Path docs = root.resolve("docs");
    if (Files.isDirectory(docs)) {
      try (Stream<Path> walk = Files.walk(docs)) {
        walk.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return files;
  }

  private static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void write(Path file, String text) {
    try {
      Files.writeString(file, text);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
