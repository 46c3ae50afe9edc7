package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.server.ApiTestSupport.Response;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * {@code GET /workers} says what the engine believes: a worker silent for longer than its own dead-worker
 * threshold is presumed dead ({@code alive: false}) while its row is still listed.
 */
class WorkersApiTest {
  private static ApiTestSupport api;

  @BeforeAll
  static void start() {
    api = ApiTestSupport.start();
  }

  @AfterAll
  static void stop() {
    api.close();
  }

  /** That long ago, and before the server started (silence counts only while the server is up). */
  private static String ago(String interval) {
    return "least(now(), pg_postmaster_start_time()) - interval '" + interval + "'";
  }

  @Test
  void aWorkerSilentPastItsThresholdIsListedAsPresumedDead() {
    api.db.execute(
        "INSERT INTO pgjobs.workers (id, host, pid, queues, job_types, started_at, last_heartbeat, dead_after_ms)"
            + " VALUES ('beating', 'h', 1, '{}', '[]', now(), now(), 20000),"
            + " ('killed', 'h', 2, '{}', '[]', now() - interval '5 minutes', " + ago("4 minutes")
            + ", 20000),"
            + " ('patient', 'h', 3, '{}', '[]', now() - interval '5 minutes', now() - interval '4 minutes', 600000),"
            + " ('older-version', 'h', 4, '{}', '[]', now() - interval '5 minutes', "
            + ago("30 seconds") + ", NULL)");
    Response r = api.get("/workers");
    assertThat(r.status()).isEqualTo(200);
    Map<String, Boolean> alive = new HashMap<>();
    for (JsonNode w : ApiTestSupport.JSON.readTree(r.body()).path("workers")) {
      alive.put(w.path("id").asText(), w.path("alive").asBoolean());
    }
    assertThat(alive)
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("beating", true, "killed", false, "patient", true, "older-version", false));
  }
}
