package io.pgjobs.tracing;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.TracerProvider;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapSetter;
import io.pgjobs.store.ClaimedJob;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * {@link JobTracing} with OpenTelemetry. Loaded only when the API is on the class path (see
 * {@link JobTracing#detect()}): it is the only pgjobs class that names OpenTelemetry types.
 *
 * <p><b>The stored context is always W3C Trace Context</b>, whatever propagators the application
 * configured: the column is pgjobs' own format, read by workers that may run in other services with
 * other settings, so it must not depend on their configuration.
 *
 * <p><b>Child and link.</b> The messaging conventions require a link from a process span to the context
 * the message was created in, and allow it as the parent when one message is processed (as here, one
 * job per span). The run span is both: a child of the enqueuing span, so the job reads as part of the
 * request that enqueued it in any trace view, and linked to it, as the conventions ask.
 */
final class OtelJobTracing implements JobTracing {
  private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();

  /** null: {@code GlobalOpenTelemetry}, looked up at each use. */
  private final OpenTelemetry fixed;
  /** The tracer of the last OpenTelemetry instance used (the global one may be registered late). */
  private volatile Tracing last;

  private OtelJobTracing(OpenTelemetry fixed) {
    this.fixed = fixed;
  }

  static JobTracing global() {
    return new OtelJobTracing(null);
  }

  static JobTracing of(Object openTelemetry) {
    if (!(Objects.requireNonNull(openTelemetry, "openTelemetry") instanceof OpenTelemetry otel)) {
      throw new IllegalArgumentException("not an io.opentelemetry.api.OpenTelemetry: "
          + openTelemetry.getClass().getName());
    }
    return new OtelJobTracing(otel);
  }

  /** The tracer to use now, or null when tracing records nothing (no SDK: the no-op provider). */
  private Tracer tracer() {
    OpenTelemetry otel = fixed;
    if (otel == null) {
      // isSet(), not get(): get() would register the no-op instance for good when nothing is
      // registered yet, and the application's later GlobalOpenTelemetry.set() would then fail. The
      // Java agent makes isSet() answer true.
      if (!GlobalOpenTelemetry.isSet()) {
        return null;
      }
      otel = GlobalOpenTelemetry.get();
    }
    Tracing t = last;
    if (t == null || t.otel != otel) {
      TracerProvider provider = otel.getTracerProvider();
      // The no-op provider (API without SDK): every span would be a no-op, so do not even build
      // them.
      t = new Tracing(
          otel, provider == TracerProvider.noop() ? null : provider.get(TracingNames.SCOPE));
      last = t;
    }
    return t.tracer;
  }

  private record Tracing(OpenTelemetry otel, Tracer tracer) {}

  @Override
  public Enqueue startEnqueue(String queue, String type, int count, boolean bulk) {
    Tracer tracer = tracer();
    if (tracer == null) {
      return Enqueue.NONE;
    }
    SpanBuilder builder = tracer
        .spanBuilder(TracingNames.SEND + " " + queue)
        .setSpanKind(SpanKind.PRODUCER)
        .setAttribute(TracingNames.MESSAGING_SYSTEM, TracingNames.SYSTEM)
        .setAttribute(TracingNames.DESTINATION, queue)
        .setAttribute(TracingNames.OPERATION_TYPE, TracingNames.SEND)
        .setAttribute(TracingNames.OPERATION_NAME, TracingNames.SEND)
        .setAttribute(TracingNames.JOB_TYPE, type);
    if (bulk) {
      builder.setAttribute(TracingNames.BATCH_COUNT, (long) count);
    }
    Span span = builder.startSpan();
    Scope scope = span.makeCurrent();
    return new OtelEnqueue(span, scope, format(span));
  }

  @Override
  public Run startRun(ClaimedJob job) {
    Tracer tracer = tracer();
    if (tracer == null) {
      return Run.NONE;
    }
    SpanBuilder builder = tracer
        .spanBuilder(TracingNames.PROCESS + " " + job.queue())
        .setSpanKind(SpanKind.CONSUMER)
        .setAttribute(TracingNames.MESSAGING_SYSTEM, TracingNames.SYSTEM)
        .setAttribute(TracingNames.DESTINATION, job.queue())
        .setAttribute(TracingNames.OPERATION_TYPE, TracingNames.PROCESS)
        .setAttribute(TracingNames.OPERATION_NAME, TracingNames.PROCESS)
        .setAttribute(TracingNames.MESSAGE_ID, job.id().toString())
        .setAttribute(TracingNames.JOB_TYPE, job.type())
        .setAttribute(TracingNames.JOB_ATTEMPT, (long) job.attempt())
        .setAttribute(TracingNames.JOB_MAX_ATTEMPTS, (long) job.maxAttempts());
    Context enqueued = parse(job.traceContext());
    SpanContext producer = Span.fromContext(enqueued).getSpanContext();
    if (producer.isValid()) {
      builder.setParent(enqueued).addLink(producer);
    } else {
      // A job enqueued without tracing: a trace of its own, not whatever the worker thread holds.
      builder.setNoParent();
    }
    Span span = builder.startSpan();
    return new OtelRun(span, span.makeCurrent());
  }

  /** {@code traceparent[;tracestate]} of {@code span}, or null if its context is invalid. */
  static String format(Span span) {
    if (!span.getSpanContext().isValid()) {
      return null;
    }
    String[] headers = new String[2];
    W3C.inject(Context.root().with(span), headers, SETTER);
    if (headers[0] == null) {
      return null;
    }
    String text =
        headers[1] == null || headers[1].isEmpty() ? headers[0] : headers[0] + ';' + headers[1];
    // A tracestate too long for the column is dropped (W3C lets an intermediary do so); the
    // traceparent alone still links the spans.
    return text.length() <= TracingNames.TRACE_CONTEXT_MAX_CHARS ? text : headers[0];
  }

  /** The context {@code text} (as {@link #format} writes it) names; root if null or malformed. */
  static Context parse(String text) {
    if (text == null) {
      return Context.root();
    }
    return W3C.extract(Context.root(), text, GETTER);
  }

  private static final TextMapSetter<String[]> SETTER = (carrier, key, value) -> {
    if ("traceparent".equals(key)) {
      carrier[0] = value;
    } else if ("tracestate".equals(key)) {
      carrier[1] = value;
    }
  };

  /**
   * Reads the stored text: the traceparent is everything before the first {@code ;} (it never holds
   * one), the tracestate everything after (its values may hold {@code ;}).
   */
  private static final TextMapGetter<String> GETTER = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(String carrier) {
      return List.of("traceparent", "tracestate");
    }

    @Override
    public String get(String carrier, String key) {
      if (carrier == null) {
        return null;
      }
      int semicolon = carrier.indexOf(';');
      return switch (key) {
        case "traceparent" -> semicolon < 0 ? carrier : carrier.substring(0, semicolon);
        case "tracestate" -> semicolon < 0 ? null : carrier.substring(semicolon + 1);
        default -> null;
      };
    }
  };

  private record OtelEnqueue(Span span, Scope scope, String traceContext) implements Enqueue {
    @Override
    public void end(UUID jobId, Throwable failure) {
      try {
        scope.close();
      } finally {
        if (jobId != null) {
          span.setAttribute(TracingNames.MESSAGE_ID, jobId.toString());
        }
        if (failure != null) {
          span.recordException(failure);
          span.setAttribute(TracingNames.ERROR_TYPE, failure.getClass().getName());
          span.setStatus(StatusCode.ERROR, String.valueOf(failure.getMessage()));
        }
        span.end();
      }
    }
  }

  private static final class OtelRun implements Run {
    private final Span span;
    private final Scope scope;
    private Throwable failure;

    OtelRun(Span span, Scope scope) {
      this.span = span;
      this.scope = scope;
    }

    @Override
    public void failure(Throwable failure) {
      this.failure = failure;
    }

    @Override
    public void end(String outcome) {
      try {
        scope.close();
      } finally {
        span.setAttribute(TracingNames.JOB_OUTCOME, outcome);
        if (failure != null) {
          span.recordException(failure);
        }
        if (isFailure(outcome)) {
          span.setAttribute(
              TracingNames.ERROR_TYPE, failure != null ? failure.getClass().getName() : outcome);
          span.setStatus(
              StatusCode.ERROR, failure != null ? String.valueOf(failure.getMessage()) : outcome);
        }
        span.end();
      }
    }

    private static boolean isFailure(String outcome) {
      return switch (outcome) {
        case "retrying", "failed", "discarded", "error", "let_go" -> true;
        default -> false;
      };
    }
  }
}
