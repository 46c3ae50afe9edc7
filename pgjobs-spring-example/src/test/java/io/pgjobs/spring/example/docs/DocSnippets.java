package io.pgjobs.spring.example.docs;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;

/**
 * Compiles the {@code ```java} blocks of Markdown files, each as written, in one compiler run.
 *
 * <p>The rule, one source file per block:
 *
 * <ul>
 *   <li>the block's {@code import} lines (before anything else) go on top;
 *   <li>the rest becomes the body of a class that extends {@link DocSnippetContext} (the names the text
 *       calls "yours"): each top-level piece (a declaration or statement at brace depth 0) that starts
 *       with an annotation, {@code public}, {@code protected}, {@code private}, {@code static},
 *       {@code abstract}, {@code class}, {@code record}, {@code interface} or {@code enum} is a member of
 *       that class, and every other piece is a statement of its method {@code void snippet() throws
 *       Exception}, in the block's order.
 * </ul>
 *
 * <p>So a block may mix type and constant declarations with the statements that use them, as a reader
 * would lay them out, and still needs every import it uses written in it.
 */
final class DocSnippets {
  private static final Pattern MEMBER_START = Pattern.compile(
      "(@|(public|protected|private|static|abstract|class|record|interface|enum)\\b).*",
      Pattern.DOTALL);

  private DocSnippets() {}

  /** A {@code ```java} block: its file, the file's line of its first code line, and its lines. */
  record Block(String file, int firstLine, List<String> lines) {
    String where() {
      return file + ":" + firstLine;
    }
  }

  /** A block's compilation failure: the Markdown line and what the compiler said. */
  record Failure(Block block, int line, String message) {
    @Override
    public String toString() {
      String text =
          line >= block.firstLine() && line < block.firstLine() + block.lines().size()
              ? "\n    > " + block.lines().get(line - block.firstLine()).strip()
              : "";
      return block.file() + ":" + line + " (block at line " + (block.firstLine() - 1) + "): "
          + message + text;
    }
  }

  /** The {@code ```java} blocks of {@code markdown}, named by {@code name} (a path relative to the repository). */
  static List<Block> javaBlocks(Path markdown, String name) throws IOException {
    List<String> lines = Files.readAllLines(markdown);
    List<Block> blocks = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      if (!lines.get(i).strip().equals("```java")) {
        continue;
      }
      int start = i + 1;
      int end = start;
      while (end < lines.size() && !lines.get(end).strip().equals("```")) {
        end++;
      }
      if (end == lines.size()) {
        throw new IllegalStateException(
            name + ":" + (i + 1) + ": a ```java block that is never closed");
      }
      blocks.add(new Block(name, start + 1, List.copyOf(lines.subList(start, end))));
      i = end;
    }
    return blocks;
  }

  /** Compiles every block against {@code classPath} in one run; the failures, none when all compile. */
  static List<Failure> compile(List<Block> blocks, String classPath, Path classesDir) {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    Map<String, Source> sources = new LinkedHashMap<>();
    for (Block block : blocks) {
      Source source = Source.of(block);
      sources.put(source.toUri().toString(), source);
    }
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    List<String> options = List.of(
        "--release",
        "21",
        "-proc:none",
        "-implicit:none",
        "-classpath",
        classPath,
        "-d",
        classesDir.toString());
    javac.getTask(null, null, diagnostics, options, null, sources.values()).call();
    List<Failure> failures = new ArrayList<>();
    for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
      if (d.getKind() != Diagnostic.Kind.ERROR) {
        continue;
      }
      Source source =
          d.getSource() == null ? null : sources.get(d.getSource().toUri().toString());
      if (source == null) {
        failures.add(
            new Failure(blocks.getFirst(), 0, "outside the blocks: " + d.getMessage(Locale.ROOT)));
      } else {
        failures.add(new Failure(
            source.block(), source.markdownLine(d.getLineNumber()), d.getMessage(Locale.ROOT)));
      }
    }
    return failures;
  }

  /** A block as a source file, with the Markdown line of each of its lines. */
  private static final class Source extends SimpleJavaFileObject {
    private final Block block;
    private final String text;
    private final List<Integer> markdownLines;

    private Source(Block block, String className, String text, List<Integer> markdownLines) {
      super(URI.create("string:///" + className + Kind.SOURCE.extension), Kind.SOURCE);
      this.block = block;
      this.text = text;
      this.markdownLines = markdownLines;
    }

    static Source of(Block block) {
      String className =
          "Snippet_" + block.file().replaceAll("[^A-Za-z0-9]", "_") + "_" + block.firstLine();
      Lines imports = new Lines();
      Lines members = new Lines();
      Lines statements = new Lines();
      Lexer lexer = new Lexer();
      Lines piece = null;
      boolean importsDone = false;
      for (int i = 0; i < block.lines().size(); i++) {
        String line = block.lines().get(i);
        int markdownLine = block.firstLine() + i;
        String stripped = line.strip();
        if (piece == null) {
          if (!importsDone && (stripped.startsWith("import ") || stripped.isEmpty())) {
            imports.add(line, markdownLine);
            continue;
          }
          importsDone = true;
          if (stripped.isEmpty() || stripped.startsWith("//")) {
            statements.add(line, markdownLine);
            continue;
          }
          piece = MEMBER_START.matcher(stripped).matches() ? members : statements;
        }
        piece.add(line, markdownLine);
        String code = lexer.code(line).strip();
        if (lexer.depth() == 0
            && !lexer.inComment()
            && (code.endsWith(";") || code.endsWith("}"))) {
          piece = null;
        }
      }
      Lines all = new Lines();
      all.addAll(imports);
      all.add(
          "class " + className + " extends " + DocSnippetContext.class.getName() + " {",
          block.firstLine());
      all.addAll(members);
      all.add("void snippet() throws Exception {", block.firstLine());
      all.addAll(statements);
      all.add("}}", block.firstLine() + block.lines().size() - 1);
      return new Source(block, className, String.join("\n", all.text) + "\n", all.markdownLines);
    }

    Block block() {
      return block;
    }

    int markdownLine(long sourceLine) {
      int index = (int) sourceLine - 1;
      return index >= 0 && index < markdownLines.size()
          ? markdownLines.get(index)
          : block.firstLine();
    }

    @Override
    public CharSequence getCharContent(boolean ignoreEncodingErrors) {
      return text;
    }
  }

  /** Source lines with the Markdown line each came from. */
  private static final class Lines {
    final List<String> text = new ArrayList<>();
    final List<Integer> markdownLines = new ArrayList<>();

    void add(String line, int markdownLine) {
      text.add(line);
      markdownLines.add(markdownLine);
    }

    void addAll(Lines other) {
      text.addAll(other.text);
      markdownLines.addAll(other.markdownLines);
    }
  }

  /**
   * Just enough of Java's lexical structure to find where a top-level piece ends: the depth of
   * brackets of any kind outside comments, strings, character literals and text blocks.
   */
  private static final class Lexer {
    private int depth;
    private boolean inBlockComment;
    private boolean inTextBlock;

    int depth() {
      return depth;
    }

    boolean inComment() {
      return inBlockComment || inTextBlock;
    }

    /** {@code line} without its comments and literals' contents, counting its brackets. */
    String code(String line) {
      StringBuilder code = new StringBuilder();
      int i = 0;
      while (i < line.length()) {
        if (inBlockComment) {
          int end = line.indexOf("*/", i);
          inBlockComment = end < 0;
          i = end < 0 ? line.length() : end + 2;
          continue;
        }
        if (inTextBlock) {
          int end = line.indexOf("\"\"\"", i);
          inTextBlock = end < 0;
          i = end < 0 ? line.length() : end + 3;
          code.append(inTextBlock ? "" : "\"\"");
          continue;
        }
        char c = line.charAt(i);
        if (line.startsWith("//", i)) {
          break;
        } else if (line.startsWith("/*", i)) {
          inBlockComment = true;
          i += 2;
        } else if (line.startsWith("\"\"\"", i)) {
          inTextBlock = true;
          i += 3;
        } else if (c == '"' || c == '\'') {
          int j = i + 1;
          while (j < line.length() && line.charAt(j) != c) {
            j += line.charAt(j) == '\\' ? 2 : 1;
          }
          code.append(c).append(c);
          i = j + 1;
        } else {
          if (c == '(' || c == '[' || c == '{') {
            depth++;
          } else if (c == ')' || c == ']' || c == '}') {
            depth--;
          }
          code.append(c);
          i++;
        }
      }
      return code.toString();
    }
  }
}
