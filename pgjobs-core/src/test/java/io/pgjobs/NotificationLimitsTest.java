package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.pgjobs.events.JobEventBatch;
import io.pgjobs.events.JobEventListener;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.testkit.JobRows;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Job event notifications stay under PostgreSQL's 8,000-byte NOTIFY payload limit whatever the job
 * type and queue names, so that sending one never aborts the statement that changed the jobs: bulk
 * enqueue, single enqueue, claim and success batches, cancelAll, retryAll, any UPDATE of many rows'
 * state (the statement trigger), progress. Each event still carries the true count of jobs changed and
 * says {@code "truncated": true} when it lists fewer.
 */
class NotificationLimitsTest extends PgJobsTestBase {
  /** PostgreSQL refuses a NOTIFY payload of this many bytes or more. */
  private static final int PAYLOAD_LIMIT = 8_000;

  private static final int MANY = 3_000;
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final JsonMapper JSON = JsonMapper.builder().build();

  /** Names of the longest length pgjobs accepts (255 of letters, digits and {@code _ . : - /}). */
  private static final String LONG_TYPE_NAME = "type_" + "t".repeat(250);

  private static final String LONG_QUEUE = "queue/" + "q".repeat(249);

  public record Note(int n) {}

  private static final JobType<Note> LONG_TYPE = JobType.of(LONG_TYPE_NAME, Note.class);
  private static final EnqueueOptions ON_LONG_QUEUE =
      EnqueueOptions.builder().queue(LONG_QUEUE).build();

  @Test
  void namesAreAsLongAsPgjobsAllows() {
    assertThat(LONG_TYPE_NAME).hasSize(255);
    assertThat(LONG_QUEUE).hasSize(255);
    assertThat(LONG_TYPE.name()).isEqualTo(LONG_TYPE_NAME);
  }

  @Test
  void bulkEnqueueOfThousandsOfJobsWithLongNamesSucceedsAndAnnouncesTheTrueCount()
      throws Exception {
    List<JobEventBatch> batches = new CopyOnWriteArrayList<>();
    try (RawEvents raw = new RawEvents();
        JobEventListener listener = new JobEventListener(db.dataSource(), client.eventsChannel())) {
      listener.subscribe(batches::add);
      listener.start();
      await().atMost(WAIT).until(listener::isListening);

      List<UUID> ids = client.enqueueAll(LONG_TYPE, notes(MANY), ON_LONG_QUEUE);

      assertThat(count("pgjobs.jobs")).isEqualTo(MANY);
      JsonNode event =
          raw.awaitOne("the bulk enqueue's event", e -> e.path("count").asLong() == MANY);
      assertThat(event.path("op").asString()).isEqualTo("state");
      assertThat(event.path("truncated").asBoolean()).isTrue();
      assertThat(event.path("jobs").size()).isBetween(1, MANY - 1);
      for (JsonNode job : event.path("jobs")) {
        assertThat(ids).contains(UUID.fromString(job.path("id").asString()));
        assertThat(job.path("state").asString()).isEqualTo("queued");
        assertThat(job.path("type").asString()).isEqualTo(LONG_TYPE_NAME);
        assertThat(job.path("queue").asString()).isEqualTo(LONG_QUEUE);
      }

      // The Java listener reports the same batch as partial, with the true total.
      await().atMost(WAIT).until(() -> batches.stream().anyMatch(b -> b.total() == MANY));
      JobEventBatch batch =
          batches.stream().filter(b -> b.total() == MANY).findFirst().orElseThrow();
      assertThat(batch.truncated()).isTrue();
      assertThat(batch.events()).isNotEmpty().hasSize(event.path("jobs").size()).allSatisfy(e -> {
        assertThat(ids).contains(e.jobId());
        assertThat(e.type()).isEqualTo(LONG_TYPE_NAME);
        assertThat(e.queue()).isEqualTo(LONG_QUEUE);
        assertThat(e.state()).isEqualTo(JobState.QUEUED);
      });
    }
  }

  @Test
  void singleEnqueueWithLongNamesListsTheWholeJob() throws Exception {
    try (RawEvents raw = new RawEvents()) {
      UUID id = client.enqueue(LONG_TYPE, new Note(1), ON_LONG_QUEUE).job().id();

      JsonNode event = raw.awaitOne("the enqueue's event", e -> e.path("count").asLong() == 1);
      assertThat(event.path("truncated").asBoolean()).isFalse();
      assertThat(event.path("jobs").size()).isEqualTo(1);
      JsonNode job = event.path("jobs").get(0);
      assertThat(job.path("id").asString()).isEqualTo(id.toString());
      assertThat(job.path("type").asString()).isEqualTo(LONG_TYPE_NAME);
      assertThat(job.path("queue").asString()).isEqualTo(LONG_QUEUE);
    }
  }

  @Test
  void workerClaimingAThousandJobsWithLongNamesAtATimeSucceedsThemAll() throws Exception {
    insertQueued(MANY, LONG_TYPE_NAME, LONG_QUEUE);
    try (RawEvents raw = new RawEvents()) {
      start(worker()
          .register(LONG_TYPE, (ctx, note) -> null)
          .queue(LONG_QUEUE, 1_000)
          .claimBatch(1_000)
          .completionBatch(1_000));

      await("all " + MANY + " jobs succeeded")
          .atMost(WAIT)
          .pollInterval(Duration.ofMillis(200))
          .until(() ->
              count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'succeeded'") == MANY);
      assertThat(count("pgjobs.jobs")).isZero();

      // Every claim and every success batch announced itself with its true count (their sum is
      // every job), and at least one of them listed only part of its jobs.
      raw.await(
          "claim and success events adding up to every job",
          events ->
              sumOfCounts(events, "running") == MANY && sumOfCounts(events, "succeeded") == MANY);
      assertThat(raw.events())
          .anySatisfy(e -> assertThat(e.path("truncated").asBoolean()).isTrue());
    }
  }

  @Test
  void cancelAllOfThousandsOfWaitingJobsWithLongNamesSucceeds() throws Exception {
    insertQueued(MANY, LONG_TYPE_NAME, LONG_QUEUE);
    try (RawEvents raw = new RawEvents()) {
      CancelCounts counts = client.cancelAll(Set.of(), Set.of(LONG_QUEUE), Set.of());

      assertThat(counts.cancelled()).isEqualTo(MANY);
      assertThat(count("SELECT count(*) FROM pgjobs.finished_jobs WHERE state = 'cancelled'"))
          .isEqualTo(MANY);
      JsonNode event =
          raw.awaitOne("the cancellation's event", e -> e.path("count").asLong() == MANY);
      assertThat(event.path("truncated").asBoolean()).isTrue();
      assertThat(event.path("jobs"))
          .allSatisfy(j -> assertThat(j.path("state").asString()).isEqualTo("cancelled"));
    }
  }

  @Test
  void retryAllOfThousandsOfFailedJobsWithLongNamesSucceeds() throws Exception {
    // The failed jobs are written without the insert trigger: this test is about retryAll's own
    // notification (the trigger of finished_jobs has tests of its own above).
    db.execute("ALTER TABLE pgjobs.finished_jobs DISABLE TRIGGER finished_jobs_events_insert");
    JobRows.in(db)
        .type(LONG_TYPE_NAME)
        .queue(LONG_QUEUE)
        .payload("{\"n\": 1}")
        .state("failed")
        .attempts(3)
        .insert(MANY);
    db.execute("ALTER TABLE pgjobs.finished_jobs ENABLE TRIGGER finished_jobs_events_insert");
    try (RawEvents raw = new RawEvents()) {
      long retried = client.retryAll(Set.of(LONG_TYPE_NAME), Set.of(), Set.of(JobState.FAILED));

      assertThat(retried).isEqualTo(MANY);
      assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'queued'"))
          .isEqualTo(MANY);
      JsonNode event = raw.awaitOne("the retry's event", e -> e.path("count").asLong() == MANY);
      assertThat(event.path("truncated").asBoolean()).isTrue();
      assertThat(event.path("jobs"))
          .allSatisfy(j -> assertThat(j.path("state").asString()).isEqualTo("queued"));
    }
  }

  @Test
  void anUpdateOfManyRowsStatesFiresABoundedEvent() throws Exception {
    insertQueued(MANY, LONG_TYPE_NAME, LONG_QUEUE);
    try (RawEvents raw = new RawEvents()) {
      db.execute("UPDATE pgjobs.jobs SET state = 'retrying'");

      assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'retrying'"))
          .isEqualTo(MANY);
      JsonNode event = raw.awaitOne("the update's event", e -> e.path("count").asLong() == MANY);
      assertThat(event.path("truncated").asBoolean()).isTrue();
      assertThat(event.path("jobs").size()).isBetween(1, 50);
    }
  }

  @Test
  void namesWrittenAroundPgjobsThatTakeTheMostBytesStillGiveABoundedEventListingAJob()
      throws Exception {
    // The schema allows any 255 characters; a control character takes 6 bytes in JSON (\u0001), an
    // emoji 4. pgjobs' own names are ASCII, but the trigger fires for any statement.
    insertQueued(200, "\u0001".repeat(255), Character.toString(128_512).repeat(255));
    try (RawEvents raw = new RawEvents()) {
      db.execute("UPDATE pgjobs.jobs SET state = 'retrying'");

      JsonNode event = raw.awaitOne("the update's event", e -> e.path("count").asLong() == 200);
      assertThat(event.path("truncated").asBoolean()).isTrue();
      assertThat(event.path("jobs").size()).isGreaterThanOrEqualTo(1);
      assertThat(event.path("jobs").get(0).path("type").asString()).isEqualTo("\u0001".repeat(255));
      assertThat(event.path("jobs").get(0).path("queue").asString())
          .isEqualTo("\uD83D\uDE00".repeat(255));
    }
  }

  @Test
  void progressMessageOfAThousandEmojiIsWrittenAndAnnounced() throws Exception {
    String message = "\uD83D\uDE00".repeat(1_000); // 4,000 bytes in UTF-8
    UUID id = client.enqueue(LONG_TYPE, new Note(1), ON_LONG_QUEUE).job().id();
    try (RawEvents raw = new RawEvents()) {
      start(worker()
          .register(LONG_TYPE, (ctx, note) -> {
            ctx.progress(50, message);
            return null;
          })
          .queue(LONG_QUEUE, 1)
          .progressThrottle(Duration.ZERO));

      awaitState(id, JobState.SUCCEEDED);
      JsonNode event =
          raw.awaitOne("the progress event", e -> e.path("op").asString().equals("progress"));
      assertThat(event.path("jobs").get(0).path("message").asString()).isEqualTo(message);
      assertThat(client.get(id).orElseThrow().progressMessage()).isEqualTo(message);
    }
  }

  @Test
  void progressMessageThatTakesTheMostBytesIsCutInTheEventButStoredWhole() throws Exception {
    // The worst case: a message of 1,000 characters that each take 6 bytes in JSON, on a job whose
    // names (written around pgjobs) do too. Before, the event was over 9,000 bytes and the progress
    // write failed.
    UUID id = UUID.randomUUID();
    JobRows.in(db)
        .id(id)
        .type("\u0001".repeat(255))
        .queue("\u0002".repeat(255))
        .state("running")
        .claimToken(7)
        .insert();
    ExecutionStore store = new ExecutionStore(
        db.dataSource(), "pgjobs", new PayloadCodec(PayloadCodec.DEFAULT_MAPPER));
    String message = "\u0001".repeat(1_000);
    try (RawEvents raw = new RawEvents()) {
      assertThat(store.progress(id, 7, 50, message)).isTrue();

      JsonNode event =
          raw.awaitOne("the progress event", e -> e.path("op").asString().equals("progress"));
      String announced = event.path("jobs").get(0).path("message").asString();
      assertThat(announced).isNotEmpty();
      assertThat(message).startsWith(announced);
      assertThat(event.path("jobs").get(0).path("progress").asInt()).isEqualTo(50);
      assertThat(client.get(id).orElseThrow().progressMessage()).isEqualTo(message);
    }
  }

  @Test
  void aMarkTooLongForANotificationIsRefusedBeforeItIsSent() throws Exception {
    try (JobEventListener listener =
        new JobEventListener(db.dataSource(), client.eventsChannel())) {
      List<String> marks = new CopyOnWriteArrayList<>();
      listener.onMark(marks::add);
      listener.start();
      await().atMost(WAIT).until(listener::isListening);

      assertThatThrownBy(() -> listener.sendMark("m".repeat(PAYLOAD_LIMIT)))
          .isInstanceOf(IllegalArgumentException.class);
      listener.sendMark("short");
      await().atMost(WAIT).until(() -> marks.contains("short"));
    }
  }

  // ---------------------------------------------------------------- helpers

  private static List<Note> notes(int n) {
    return IntStream.range(0, n).mapToObj(Note::new).toList();
  }

  /** Inserts due jobs directly (an INSERT around pgjobs sends no notification). */
  private static void insertQueued(int n, String type, String queue) {
    JobRows.in(db).type(type).queue(queue).payload("{\"n\": 1}").insert(n);
  }

  private static long sumOfCounts(List<JsonNode> events, String state) {
    return events.stream()
        .filter(e -> e.path("jobs").size() > 0
            && e.path("jobs").get(0).path("state").asString().equals(state))
        .mapToLong(e -> e.path("count").asLong())
        .sum();
  }

  /**
   * A plain LISTEN connection on the events channel. Every payload it gets is checked: under the
   * NOTIFY limit, JSON, and (for job events) a count at least the number of jobs listed, each job with
   * an id, state, type and queue.
   */
  private static final class RawEvents implements AutoCloseable {
    private final Connection connection;
    private final List<JsonNode> events = new ArrayList<>();

    RawEvents() throws SQLException {
      connection = DriverManager.getConnection(db.jdbcUrl());
      try (Statement st = connection.createStatement()) {
        st.execute("LISTEN " + client.eventsChannel());
      }
    }

    List<JsonNode> events() {
      return events;
    }

    /** Waits until the events received so far satisfy {@code done}. */
    void await(String what, Predicate<List<JsonNode>> done) {
      org.awaitility.Awaitility.await(what)
          .atMost(WAIT)
          .pollDelay(Duration.ZERO)
          .pollInterval(Duration.ofMillis(10))
          .until(() -> {
            receive();
            return done.test(events);
          });
    }

    /** Waits for one event matching {@code which} and returns it. */
    JsonNode awaitOne(String what, Predicate<JsonNode> which) {
      await(what, es -> es.stream().anyMatch(which));
      return events.stream().filter(which).findFirst().orElseThrow();
    }

    private void receive() throws SQLException {
      PGNotification[] received = connection.unwrap(PGConnection.class).getNotifications(100);
      if (received == null) {
        return;
      }
      for (PGNotification n : received) {
        String payload = n.getParameter();
        assertThat(payload.getBytes(StandardCharsets.UTF_8).length)
            .as("payload bytes")
            .isLessThan(PAYLOAD_LIMIT);
        JsonNode event = JSON.readTree(payload);
        if (event.has("mark")) {
          continue;
        }
        JsonNode jobs = event.path("jobs");
        assertThat(jobs.isArray()).as("jobs is an array: %s", payload).isTrue();
        assertThat(event.path("count").asLong()).as("count").isGreaterThanOrEqualTo(jobs.size());
        assertThat(event.path("truncated").asBoolean())
            .as("truncated")
            .isEqualTo(event.path("count").asLong() > jobs.size());
        Set<String> ids = new HashSet<>();
        for (JsonNode job : jobs) {
          assertThat(ids.add(job.path("id").asString())).as("listed once").isTrue();
          UUID.fromString(job.path("id").asString());
          assertThat(JobState.parse(job.path("state").asString())).isNotNull();
          assertThat(job.path("type").asString()).isNotEmpty();
          assertThat(job.path("queue").asString()).isNotEmpty();
        }
        events.add(event);
      }
    }

    @Override
    public void close() throws SQLException {
      connection.close();
    }
  }
}
