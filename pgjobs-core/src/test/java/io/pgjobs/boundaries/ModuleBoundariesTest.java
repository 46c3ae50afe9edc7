package io.pgjobs.boundaries;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The project's module boundaries, read from the sources of every module (this test lives in
 * pgjobs-core, whose tests every build runs, and reads its sibling modules from the project root).
 */
class ModuleBoundariesTest {
  private static final ModuleBoundaries PROJECT =
      ModuleBoundaries.read(ModuleBoundaries.projectRoot(Path.of("")));

  @Test
  void noModuleUsesAnotherModulesInternals() {
    assertThat(PROJECT.violations()).isEmpty();
  }

  @Test
  void modulesUseEachOtherInNoCircle() {
    assertThat(PROJECT.cycles(true)).isEmpty();
  }

  @Test
  void coresApiIsWhatModuleInfoExports() {
    assertThat(PROJECT.exported("pgjobs-core"))
        .contains("io.pgjobs", "io.pgjobs.worker")
        .doesNotContain("io.pgjobs.store", "io.pgjobs.notify", "io.pgjobs.tracing");
    assertThat(PROJECT.exported("pgjobs-server")).containsExactly("io.pgjobs.server");
  }
}
