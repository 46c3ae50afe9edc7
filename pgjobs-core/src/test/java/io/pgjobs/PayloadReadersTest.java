package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.json.PayloadCodec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A worker builds each registered payload type's reader when it starts, not at its first job (W4: the
 * first job after a start waited 27–45 ms, most of it Jackson looking the class over). Building it early
 * must change nothing else: a type Jackson cannot read still lets the worker start, and its jobs fail
 * as {@code invalid_payload}, as before.
 */
class PayloadReadersTest extends PgJobsTestBase {
  /** Jackson cannot construct an interface: there is no creator to call. */
  interface Unreadable {
    int x();
  }

  /** Jackson can find no creator here either: a constructor with an unnamed parameter, no default one. */
  static final class NoCreator {
    final int x;

    private NoCreator(int x, boolean unused) {
      this.x = x;
    }
  }

  @Test
  void aWorkerWhosePayloadTypesJacksonCannotReadStartsAndFailsThoseJobsAsInvalidPayload() {
    JobType<Unreadable> unreadable = JobType.of("unreadable_payload", Unreadable.class);
    JobType<NoCreator> noCreator = JobType.of("no_creator_payload", NoCreator.class);
    List<Object> handled = new CopyOnWriteArrayList<>();
    start(worker()
        .pollInterval(Duration.ofMillis(50))
        .register(unreadable, (ctx, p) -> handled.add(p))
        .register(noCreator, (ctx, p) -> handled.add(p))
        .register(NUMBERED, (ctx, p) -> handled.add(p)));

    UUID a = client
        .enqueue("unreadable_payload", Map.of("x", 1), EnqueueOptions.DEFAULTS)
        .job()
        .id();
    UUID b = client
        .enqueue("no_creator_payload", Map.of("x", 2), EnqueueOptions.DEFAULTS)
        .job()
        .id();
    UUID c = client.enqueue(NUMBERED, new Numbered(3)).job().id();

    for (UUID id : List.of(a, b)) {
      Job failed = awaitState(id, JobState.FAILED);
      assertThat(failed.attempts())
          .isEqualTo(1); // a payload that does not fit never will: no retry
      assertThat(failed.errors())
          .singleElement()
          .satisfies(e -> assertThat(e.kind()).isEqualTo("invalid_payload"));
    }
    awaitState(c, JobState.SUCCEEDED);
    assertThat(handled).containsExactly(new Numbered(3));
  }

  @Test
  void preparingATypeReadsPayloadsExactlyAsWithout() {
    PayloadCodec prepared = new PayloadCodec(PayloadCodec.DEFAULT_MAPPER);
    PayloadCodec unprepared = new PayloadCodec(PayloadCodec.DEFAULT_MAPPER);
    prepared.prepare(Numbered.class);
    prepared.prepare(Unreadable.class); // does not throw: the error belongs to the first payload
    prepared.prepare(tools.jackson.databind.JsonNode.class);
    for (String json : List.of("{\"n\":7}", "{\"n\":7,\"newer\":true}", "{}")) {
      assertThat(prepared.decode(json, Numbered.class))
          .isEqualTo(unprepared.decode(json, Numbered.class));
    }
    assertThat(prepared.decode("{\"a\":[1]}", tools.jackson.databind.JsonNode.class))
        .isEqualTo(unprepared.decode("{\"a\":[1]}", tools.jackson.databind.JsonNode.class));
  }
}
