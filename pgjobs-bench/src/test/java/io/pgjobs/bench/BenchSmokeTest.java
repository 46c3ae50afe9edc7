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
    // The --out lines carry the documented snake_case names.
    assertThat(results.getFirst().toJsonLine())
        .contains("\"system\":", "\"workload\":", "\"jobs_per_s\":", "\"p50_ms\":", "\"p95_ms\":", "\"p99_ms\":",
            "\"peak_rss_mib\":")
        .doesNotContain("jobsPerS");
    for (Workload w : Workload.values()) {
      assertThat(results).filteredOn(r -> r.workload().equals(w.name()) && r.system().equals("pgjobs")).isNotEmpty();
      if (w != Workload.W3S) {
        assertThat(results).filteredOn(r -> r.workload().equals(w.name()) && r.system().equals("raw")).isNotEmpty();
      }
    }
    assertThat(results).filteredOn(r -> !r.workload().equals("W4")).allSatisfy(r -> assertThat(r.jobsPerS()).isPositive());
    assertThat(results).filteredOn(r -> r.workload().equals("W4")).allSatisfy(r -> assertThat(r.p99Ms()).isGreaterThanOrEqualTo(r.p50Ms()));
    // W3 and W3S: pgjobs' workers ran as processes of their own, whose peak RSS was read.
    List<String> workerRows = List.of(
        "W3 " + BenchRunner.W3_ONE_PROCESS,
        "W3 " + BenchRunner.W3_TWO_PROCESSES,
        "W3S " + BenchRunner.W3S_EMPTY,
        "W3S " + BenchRunner.w3sFilledVariant(0.01));
    for (String row : workerRows) {
      assertThat(results).filteredOn(r -> r.system().equals("pgjobs") && (r.workload() + " " + r.variant()).equals(row))
          .as(row).singleElement()
          .satisfies(r -> {
            assertThat(r.jobsPerS()).isPositive();
            assertThat(r.peakRssMib()).isPositive();
          });
    }
    BenchResult filled = results.stream()
        .filter(r -> r.variant().equals(BenchRunner.w3sFilledVariant(0.01))).findFirst().orElseThrow();
    assertThat(filled.plan()).contains("jobs_ready_idx", "force_custom_plan", "force_generic_plan");
    assertThat(results).filteredOn(r -> r != filled).allSatisfy(r -> assertThat(r.plan()).isNull());
    String table = Report.table(results);
    assertThat(table).contains("| W1 | pgjobs |", "| W3 | raw | claim 1000 + DELETE |", "vs raw reference",
        "| W3 | pgjobs | default settings, 2 worker processes |", "| W3S | pgjobs | " + BenchRunner.W3S_EMPTY + " |",
        "| W3S | pgjobs | " + BenchRunner.w3sFilledVariant(0.01) + " |");
    assertThat(progress.toString(StandardCharsets.UTF_8)).contains("W3 drain", "run 1 of 1", "W3S fill", "jobs_ready_idx");
    assertThat(db.queryLong("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'bench_%'")).isZero();
    assertThat(ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
        .filter(p -> p.info().commandLine().orElse("").contains(BenchWorkerMain.class.getName())))
        .as("worker processes left running").isEmpty();
  }

  @Test
  void allMeansW1ToW4AndW3sRunsOnlyWhenNamed() {
    assertThat(Workload.parse("all")).containsExactly(Workload.W1, Workload.W2, Workload.W3, Workload.W4);
    assertThat(Workload.parse("w3s")).containsExactly(Workload.W3S);
  }

  @Test
  void aWorkerProcessThatCannotStartIsReportedWithItsStderr() throws Exception {
    // A schema name the worker refuses: the process exits before READY, and the error quotes its stderr.
    try (WorkerProcess child = WorkerProcess.start("bad-worker", DatabaseUrl.parse(db.jdbcUrl()), "Not-A-Schema")) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> child.awaitReady(java.time.Duration.ofSeconds(30)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("bad-worker")
          .hasMessageContaining("before it was ready")
          .hasMessageContaining("schema");
    }
  }

  @Test
  void aWorkerProcessExitsWhenItsStdinCloses() throws Exception {
    String schema = "bench_stdin_" + Long.toHexString(System.nanoTime());
    io.pgjobs.JobClient.builder(db.dataSource()).schema(schema).build().migrate();
    try (WorkerProcess child = WorkerProcess.start("stdin-worker", DatabaseUrl.parse(db.jdbcUrl()), schema)) {
      child.awaitReady(java.time.Duration.ofSeconds(30));
      ProcessHandle handle = ProcessHandle.of(child.pid()).orElseThrow();
      // What the child sees when the bench dies: its stdin closes, without a STOP line.
      child.closeStdin();
      assertThat(handle.onExit().get(30, java.util.concurrent.TimeUnit.SECONDS).isAlive()).isFalse();
    } finally {
      db.execute("DROP SCHEMA " + schema + " CASCADE");
    }
  }
}
