package io.pgjobs.boundaries;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checker itself, on a small project with planted violations: it must see them, and only them. */
class ModuleBoundariesCheckerTest {
  @TempDir
  Path root;

  private void write(String path, String text) throws IOException {
    Path file = root.resolve(path);
    Files.createDirectories(file.getParent());
    Files.writeString(file, text);
  }

  private void plantProject() throws IOException {
    write("pgjobs-core/pom.xml", "<project/>");
    write(
        "pgjobs-core/src/main/java/module-info.java",
        "/** exports io.pgjobs.store; in a comment is no export */\n"
            + "module io.pgjobs.core {\n  exports io.pgjobs;\n}\n");
    write(
        "pgjobs-core/src/main/java/io/pgjobs/Api.java",
        "package io.pgjobs;\npublic class Api {}\n");
    write(
        "pgjobs-core/src/main/java/io/pgjobs/store/Inner.java",
        "package io.pgjobs.store;\nimport io.pgjobs.Api;\npublic class Inner {}\n");
    write(
        "pgjobs-server/src/main/java/io/pgjobs/server/Server.java",
        "package io.pgjobs.server;\n"
            + "import io.pgjobs.Api;\n"
            + "import io.pgjobs.server.api.Routes;\n"
            + "// import io.pgjobs.store.Inner; (a comment: not a use)\n"
            + "public class Server {\n"
            + "  String s = \"io.pgjobs.store.Inner\"; // a string: not a use\n"
            + "}\n");
    write(
        "pgjobs-server/src/main/java/io/pgjobs/server/api/Routes.java",
        "package io.pgjobs.server.api;\n"
            + "import io.pgjobs.store.Inner;\n"
            + "public class Routes {}\n");
    write(
        "pgjobs-cli/src/main/java/io/pgjobs/cli/Main.java",
        "package io.pgjobs.cli;\n"
            + "public class Main {\n"
            + "  Object r = new io.pgjobs.server.api.Routes();\n"
            + "  Object s = new io.pgjobs.server.Server();\n"
            + "}\n");
  }

  @Test
  void namesEachFileThatUsesAnotherModulesInternals() throws IOException {
    plantProject();

    ModuleBoundaries b = ModuleBoundaries.read(root);

    assertThat(b.exported("pgjobs-core")).containsExactly("io.pgjobs");
    assertThat(b.exported("pgjobs-server")).containsExactly("io.pgjobs.server");
    assertThat(b.violations())
        .containsExactlyInAnyOrder(
            "pgjobs-server/src/main/java/io/pgjobs/server/api/Routes.java uses io.pgjobs.store"
                + " (pgjobs-core does not export it; it exports [io.pgjobs])",
            "pgjobs-cli/src/main/java/io/pgjobs/cli/Main.java uses io.pgjobs.server.api"
                + " (pgjobs-server does not export it; it exports [io.pgjobs.server])");
    assertThat(b.cycles(true)).isEmpty();
  }

  @Test
  void findsACircleBetweenModules() throws IOException {
    plantProject();
    write(
        "pgjobs-core/src/main/java/io/pgjobs/Back.java",
        "package io.pgjobs;\nimport io.pgjobs.cli.Main;\nclass Back {}\n");

    assertThat(ModuleBoundaries.read(root).cycles(true))
        .singleElement()
        .asString()
        .startsWith("[pgjobs-cli, pgjobs-core, pgjobs-server] via")
        .contains("pgjobs-core/src/main/java/io/pgjobs/Back.java -> io.pgjobs.cli");
  }

  @Test
  void findsTheProjectRootFromAModule() {
    Path here = ModuleBoundaries.projectRoot(Path.of(""));
    assertThat(here.resolve("pgjobs-core/src/main/java/module-info.java")).exists();
    assertThat(ModuleBoundaries.projectRoot(here.resolve("pgjobs-core/src"))).isEqualTo(here);
  }
}
