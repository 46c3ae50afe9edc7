package io.pgjobs.tracing;

import io.pgjobs.store.ClaimedJob;
import java.util.UUID;

/**
 * The seam between pgjobs and OpenTelemetry: starts the PRODUCER span of an enqueue and the CONSUMER
 * span of a job run. Its types never mention OpenTelemetry, so the classes that call it load without the
 * API; the implementation that uses it ({@code OtelJobTracing}) is loaded only when
 * {@code io.opentelemetry.api.GlobalOpenTelemetry} is on the class path.
 *
 * <p>Both spans are current on the calling thread from their start to their end, so spans started
 * meanwhile (JDBC, HTTP, a handler's own) nest under them. Start and end on the same thread.
 */
public interface JobTracing {
  /** Traces nothing: the tracing used when the OpenTelemetry API is absent. */
  JobTracing NONE = new JobTracing() {};

  /**
   * The default: when the OpenTelemetry API is on the class path, traces with whatever
   * {@code GlobalOpenTelemetry} holds at the time of each enqueue or run (the Java agent's, or an SDK
   * the application registered; nothing while none is registered); otherwise {@link #NONE}.
   */
  static JobTracing detect() {
    return ApiPresence.PRESENT ? OtelJobTracing.global() : NONE;
  }

  /**
   * Traces with {@code openTelemetry}, an {@code io.opentelemetry.api.OpenTelemetry} (typed
   * {@code Object} so that this interface does not need the API to load).
   *
   * @throws IllegalArgumentException if it is not an OpenTelemetry instance
   */
  static JobTracing of(Object openTelemetry) {
    if (!ApiPresence.PRESENT) {
      throw new IllegalArgumentException(
          "the OpenTelemetry API (io.opentelemetry:opentelemetry-api) is not on the class path");
    }
    return OtelJobTracing.of(openTelemetry);
  }

  /**
   * Starts the PRODUCER span of an enqueue of {@code count} jobs of {@code type} into {@code queue} and
   * makes it current. {@code count} is 1 for a single enqueue; a bulk enqueue is one span.
   */
  default Enqueue startEnqueue(String queue, String type, int count, boolean bulk) {
    return Enqueue.NONE;
  }

  /**
   * Starts the CONSUMER span of one attempt of {@code job}, a child of the enqueuing span its trace
   * context names (and linked to it), and makes it current.
   */
  default Run startRun(ClaimedJob job) {
    return Run.NONE;
  }

  /** The span of an enqueue. */
  interface Enqueue {
    /** A span that records nothing. */
    Enqueue NONE = new Enqueue() {};

    /**
     * The trace context to store with the job(s): the W3C {@code traceparent}, then {@code ;} and the
     * {@code tracestate} if there is one; null when nothing is traced (no SDK registered). A span the
     * sampler dropped still has a valid context and is stored, so the run follows the same decision.
     */
    default String traceContext() {
      return null;
    }

    /**
     * Ends the span (and its scope): {@code jobId} is the single job enqueued (null for a bulk enqueue
     * or a failure); {@code failure} is recorded as the span's exception and error status.
     */
    default void end(UUID jobId, Throwable failure) {}
  }

  /** The span of one attempt of a job. */
  interface Run {
    /** A span that records nothing. */
    Run NONE = new Run() {};

    /** The attempt failed with {@code failure}: recorded as an exception event when the span ends. */
    default void failure(Throwable failure) {}

    /**
     * Ends the span (and its scope) with {@code outcome} (see {@link TracingNames#JOB_OUTCOME}); an
     * outcome that is a failure (retrying, failed, discarded, error, let_go) sets status ERROR.
     */
    default void end(String outcome) {}
  }

  /** Whether the OpenTelemetry API is on the class path, looked up once. */
  final class ApiPresence {
    static final boolean PRESENT = present();

    private ApiPresence() {}

    private static boolean present() {
      try {
        ClassLoader loader = JobTracing.class.getClassLoader();
        Class.forName("io.opentelemetry.api.GlobalOpenTelemetry", false, loader);
        Class.forName("io.opentelemetry.context.Context", false, loader);
        return true;
      } catch (ClassNotFoundException | LinkageError e) {
        return false;
      }
    }
  }
}
