package io.pgjobs.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.testkit.TestDatabase;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@code serve} and {@code demo} refuse to expose an unauthenticated API to the network unless told to. */
class ServeSafetyTest {
  static TestDatabase db;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create();
  }

  @AfterAll
  static void dropDatabase() {
    if (db != null) {
      db.close();
    }
  }

  @Test
  void serveOnEveryInterfaceWithoutTokensIsRefusedSayingWhyAndWhatToDo() {
    CommandRun run = CommandRun.of(
        Map.of("DATABASE_URL", db.jdbcUrl()), "serve", "--host", "0.0.0.0", "--port", "0");

    assertThat(run.exitCode()).as(run.toString()).isEqualTo(1);
    assertThat(run.err())
        .contains(
            "refusing to listen on 0.0.0.0 without authentication",
            "--api-tokens",
            "--insecure",
            "cancel");
  }

  @Test
  void demoOnEveryInterfaceWithoutTokensIsRefusedToo() {
    CommandRun run = CommandRun.of(
        Map.of("DATABASE_URL", db.jdbcUrl()),
        "demo",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--samples",
        "0");

    assertThat(run.exitCode()).as(run.toString()).isEqualTo(1);
    assertThat(run.err()).contains("refusing to listen on 0.0.0.0", "--insecure");
  }
}
