package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Bad input is rejected with an {@link InvalidJobException} naming the field, before anything is stored
 * (row counts of every pgjobs table are unchanged).
 */
class EnqueueValidationTest extends PgJobsTestBase {

  /** A payload Jackson cannot write: its only property throws. */
  public static final class ExplodingPayload {
    public String getValue() {
      throw new IllegalStateException("getter exploded");
    }
  }

  /** A class Jackson finds no property in. */
  public static final class PrivateFieldsOnly {
    @SuppressWarnings("unused")
    private final int secret = 42;
  }

  /** The recommended payload of a job that needs no data. */
  public record NoData() {}

  private static List<Long> tableCounts() {
    return List.of(count("pgjobs.jobs"), count("pgjobs.finished_jobs"), count("pgjobs.job_keys"));
  }

  /** Asserts {@code call} throws InvalidJobException for {@code field} and stores nothing; returns it. */
  private static InvalidJobException assertRejected(String field, ThrowingCallable call) {
    List<Long> before = tableCounts();
    InvalidJobException e = catchThrowableOfType(InvalidJobException.class, call);
    assertThat(e).as("expected InvalidJobException for %s", field).isNotNull();
    assertThat(e.field()).isEqualTo(field);
    assertThat(e.getMessage()).startsWith(field + ": ");
    assertThat(tableCounts()).as("nothing stored").isEqualTo(before);
    return e;
  }

  private static void enqueueWith(EnqueueOptions.Builder options) {
    client.enqueue(NUMBERED, new Numbered(1), options.build());
  }

  @ParameterizedTest
  @ValueSource(ints = {0, -1, 1001, Integer.MIN_VALUE})
  void maxAttemptsOutsideOneToAThousandIsRejected(int maxAttempts) {
    InvalidJobException e = assertRejected(
        "maxAttempts", () -> enqueueWith(EnqueueOptions.builder().maxAttempts(maxAttempts)));
    assertThat(e.getMessage()).contains("between 1 and 1000").contains("was " + maxAttempts);
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 1000})
  void maxAttemptsAtTheBoundsIsAccepted(int maxAttempts) {
    Job job = client
        .enqueue(
            NUMBERED,
            new Numbered(1),
            EnqueueOptions.builder().maxAttempts(maxAttempts).build())
        .job();
    assertThat(client.get(job.id()).orElseThrow().maxAttempts()).isEqualTo(maxAttempts);
  }

  @Test
  void jobTypeWithMaxAttemptsBelowOneIsRejected() {
    assertRejected("maxAttempts", () -> NUMBERED.withMaxAttempts(0));
  }

  @Test
  void negativeDelayIsRejected() {
    InvalidJobException e = assertRejected(
        "delay", () -> enqueueWith(EnqueueOptions.builder().delay(Duration.ofMillis(-1))));
    assertThat(e.getMessage()).contains("zero or positive");
  }

  @Test
  void runAtTogetherWithDelayIsRejected() {
    InvalidJobException e = assertRejected(
        "runAt",
        () -> enqueueWith(
            EnqueueOptions.builder().runAt(Instant.now()).delay(Duration.ofSeconds(1))));
    assertThat(e.getMessage()).contains("not both");
  }

  @Test
  void emptyIdempotencyKeyIsRejected() {
    InvalidJobException e = assertRejected(
        "idempotencyKey", () -> enqueueWith(EnqueueOptions.builder().idempotencyKey("")));
    assertThat(e.getMessage()).contains("1 to 255 characters");
  }

  @Test
  void idempotencyKeyLongerThan255CharactersIsRejected() {
    assertRejected(
        "idempotencyKey",
        () -> enqueueWith(EnqueueOptions.builder().idempotencyKey("k".repeat(256))));
    Job job = client
        .enqueue(
            NUMBERED,
            new Numbered(1),
            EnqueueOptions.builder().idempotencyKey("k".repeat(255)).build())
        .job();
    assertThat(job.idempotencyKey()).hasSize(255);
  }

  @Test
  void contextLongerThanTenThousandCharactersIsRejected() {
    InvalidJobException e = assertRejected(
        "context", () -> enqueueWith(EnqueueOptions.builder().context("c".repeat(10_001))));
    assertThat(e.getMessage()).contains("at most 10000");
    Job job = client
        .enqueue(
            NUMBERED,
            new Numbered(1),
            EnqueueOptions.builder().context("c".repeat(10_000)).build())
        .job();
    assertThat(client.get(job.id()).orElseThrow().context()).hasSize(10_000);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "has space", "semi;colon", "ünïcode", "quote'"})
  void invalidQueueNameIsRejected(String queue) {
    InvalidJobException e =
        assertRejected("queue", () -> enqueueWith(EnqueueOptions.builder().queue(queue)));
    assertThat(e.getMessage()).contains("allowed");
  }

  @Test
  void queueNameLongerThan255CharactersIsRejected() {
    assertRejected("queue", () -> enqueueWith(EnqueueOptions.builder().queue("q".repeat(256))));
  }

  @Test
  void zeroOrNegativeTimeoutIsRejected() {
    assertRejected("timeout", () -> enqueueWith(EnqueueOptions.builder().timeout(Duration.ZERO)));
    assertRejected(
        "timeout", () -> enqueueWith(EnqueueOptions.builder().timeout(Duration.ofSeconds(-1))));
  }

  @Test
  void nullTypeIsRejected() {
    assertRejected("type", () -> client.enqueue((JobType<Numbered>) null, new Numbered(1)));
    assertRejected(
        "type", () -> client.enqueue((String) null, Map.of("n", 1), EnqueueOptions.DEFAULTS));
    assertRejected(
        "type", () -> client.enqueueAll(null, List.of(new Numbered(1)), EnqueueOptions.DEFAULTS));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "send email", "send_email!", "tab\there"})
  void invalidTypeNameIsRejected(String name) {
    InvalidJobException byName =
        assertRejected("type", () -> client.enqueue(name, Map.of("n", 1), EnqueueOptions.DEFAULTS));
    assertThat(byName.getMessage()).contains("allowed");
    assertRejected("type", () -> JobType.of(name, Numbered.class));
  }

  @Test
  void typeNameLongerThan255CharactersIsRejected() {
    assertRejected(
        "type", () -> client.enqueue("t".repeat(256), Map.of(), EnqueueOptions.DEFAULTS));
  }

  @Test
  void nullPayloadIsRejected() {
    assertRejected("payload", () -> client.enqueue(NUMBERED, null));
    assertRejected("payload", () -> client.enqueue("numbered", null, EnqueueOptions.DEFAULTS));
    assertRejected(
        "payload", () -> client.enqueue("some_other_service_type", null, EnqueueOptions.DEFAULTS));
  }

  @Test
  void payloadWithNoPropertiesJacksonCanWriteIsRejectedRatherThanStoredAsEmptyObject() {
    // Jackson 3 would write these as {} by default: the job would run with its data silently lost.
    InvalidJobException e = assertRejected(
        "payload", () -> client.enqueue("unknown_type", new Object(), EnqueueOptions.DEFAULTS));
    assertThat(e.getMessage()).contains("java.lang.Object");
    assertRejected(
        "payload",
        () -> client.enqueue("unknown_type", new PrivateFieldsOnly(), EnqueueOptions.DEFAULTS));
    JobType<PrivateFieldsOnly> privateOnly = JobType.of("private_only", PrivateFieldsOnly.class);
    assertRejected("payload", () -> client.enqueue(privateOnly, new PrivateFieldsOnly()));
  }

  @Test
  void payloadWhoseGetterThrowsIsRejected() {
    InvalidJobException e = assertRejected(
        "payload",
        () -> client.enqueue("unknown_type", new ExplodingPayload(), EnqueueOptions.DEFAULTS));
    assertThat(e.getMessage()).contains(ExplodingPayload.class.getName());
    JobType<ExplodingPayload> exploding = JobType.of("exploding", ExplodingPayload.class);
    assertRejected("payload", () -> client.enqueue(exploding, new ExplodingPayload()));
  }

  @Test
  void emptyRecordAndEmptyMapAreValidPayloads() {
    JobType<NoData> noData = JobType.of("no_data", NoData.class);
    Job fromRecord = client.enqueue(noData, new NoData()).job();
    Job fromMap =
        client.enqueue("unknown_type", Map.of(), EnqueueOptions.DEFAULTS).job();
    assertThat(client.get(fromRecord.id()).orElseThrow().payload().isEmpty()).isTrue();
    assertThat(client.get(fromMap.id()).orElseThrow().payload().isEmpty()).isTrue();
  }

  @Test
  void enqueueByNameWithAPayloadThatDoesNotFitTheKnownTypeIsRejected() {
    InvalidJobException e = assertRejected(
        "payload",
        () -> client.enqueue("numbered", Map.of("n", "not a number"), EnqueueOptions.DEFAULTS));
    assertThat(e.getMessage()).contains("does not fit job type 'numbered'");
    assertRejected(
        "payload", () -> client.enqueue("numbered", List.of(1, 2, 3), EnqueueOptions.DEFAULTS));
  }

  @Test
  void enqueueByNameWithAPayloadThatFitsTheKnownTypeGetsItsDefaults() {
    JobClient withDefaults = JobClient.builder(db.dataSource())
        .knownTypes(NUMBERED.withQueue("numbers").withPriority(Priority.HIGH).withMaxAttempts(7))
        .build();
    Job job = withDefaults
        .enqueue("numbered", Map.of("n", 5), EnqueueOptions.DEFAULTS)
        .job();
    assertThat(job.queue()).isEqualTo("numbers");
    assertThat(job.priority()).isEqualTo(Priority.HIGH);
    assertThat(job.maxAttempts()).isEqualTo(7);
    assertThat(job.payload().get("n").asInt()).isEqualTo(5);
  }

  @Test
  void enqueueByNameOfAnUnknownTypeIsStoredQueuedWithThePgjobsDefaults() {
    EnqueuedJob enqueued =
        client.enqueue("billing.reconcile", Map.of("account", 17), EnqueueOptions.DEFAULTS);

    Job stored = client.get(enqueued.job().id()).orElseThrow();
    assertThat(enqueued.replayed()).isFalse();
    assertThat(stored.type()).isEqualTo("billing.reconcile");
    assertThat(stored.state()).isEqualTo(JobState.QUEUED);
    assertThat(stored.queue()).isEqualTo(JobType.DEFAULT_QUEUE);
    assertThat(stored.priority()).isEqualTo(JobType.DEFAULT_PRIORITY);
    assertThat(stored.maxAttempts()).isEqualTo(JobType.DEFAULT_MAX_ATTEMPTS);
    assertThat(stored.attempts()).isZero();
    assertThat(stored.payload().get("account").asInt()).isEqualTo(17);
    assertThat(count("pgjobs.jobs")).isEqualTo(1);
  }

  @Test
  void enqueueAllWithAnIdempotencyKeyIsRejected() {
    assertRejected(
        "idempotencyKey",
        () -> client.enqueueAll(
            NUMBERED,
            List.of(new Numbered(1), new Numbered(2)),
            EnqueueOptions.builder().idempotencyKey("one-for-all").build()));
  }

  @Test
  void enqueueAllWithOneBadPayloadStoresNoneOfThem() {
    List<Numbered> payloads = new java.util.ArrayList<>(List.of(new Numbered(1), new Numbered(2)));
    payloads.add(null);
    assertRejected("payload", () -> client.enqueueAll(NUMBERED, payloads, EnqueueOptions.DEFAULTS));
  }

  @Test
  void payloadByNameThatDoesNotFitItsTypeIsRefusedInJsonTermsWithoutJavaNames() {
    InvalidPayloadException unknown = catchThrowableOfType(
        InvalidPayloadException.class,
        () -> client.enqueue("numbered", Map.of("n", 1, "colour", "red"), EnqueueOptions.DEFAULTS));
    assertThat(unknown.malformed()).isTrue();
    assertThat(unknown.problems()).singleElement().satisfies(p -> {
      assertThat(p.field()).isEqualTo("colour");
      assertThat(p.reason()).isEqualTo("is not a member of this job type's payload; allowed: n");
    });

    InvalidPayloadException wrongType = catchThrowableOfType(
        InvalidPayloadException.class,
        () -> client.enqueue("numbered", Map.of("n", "seven"), EnqueueOptions.DEFAULTS));
    assertThat(wrongType.problems()).singleElement().satisfies(p -> {
      assertThat(p.field()).isEqualTo("n");
      assertThat(p.reason()).isEqualTo("must be an integer");
    });

    InvalidPayloadException quotedNumber = catchThrowableOfType(
        InvalidPayloadException.class,
        () -> client.enqueue("numbered", Map.of("n", "7"), EnqueueOptions.DEFAULTS));
    assertThat(quotedNumber.problems())
        .singleElement()
        .satisfies(p -> assertThat(p.reason()).isEqualTo("must be an integer"));
    InvalidPayloadException fraction = catchThrowableOfType(
        InvalidPayloadException.class,
        () -> client.enqueue("numbered", Map.of("n", 1.5), EnqueueOptions.DEFAULTS));
    assertThat(fraction.problems())
        .singleElement()
        .satisfies(p -> assertThat(p.reason()).isEqualTo("must be an integer"));

    InvalidPayloadException notAnObject = catchThrowableOfType(
        InvalidPayloadException.class,
        () -> client.enqueue("numbered", List.of(1), EnqueueOptions.DEFAULTS));
    assertThat(notAnObject.problems())
        .singleElement()
        .satisfies(p -> assertThat(p.reason()).isEqualTo("must be an object"));

    for (InvalidPayloadException e : List.of(unknown, wrongType, notAnObject)) {
      assertThat(e.getMessage())
          .doesNotContain("io.pgjobs", "java.", "$", "Cannot deserialize", "VALUE_", "START_");
    }
    assertThat(count("pgjobs.jobs")).isZero();
  }
}
