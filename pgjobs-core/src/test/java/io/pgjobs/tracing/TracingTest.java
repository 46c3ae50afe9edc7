package io.pgjobs.tracing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsTestBase;
import io.pgjobs.RetryPolicy;
import io.pgjobs.SnoozeJobException;
import io.pgjobs.store.ClaimedJob;
import io.pgjobs.testkit.JvmProcess;
import io.pgjobs.testkit.Tags;
import io.pgjobs.worker.JobWorker;
import java.io.File;
import java.sql.Connection;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Acceptance 2 of issue 14 (OpenTelemetry): with the SDK's in-memory exporter, the run span of a job
 * executed by a real worker is a child of (and linked to) the enqueuing span, carries the documented
 * attributes, records a failing attempt's exception, and there is one span per attempt; without
 * OpenTelemetry nothing is recorded, nothing is stored, and pgjobs runs without the API on the class
 * path at all.
 */
@Tag(Tags.PROCESS)
class TracingTest extends PgJobsTestBase {
  static final JobType<Numbered> TRACED =
      JobType.of("traced", Numbered.class).withQueue("traced_q");
  /** Fails its first {@code n} attempts (n = payload), then succeeds. */
  static final JobType<Numbered> FLAKY = JobType.of("traced_flaky", Numbered.class)
      .withRetryPolicy(RetryPolicy.fixed(Duration.ofMillis(20)));
  /** Always throws. */
  static final JobType<Numbered> BROKEN =
      JobType.of("traced_broken", Numbered.class).withMaxAttempts(1);
  /** Snoozes 10 ms on its first run, then succeeds. */
  static final JobType<Numbered> SLEEPY = JobType.of("traced_sleepy", Numbered.class);
  /** Enqueues one TRACED child job. */
  static final JobType<Numbered> PARENT = JobType.of("traced_parent", Numbered.class);

  private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  private SdkTracerProvider tracerProvider;
  private OpenTelemetry otel;
  private Tracer tracer;
  private final Map<UUID, AtomicInteger> runs = new ConcurrentHashMap<>();
  /** The span current inside the TRACED handler, per job: what a handler's own span would nest under. */
  private final Map<UUID, SpanContext> currentInHandler = new ConcurrentHashMap<>();

  @BeforeEach
  void sdk() {
    tracerProvider = SdkTracerProvider.builder()
        .addSpanProcessor(SimpleSpanProcessor.create(exporter))
        .build();
    otel = OpenTelemetrySdk.builder()
        .setTracerProvider(tracerProvider)
        .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
        .build();
    tracer = otel.getTracer("test");
  }

  @AfterEach
  void closeSdk() {
    tracerProvider.close();
  }

  private JobWorker.Builder tracedWorker(OpenTelemetry openTelemetry) {
    JobWorker.Builder builder = worker().pollInterval(Duration.ofMillis(50));
    if (openTelemetry != null) {
      builder.openTelemetry(openTelemetry);
    }
    return builder
        .queue("traced_q", 4)
        .queue(JobType.DEFAULT_QUEUE, 4)
        .register(TRACED, (ctx, p) -> {
          currentInHandler.put(ctx.jobId(), Span.current().getSpanContext());
          // The handler's own work, as an instrumented HTTP or JDBC call would record it.
          Span own = tracer.spanBuilder("handler work").startSpan();
          own.end();
          return p.n();
        })
        .register(FLAKY, (ctx, p) -> {
          int run = runs.computeIfAbsent(ctx.jobId(), id -> new AtomicInteger()).incrementAndGet();
          if (run <= p.n()) {
            throw new IllegalStateException("flaky " + run);
          }
          return null;
        })
        .register(BROKEN, (ctx, p) -> {
          throw new IllegalArgumentException("broken on purpose");
        })
        .register(SLEEPY, (ctx, p) -> {
          if (runs.computeIfAbsent(ctx.jobId(), id -> new AtomicInteger()).incrementAndGet() == 1) {
            throw new SnoozeJobException(Duration.ofMillis(10));
          }
          return null;
        })
        .register(
            PARENT, (ctx, p) -> ctx.enqueue(TRACED, new Numbered(p.n())).job().id());
  }

  private JobClient tracedClient() {
    return JobClient.builder(db.dataSource()).openTelemetry(otel).build();
  }

  /** Runs {@code enqueue} inside a span named "request", as a web request's handler would. */
  private <T> T inRequest(java.util.function.Supplier<T> enqueue) {
    Span request = tracer.spanBuilder("request").setSpanKind(SpanKind.SERVER).startSpan();
    try (Scope ignored = request.makeCurrent()) {
      return enqueue.get();
    } finally {
      request.end();
    }
  }

  private List<SpanData> awaitSpans(String name, SpanKind kind, int count) {
    await()
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> spans(name, kind).size() >= count);
    return spans(name, kind);
  }

  private List<SpanData> spans(String name, SpanKind kind) {
    return exporter.getFinishedSpanItems().stream()
        .filter(s -> s.getName().equals(name) && s.getKind() == kind)
        .sorted(Comparator.comparing(SpanData::getStartEpochNanos))
        .toList();
  }

  private static String storedTraceContext(UUID id) {
    try (Connection c = db.dataSource().getConnection();
        var ps = c.prepareStatement(
            "SELECT trace_context FROM pgjobs.jobs WHERE id = ? UNION ALL SELECT trace_context FROM pgjobs.finished_jobs WHERE id = ?")) {
      ps.setObject(1, id);
      ps.setObject(2, id);
      try (var rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : "(no such job)";
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String attr(SpanData span, String key) {
    return span.getAttributes().get(AttributeKey.stringKey(key));
  }

  private static Long longAttr(SpanData span, String key) {
    return span.getAttributes().get(AttributeKey.longKey(key));
  }

  // ---------------------------------------------------------------- tests

  @Test
  void runSpanIsAChildOfAndLinkedToTheEnqueueSpanAcrossARealWorker() {
    start(tracedWorker(otel));
    UUID id =
        inRequest(() -> tracedClient().enqueue(TRACED, new Numbered(7)).job().id());

    SpanData producer = awaitSpans("send traced_q", SpanKind.PRODUCER, 1).get(0);
    SpanData run = awaitSpans("process traced_q", SpanKind.CONSUMER, 1).get(0);
    SpanData request = spans("request", SpanKind.SERVER).get(0);

    assertThat(producer.getParentSpanId()).isEqualTo(request.getSpanId());
    assertThat(producer.getTraceId()).isEqualTo(request.getTraceId());
    assertThat(attr(producer, "messaging.system")).isEqualTo("pgjobs");
    assertThat(attr(producer, "messaging.destination.name")).isEqualTo("traced_q");
    assertThat(attr(producer, "messaging.operation.type")).isEqualTo("send");
    assertThat(attr(producer, "messaging.message.id")).isEqualTo(id.toString());
    assertThat(attr(producer, "pgjobs.job.type")).isEqualTo("traced");

    assertThat(run.getTraceId()).isEqualTo(producer.getTraceId());
    assertThat(run.getParentSpanId()).isEqualTo(producer.getSpanId());
    assertThat(run.getLinks())
        .singleElement()
        .satisfies(
            link -> assertThat(link.getSpanContext().getSpanId()).isEqualTo(producer.getSpanId()));
    assertThat(attr(run, "messaging.system")).isEqualTo("pgjobs");
    assertThat(attr(run, "messaging.destination.name")).isEqualTo("traced_q");
    assertThat(attr(run, "messaging.operation.type")).isEqualTo("process");
    assertThat(attr(run, "messaging.operation.name")).isEqualTo("process");
    assertThat(attr(run, "messaging.message.id")).isEqualTo(id.toString());
    assertThat(attr(run, "pgjobs.job.type")).isEqualTo("traced");
    assertThat(longAttr(run, "pgjobs.job.attempt")).isEqualTo(1L);
    assertThat(longAttr(run, "pgjobs.job.max_attempts"))
        .isEqualTo((long) JobType.DEFAULT_MAX_ATTEMPTS);
    assertThat(attr(run, "pgjobs.job.outcome")).isEqualTo("succeeded");
    assertThat(run.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);

    awaitState(id, JobState.SUCCEEDED);
    assertThat(storedTraceContext(id))
        .as("the W3C traceparent of the PRODUCER span, kept in finished_jobs")
        .isEqualTo("00-" + producer.getTraceId() + "-" + producer.getSpanId() + "-"
            + producer.getSpanContext().getTraceFlags().asHex());
    assertThat(producer.getSpanContext().isSampled()).isTrue();
  }

  @Test
  void handlerRunsWithTheRunSpanCurrentSoItsOwnSpansNestUnderIt() {
    start(tracedWorker(otel));
    UUID id =
        inRequest(() -> tracedClient().enqueue(TRACED, new Numbered(1)).job().id());

    SpanData run = awaitSpans("process traced_q", SpanKind.CONSUMER, 1).get(0);
    SpanData own = awaitSpans("handler work", SpanKind.INTERNAL, 1).get(0);
    assertThat(currentInHandler.get(id).getSpanId()).isEqualTo(run.getSpanId());
    assertThat(own.getParentSpanId()).isEqualTo(run.getSpanId());
    assertThat(own.getTraceId()).isEqualTo(run.getTraceId());
  }

  @Test
  void failingAttemptRecordsTheExceptionAndErrorStatus() {
    start(tracedWorker(otel));
    UUID id =
        inRequest(() -> tracedClient().enqueue(BROKEN, new Numbered(1)).job().id());

    SpanData run = awaitSpans("process default", SpanKind.CONSUMER, 1).get(0);
    assertThat(run.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(run.getStatus().getDescription()).isEqualTo("broken on purpose");
    assertThat(attr(run, "pgjobs.job.outcome")).isEqualTo("failed");
    assertThat(attr(run, "error.type")).isEqualTo(IllegalArgumentException.class.getName());
    EventData exception = run.getEvents().stream()
        .filter(e -> e.getName().equals("exception"))
        .findFirst()
        .orElseThrow();
    assertThat(exception.getAttributes().get(AttributeKey.stringKey("exception.type")))
        .isEqualTo(IllegalArgumentException.class.getName());
    assertThat(exception.getAttributes().get(AttributeKey.stringKey("exception.message")))
        .isEqualTo("broken on purpose");
    assertThat(awaitState(id, JobState.FAILED).attempts()).isEqualTo(1);
  }

  @Test
  void retriedJobGivesOneSpanPerAttempt() {
    start(tracedWorker(otel));
    UUID id =
        inRequest(() -> tracedClient().enqueue(FLAKY, new Numbered(2)).job().id());

    awaitState(id, JobState.SUCCEEDED);
    List<SpanData> attempts = awaitSpans("process default", SpanKind.CONSUMER, 3);
    SpanData producer = spans("send default", SpanKind.PRODUCER).get(0);
    assertThat(attempts).hasSize(3);
    assertThat(attempts)
        .extracting(s -> longAttr(s, "pgjobs.job.attempt"))
        .containsExactly(1L, 2L, 3L);
    assertThat(attempts)
        .extracting(s -> attr(s, "pgjobs.job.outcome"))
        .containsExactly("retrying", "retrying", "succeeded");
    assertThat(attempts)
        .extracting(s -> s.getStatus().getStatusCode())
        .containsExactly(StatusCode.ERROR, StatusCode.ERROR, StatusCode.UNSET);
    assertThat(attempts).allSatisfy(s -> {
      assertThat(s.getParentSpanId()).isEqualTo(producer.getSpanId());
      assertThat(attr(s, "messaging.message.id")).isEqualTo(id.toString());
    });
    assertThat(attempts.get(0).getEvents())
        .anySatisfy(e -> assertThat(e.getName()).isEqualTo("exception"));
    assertThat(attempts.get(2).getEvents()).isEmpty();
  }

  @Test
  void snoozeIsNotAnError() {
    start(tracedWorker(otel));
    UUID id =
        inRequest(() -> tracedClient().enqueue(SLEEPY, new Numbered(1)).job().id());

    awaitState(id, JobState.SUCCEEDED);
    List<SpanData> runs = awaitSpans("process default", SpanKind.CONSUMER, 2);
    assertThat(runs)
        .extracting(s -> attr(s, "pgjobs.job.outcome"))
        .containsExactly("snoozed", "succeeded");
    assertThat(runs).allSatisfy(s -> {
      assertThat(s.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
      assertThat(s.getEvents()).isEmpty();
    });
  }

  @Test
  void bulkEnqueueIsOneProducerSpanAndEveryRunIsItsChild() {
    start(tracedWorker(otel));
    List<UUID> ids = inRequest(() -> tracedClient()
        .enqueueAll(
            TRACED,
            List.of(new Numbered(1), new Numbered(2), new Numbered(3)),
            EnqueueOptions.DEFAULTS));

    SpanData producer = awaitSpans("send traced_q", SpanKind.PRODUCER, 1).get(0);
    assertThat(longAttr(producer, "messaging.batch.message_count")).isEqualTo(3L);
    List<SpanData> runs = awaitSpans("process traced_q", SpanKind.CONSUMER, 3);
    assertThat(runs)
        .extracting(s -> attr(s, "messaging.message.id"))
        .containsExactlyInAnyOrderElementsOf(ids.stream().map(UUID::toString).toList());
    assertThat(runs)
        .allSatisfy(s -> assertThat(s.getParentSpanId()).isEqualTo(producer.getSpanId()));
    assertThat(spans("send traced_q", SpanKind.PRODUCER)).hasSize(1);
  }

  @Test
  void jobEnqueuedByAHandlerJoinsTheTraceOfTheRunThatEnqueuedIt() {
    start(tracedWorker(otel));
    inRequest(() -> tracedClient().enqueue(PARENT, new Numbered(5)).job().id());

    SpanData parentRun = awaitSpans("process default", SpanKind.CONSUMER, 1).get(0);
    SpanData childSend = awaitSpans("send traced_q", SpanKind.PRODUCER, 1).get(0);
    SpanData childRun = awaitSpans("process traced_q", SpanKind.CONSUMER, 1).get(0);
    assertThat(childSend.getParentSpanId()).isEqualTo(parentRun.getSpanId());
    assertThat(childRun.getParentSpanId()).isEqualTo(childSend.getSpanId());
    assertThat(childRun.getTraceId()).isEqualTo(parentRun.getTraceId());
  }

  @Test
  void tracestateIsStoredAndRestoredWithTheTraceparent() {
    start(tracedWorker(otel));
    // A caller's context from upstream with a vendor's tracestate (values may hold ';').
    SpanContext upstream = SpanContext.createFromRemoteParent(
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
        TraceFlags.getSampled(),
        TraceState.builder().put("vendor", "a;b").put("other", "x").build());
    UUID id;
    try (Scope ignored = Context.root().with(Span.wrap(upstream)).makeCurrent()) {
      id = tracedClient().enqueue(TRACED, new Numbered(3)).job().id();
    }
    SpanData run = awaitSpans("process traced_q", SpanKind.CONSUMER, 1).get(0);
    assertThat(run.getTraceId()).isEqualTo(upstream.getTraceId());
    assertThat(run.getParentSpanContext().getTraceState().asMap())
        .containsEntry("vendor", "a;b")
        .containsEntry("other", "x");
    awaitState(id, JobState.SUCCEEDED);
    // The traceparent is the PRODUCER span's; the tracestate as W3C writes it (newest entry first).
    assertThat(storedTraceContext(id))
        .startsWith("00-" + upstream.getTraceId() + "-")
        .endsWith(";other=x,vendor=a;b");
  }

  @Test
  void operatorRetryKeepsTheJobInTheTraceThatEnqueuedIt() {
    start(tracedWorker(otel));
    UUID id =
        inRequest(() -> tracedClient().enqueue(BROKEN, new Numbered(1)).job().id());
    awaitState(id, JobState.FAILED);
    SpanData producer = awaitSpans("send default", SpanKind.PRODUCER, 1).get(0);

    client.retry(id); // from finished_jobs back to jobs, with its trace context
    List<SpanData> runs = awaitSpans("process default", SpanKind.CONSUMER, 2);
    assertThat(runs)
        .allSatisfy(s -> assertThat(s.getParentSpanId()).isEqualTo(producer.getSpanId()));
  }

  @Test
  void schemaRefusesATraceContextLongerThan1024Characters() {
    UUID id = client.enqueue(NUMBERED, new Numbered(1)).job().id();
    db.execute("UPDATE pgjobs.jobs SET trace_context = repeat('x', 1024) WHERE id = '" + id + "'");
    assertThatThrownBy(() -> db.execute(
            "UPDATE pgjobs.jobs SET trace_context = repeat('x', 1025) WHERE id = '" + id + "'"))
        .hasMessageContaining("jobs_trace_context_length");
  }

  @Test
  void failedEnqueueRecordsTheExceptionOnItsSpan() throws Exception {
    Connection closed = db.dataSource().getConnection();
    closed.close();
    assertThatThrownBy(
            () -> tracedClient().enqueue(closed, TRACED, new Numbered(1), EnqueueOptions.DEFAULTS))
        .isInstanceOf(io.pgjobs.PgJobsException.class);
    SpanData send = awaitSpans("send traced_q", SpanKind.PRODUCER, 1).get(0);
    assertThat(send.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(send.getEvents()).anySatisfy(e -> assertThat(e.getName()).isEqualTo("exception"));
  }

  @Test
  void withoutOpenTelemetryNothingIsRecordedAndNoTraceContextIsStored() {
    // Default (GlobalOpenTelemetry, which nothing registered) for the worker and the first client,
    // OpenTelemetry.noop() for the second: neither records or stores anything, even with a caller's
    // span current.
    start(tracedWorker(null));
    JobClient byDefault = JobClient.builder(db.dataSource()).build();
    JobClient noop =
        JobClient.builder(db.dataSource()).openTelemetry(OpenTelemetry.noop()).build();
    List<UUID> ids = inRequest(() -> {
      List<UUID> all = new java.util.ArrayList<>();
      all.add(byDefault.enqueue(TRACED, new Numbered(1)).job().id());
      all.add(noop.enqueue(TRACED, new Numbered(2)).job().id());
      all.addAll(byDefault.enqueueAll(TRACED, List.of(new Numbered(3)), EnqueueOptions.DEFAULTS));
      all.addAll(noop.enqueueAll(TRACED, List.of(new Numbered(4)), EnqueueOptions.DEFAULTS));
      return all;
    });
    ids.forEach(id -> awaitState(id, JobState.SUCCEEDED));

    assertThat(ids).allSatisfy(id -> assertThat(storedTraceContext(id)).isNull());
    // Only the test's own spans: the request, and the handlers' own work, each a root (no run
    // span).
    assertThat(exporter.getFinishedSpanItems())
        .extracting(SpanData::getName)
        .allMatch(name -> name.equals("request") || name.equals("handler work"));
    assertThat(exporter.getFinishedSpanItems())
        .filteredOn(s -> s.getName().equals("handler work"))
        .hasSize(4)
        .allSatisfy(s -> assertThat(s.getParentSpanContext().isValid()).isFalse());
    assertThat(currentInHandler.values())
        .allSatisfy(c -> assertThat(c.isValid()).isFalse());
  }

  @Test
  void withoutAnSdkNoSpanIsEvenBuilt() {
    // The hot paths get the shared constants back: no span builder, no scope, no allocation.
    ClaimedJob claimed = new ClaimedJob(
        UUID.randomUUID(),
        "t",
        "q",
        "{}",
        0,
        1,
        3,
        null,
        null,
        null,
        null,
        1L,
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    for (JobTracing tracing :
        List.of(JobTracing.detect(), JobTracing.of(OpenTelemetry.noop()), JobTracing.NONE)) {
      assertThat(tracing.startEnqueue("q", "t", 1, false)).isSameAs(JobTracing.Enqueue.NONE);
      assertThat(tracing.startRun(claimed)).isSameAs(JobTracing.Run.NONE);
    }
    assertThat(JobTracing.detect())
        .as("the API is on this class path")
        .isNotSameAs(JobTracing.NONE);
  }

  @Test
  void pgjobsRunsWithoutTheOpenTelemetryApiOnTheClassPath() throws Exception {
    String classPath = Arrays.stream(
            System.getProperty("java.class.path").split(File.pathSeparator))
        .filter(entry -> !entry.contains("opentelemetry"))
        .collect(Collectors.joining(File.pathSeparator));
    try (JvmProcess process = JvmProcess.start(
        "no-opentelemetry",
        NoOpenTelemetryMain.class,
        List.of(db.jdbcUrl()),
        Map.of(),
        classPath)) {
      assertThat(process.process().waitFor(90, TimeUnit.SECONDS))
          .as("exits%n%s", process.output())
          .isTrue();
      assertThat(process.process().exitValue())
          .as("exit code%n%s", process.output())
          .isZero();
      assertThat(process.output())
          .contains(NoOpenTelemetryMain.API_ABSENT)
          .contains(NoOpenTelemetryMain.TRACING_NONE)
          .contains(NoOpenTelemetryMain.OK + " 4");
    }
    assertThat(
            count(
                "SELECT count(*) FROM pgjobs.finished_jobs WHERE trace_context IS NULL AND state = 'succeeded'"))
        .isEqualTo(4);
  }
}
