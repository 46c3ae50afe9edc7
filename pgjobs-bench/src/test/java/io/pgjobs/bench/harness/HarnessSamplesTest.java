package io.pgjobs.bench.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/** The adapter's JSONL lines as the harness's CONTRIBUTING_ADAPTERS.md writes them, and its settings. No database. */
class HarnessSamplesTest {
  private static final Instant T = Instant.parse("2026-04-17T09:00:10Z");

  @Test
  void sampleLineIsTheContractsShapeWithMillisecondsAlways() {
    assertThat(HarnessSamples.sample(T, "claim_p99_ms", 4.2, 30, 0))
        .isEqualTo(
            "{\"t\":\"2026-04-17T09:00:10.000Z\",\"system\":\"pgjobs\",\"kind\":\"adapter\",\"subject_kind\":\"adapter\","
                + "\"subject\":\"\",\"metric\":\"claim_p99_ms\",\"value\":4.2,\"window_s\":30,\"instance_id\":0}");
  }

  @Test
  void rateOverAnEmptyIntervalIsWrittenAsZeroNotNaN() {
    assertThat(HarnessSamples.sample(T, "enqueue_rate", Double.NaN, 5, 0)).contains("\"value\":0,");
    assertThat(HarnessSamples.sample(T, "enqueue_rate", 12000.0, 5, 0))
        .contains("\"value\":12000,");
  }

  @Test
  void descriptorNamesTablesAndEscapesTheVersion() {
    String line = HarnessSamples.descriptor("pgjobs@\"x\\y", "23", "pgjobs_bench", T);

    assertThat(line)
        .isEqualTo("{\"kind\":\"descriptor\",\"system\":\"pgjobs\","
            + "\"event_tables\":[\"pgjobs.jobs\",\"pgjobs.finished_jobs\"],\"extensions\":[],"
            + "\"version\":\"pgjobs@\\\"x\\\\y\",\"schema_version\":\"23\",\"db_name\":\"pgjobs_bench\","
            + "\"started_at\":\"2026-04-17T09:00:10.000Z\"}");
  }

  @Test
  void descriptorMatchesTheStaticManifest() throws Exception {
    // The harness fails the run when the descriptor's tables are not a superset of adapter.json's.
    String manifest = Files.readString(Path.of("harness/adapter.json")).replaceAll("\\s", "");

    assertThat(manifest)
        .contains("\"system\":\"" + HarnessSamples.SYSTEM + "\"")
        .contains("\"db_name\":\"" + HarnessSamples.DB_NAME + "\"")
        .contains(
            "\"event_tables\":[\"" + String.join("\",\"", HarnessSamples.EVENT_TABLES) + "\"]")
        .contains("\"extensions\":[]");
  }

  @Test
  void rollingLatencyForgetsTicksOlderThanItsWindow() {
    HarnessSamples.RollingLatency latency = new HarnessSamples.RollingLatency(2);
    assertThat(latency.percentileMs(99)).isZero();

    latency.add(tick(90_000));
    latency.add(tick(1_000));
    assertThat(latency.percentileMs(100)).isBetween(89.9, 90.1);

    latency.add(tick(2_000));
    assertThat(latency.percentileMs(100)).isBetween(1.99, 2.01);
    assertThat(latency.percentileMs(50)).isBetween(0.99, 1.01);
  }

  @Test
  void settingsTakeTheContractsDefaults() {
    HarnessAdapterMain.Settings s =
        HarnessAdapterMain.Settings.fromEnvironment(Map.of("DATABASE_URL", "postgres://u@h/db"));

    assertThat(s.depthTarget()).isFalse();
    assertThat(s.batchMax()).isEqualTo(128);
    assertThat(s.targetDepth()).isEqualTo(1000);
    assertThat(s.workerCount()).isEqualTo(32);
    assertThat(s.workMs()).isEqualTo(1);
    assertThat(s.sampleEverySeconds()).isEqualTo(5);
    assertThat(s.observer()).isTrue();
    assertThat(s.idempotentRetry()).isFalse();
  }

  @Test
  void idempotentRetryIsChosenByName() {
    assertThat(HarnessAdapterMain.Settings.fromEnvironment(
                Map.of("DATABASE_URL", "postgres://u@h/db", "PGJOBS_ENQUEUE_RETRY", "idempotent"))
            .idempotentRetry())
        .isTrue();
  }

  @Test
  void badSettingNamesTheVariableAndWhatIsAllowed() {
    assertThatThrownBy(() -> HarnessAdapterMain.Settings.fromEnvironment(
            Map.of("DATABASE_URL", "postgres://u@h/db", "PRODUCER_MODE", "burst")))
        .hasMessage("PRODUCER_MODE 'burst' is not supported; allowed: fixed, depth-target");
    assertThatThrownBy(() -> HarnessAdapterMain.Settings.fromEnvironment(
            Map.of("DATABASE_URL", "postgres://u@h/db", "WORKER_COUNT", "0")))
        .hasMessage("WORKER_COUNT 0 is out of range; allowed: 1 to 10000");
    assertThatThrownBy(() -> HarnessAdapterMain.Settings.fromEnvironment(
            Map.of("DATABASE_URL", "postgres://u@h/db", "PGJOBS_ENQUEUE_RETRY", "always")))
        .hasMessage("PGJOBS_ENQUEUE_RETRY 'always' is not supported; allowed: none, idempotent");
    assertThatThrownBy(() -> HarnessAdapterMain.Settings.fromEnvironment(Map.of()))
        .hasMessageStartingWith("DATABASE_URL must be set");
  }

  @Test
  void enqueueTokenGivesItsCountAndAnythingElseNone() {
    assertThat(HarnessAdapterMain.parseToken("ENQUEUE 128")).isEqualTo(128);
    assertThat(HarnessAdapterMain.parseToken("ENQUEUE x")).isZero();
    assertThat(HarnessAdapterMain.parseToken("hello")).isZero();
  }

  private static Histogram tick(long micros) {
    Histogram h = new Histogram(3);
    h.recordValue(micros);
    return h;
  }
}
