package io.pgjobs.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.config.DatabaseUrl;
import io.pgjobs.testkit.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Keeps the harness working: every workload at a tiny size, both systems, a table at the end. No timing asserted. */
class BenchSmokeTest {
  static TestDatabase db;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create();
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Test
  void sweepMeasuresEverySettingForEverySeriesAndDrawsTheChart(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    BenchRunner runner = new BenchRunner(DatabaseUrl.parse(db.jdbcUrl()), 0.01, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));

    List<BenchResult> results = runner.sweep(1, r -> {});

    assertThat(results).hasSize(BenchRunner.SWEEP_POINTS.size() * 3);
    assertThat(results).extracting(BenchResult::jobs).containsAll(BenchRunner.SWEEP_POINTS);
    assertThat(results).allSatisfy(r -> assertThat(r.jobsPerS()).isPositive());
    assertThat(Report.sweepTable(results)).startsWith("| N |").contains("| 1000 |");
    java.nio.file.Path chart = dir.resolve("sweep.png");
    SweepChart.write(results, chart);
    java.awt.image.BufferedImage image = javax.imageio.ImageIO.read(chart.toFile());
    assertThat(image.getWidth()).isEqualTo(900);
    assertThat(image.getHeight()).isEqualTo(520);
  }

  @Test
  void everyWorkloadRunsForPgjobsAndTheRawReferenceAndIsReported() throws Exception {
    ByteArrayOutputStream progress = new ByteArrayOutputStream();
    List<BenchResult> sunk = new ArrayList<>();
    BenchRunner runner =
        new BenchRunner(DatabaseUrl.parse(db.jdbcUrl()), 0.01, new PrintStream(progress, true, StandardCharsets.UTF_8));

    List<BenchResult> results = runner.run(Workload.values(), 1, sunk::add);

    assertThat(sunk).isEqualTo(results);
    for (Workload w : Workload.values()) {
      assertThat(results).filteredOn(r -> r.workload().equals(w.name()) && r.system().equals("pgjobs")).isNotEmpty();
      assertThat(results).filteredOn(r -> r.workload().equals(w.name()) && r.system().equals("raw")).isNotEmpty();
    }
    assertThat(results).filteredOn(r -> !r.workload().equals("W4")).allSatisfy(r -> assertThat(r.jobsPerS()).isPositive());
    assertThat(results).filteredOn(r -> r.workload().equals("W4")).allSatisfy(r -> assertThat(r.p99Ms()).isGreaterThanOrEqualTo(r.p50Ms()));
    String table = Report.table(results);
    assertThat(table).contains("| W1 | pgjobs |", "| W3 | raw | claim 1000 + DELETE |", "vs raw reference");
    assertThat(progress.toString(StandardCharsets.UTF_8)).contains("W3 drain", "run 1 of 1");
    assertThat(db.queryLong("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'bench_%'")).isZero();
  }
}
