package io.pgjobs.boundaries;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Reads every module's {@code src/main/java} under a project root and checks two rules.
 *
 * <ol>
 *   <li>No module uses a package of another module that the other does not export. A module with a
 *       {@code src/main/java/module-info.java} exports what its {@code exports} lines name (pgjobs-core
 *       declares its API there); a module without one exports only its top package (the one package of
 *       which all its others are sub-packages: {@code io.pgjobs.server}, not {@code io.pgjobs.server.api}).
 *   <li>The modules do not use each other in a circle ({@link #cycles}).
 * </ol>
 *
 * "Uses" means an {@code import} (also static or on demand) or a fully qualified name in code; comments
 * and string literals are skipped.
 */
public final class ModuleBoundaries {
  private static final Pattern PACKAGE = Pattern.compile("(?m)^\\s*package\\s+([\\w.]+)\\s*;");
  private static final Pattern EXPORTS = Pattern.compile("(?m)^\\s*exports\\s+([\\w.]+)\\s*;");
  private static final Pattern IMPORT =
      Pattern.compile("(?m)^\\s*import\\s+(?:static\\s+)?([\\w.]+?)(?:\\.\\*)?\\s*;");
  private static final Pattern QUALIFIED =
      Pattern.compile("\\b[a-z_][\\w]*(?:\\.[a-z_][\\w]*)+\\.[A-Z]\\w*");

  /** One module: its directory name, the packages of its main sources, and those it exports. */
  public record Module(String name, Set<String> packages, Set<String> exported) {}

  /** A source file of a module and the packages of other modules (or its own) it uses. */
  record Source(Module module, String path, String pkg, Set<String> used) {}

  private final Map<String, Module> owner = new HashMap<>(); // package -> module
  private final List<Source> sources = new ArrayList<>();

  private ModuleBoundaries() {}

  /** The project root: the nearest directory at or above {@code start} holding pgjobs-core/pom.xml. */
  public static Path projectRoot(Path start) {
    for (Path p = start.toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("pgjobs-core/pom.xml"))) {
        return p;
      }
    }
    throw new IllegalStateException(
        "no project root (with pgjobs-core/pom.xml) at or above " + start);
  }

  /** Reads every {@code <module>/src/main/java} directly under {@code root}. */
  public static ModuleBoundaries read(Path root) {
    ModuleBoundaries b = new ModuleBoundaries();
    Map<Module, Map<Path, String>> texts = new TreeMap<>((x, y) -> x.name().compareTo(y.name()));
    try (Stream<Path> dirs = Files.list(root)) {
      for (Path dir : dirs.sorted().toList()) {
        Path src = dir.resolve("src/main/java");
        if (!Files.isDirectory(src)) {
          continue;
        }
        Map<Path, String> files = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(src)) {
          for (Path f : walk.filter(f -> f.toString().endsWith(".java")).toList()) {
            files.put(f, Files.readString(f));
          }
        }
        Set<String> packages = new TreeSet<>();
        files.forEach((f, text) -> {
          Matcher m = PACKAGE.matcher(text);
          if (m.find() && !f.endsWith("module-info.java")) {
            packages.add(m.group(1));
          }
        });
        Set<String> exported = new TreeSet<>();
        String moduleInfo = files.get(src.resolve("module-info.java"));
        if (moduleInfo != null) {
          Matcher m = EXPORTS.matcher(strip(moduleInfo));
          while (m.find()) {
            exported.add(m.group(1));
          }
        } else {
          packages.stream()
              .filter(p -> packages.stream().allMatch(q -> q.equals(p) || q.startsWith(p + ".")))
              .forEach(exported::add);
        }
        Module module = new Module(dir.getFileName().toString(), packages, exported);
        packages.forEach(p -> b.owner.put(p, module));
        texts.put(module, files);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    texts.forEach((module, files) -> files.forEach((f, text) -> {
      if (f.endsWith("module-info.java")) {
        return;
      }
      Matcher pm = PACKAGE.matcher(text);
      String pkg = pm.find() ? pm.group(1) : "";
      b.sources.add(new Source(module, root.relativize(f).toString(), pkg, b.used(strip(text))));
    }));
    return b;
  }

  /** The known packages that {@code code} (comments and strings stripped) names. */
  private Set<String> used(String code) {
    Set<String> used = new TreeSet<>();
    Matcher im = IMPORT.matcher(code);
    while (im.find()) {
      addKnown(im.group(1), used);
    }
    Matcher qm = QUALIFIED.matcher(code.replaceAll("(?m)^\\s*(package|import)\\s[^;]*;", ""));
    while (qm.find()) {
      addKnown(qm.group(), used);
    }
    return used;
  }

  /** Adds the longest known package that {@code name} starts with, if any. */
  private void addKnown(String name, Set<String> into) {
    for (String n = name; ; n = n.substring(0, n.lastIndexOf('.'))) {
      if (owner.containsKey(n)) {
        into.add(n);
        return;
      }
      if (n.indexOf('.') < 0) {
        return;
      }
    }
  }

  /** Each use of a package another module does not export: "file uses package (module does not export it)". */
  public List<String> violations() {
    List<String> out = new ArrayList<>();
    for (Source s : sources) {
      for (String p : s.used()) {
        Module m = owner.get(p);
        if (m != s.module() && !m.exported().contains(p)) {
          out.add(s.path() + " uses " + p + " (" + m.name() + " does not export it; it exports "
              + m.exported() + ")");
        }
      }
    }
    return out;
  }

  /** The exported packages of {@code module}. */
  public Set<String> exported(String module) {
    return owner.values().stream()
        .filter(m -> m.name().equals(module))
        .findFirst()
        .map(Module::exported)
        .orElseThrow(() -> new IllegalArgumentException("no module " + module));
  }

  /**
   * The circles of the import graph between modules ({@code byModule}) or between packages, each as its
   * nodes (a strongly connected component of more than one) with the files whose uses close it; empty if
   * there is none. The packages of pgjobs-core do form circles today (the API package {@code io.pgjobs}
   * holds the model the store reads and writes, and the client that calls the store), so the test holds
   * the modules to none.
   */
  public List<String> cycles(boolean byModule) {
    Map<String, Set<String>> edges = new TreeMap<>();
    for (Source s : sources) {
      for (String p : s.used()) {
        String from = byModule ? s.module().name() : s.pkg();
        String to = byModule ? owner.get(p).name() : p;
        if (!from.equals(to)) {
          edges.computeIfAbsent(from, k -> new TreeSet<>()).add(to);
        }
      }
    }
    List<String> out = new ArrayList<>();
    for (Set<String> scc : stronglyConnected(edges)) {
      if (scc.size() > 1) {
        List<String> files = new ArrayList<>();
        for (Source s : sources) {
          String from = byModule ? s.module().name() : s.pkg();
          if (scc.contains(from)) {
            for (String p : s.used()) {
              String to = byModule ? owner.get(p).name() : p;
              if (!to.equals(from) && scc.contains(to)) {
                files.add(s.path() + " -> " + p);
              }
            }
          }
        }
        out.add(scc + " via " + files);
      }
    }
    return out;
  }

  /** Tarjan's algorithm, iterative enough for a few hundred packages (recursion depth = path length). */
  private static List<Set<String>> stronglyConnected(Map<String, Set<String>> edges) {
    Map<String, Integer> index = new HashMap<>();
    Map<String, Integer> low = new HashMap<>();
    Deque<String> stack = new ArrayDeque<>();
    Set<String> onStack = new LinkedHashSet<>();
    List<Set<String>> out = new ArrayList<>();
    Set<String> nodes = new TreeSet<>(edges.keySet());
    edges.values().forEach(nodes::addAll);
    for (String n : nodes) {
      if (!index.containsKey(n)) {
        connect(n, edges, index, low, stack, onStack, out);
      }
    }
    return out;
  }

  private static void connect(
      String v,
      Map<String, Set<String>> edges,
      Map<String, Integer> index,
      Map<String, Integer> low,
      Deque<String> stack,
      Set<String> onStack,
      List<Set<String>> out) {
    index.put(v, index.size());
    low.put(v, index.get(v));
    stack.push(v);
    onStack.add(v);
    for (String w : edges.getOrDefault(v, Set.of())) {
      if (!index.containsKey(w)) {
        connect(w, edges, index, low, stack, onStack, out);
        low.put(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.contains(w)) {
        low.put(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v).equals(index.get(v))) {
      Set<String> scc = new TreeSet<>();
      String w;
      do {
        w = stack.pop();
        onStack.remove(w);
        scc.add(w);
      } while (!w.equals(v));
      out.add(scc);
    }
  }

  /** {@code text} without comments, string and text-block literals and char literals (kept as blanks). */
  static String strip(String text) {
    StringBuilder out = new StringBuilder(text.length());
    int i = 0;
    int n = text.length();
    while (i < n) {
      char c = text.charAt(i);
      if (c == '/' && i + 1 < n && text.charAt(i + 1) == '/') {
        while (i < n && text.charAt(i) != '\n') {
          i++;
        }
      } else if (c == '/' && i + 1 < n && text.charAt(i + 1) == '*') {
        int end = text.indexOf("*/", i + 2);
        i = end < 0 ? n : end + 2;
        out.append(' ');
      } else if (text.startsWith("\"\"\"", i)) {
        int end = text.indexOf("\"\"\"", i + 3);
        i = end < 0 ? n : end + 3;
        out.append("\"\"");
      } else if (c == '"' || c == '\'') {
        int j = i + 1;
        while (j < n && text.charAt(j) != c) {
          j += text.charAt(j) == '\\' ? 2 : 1;
        }
        i = j + 1;
        out.append(c).append(c);
      } else {
        out.append(c);
        i++;
      }
    }
    return out.toString();
  }
}
