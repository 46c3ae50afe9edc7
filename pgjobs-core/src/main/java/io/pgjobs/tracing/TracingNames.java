package io.pgjobs.tracing;

/**
 * The catalogue of what pgjobs traces: span names and attribute keys (OpenTelemetry messaging semantic
 * conventions plus pgjobs' own), documented in docs/operations.md ("Tracing").
 */
final class TracingNames {
  private TracingNames() {}

  /** The instrumentation scope (tracer) name. */
  public static final String SCOPE = "io.pgjobs";

  /** {@code messaging.system}: always {@value #SYSTEM}. */
  public static final String MESSAGING_SYSTEM = "messaging.system";
  /** The value of {@link #MESSAGING_SYSTEM}. */
  public static final String SYSTEM = "pgjobs";
  /** {@code messaging.destination.name}: the job's queue. */
  public static final String DESTINATION = "messaging.destination.name";
  /** {@code messaging.operation.type}: {@value #SEND} for an enqueue, {@value #PROCESS} for a run. */
  public static final String OPERATION_TYPE = "messaging.operation.type";
  /** {@code messaging.operation.name}: as {@link #OPERATION_TYPE}. */
  public static final String OPERATION_NAME = "messaging.operation.name";
  /** Operation of the PRODUCER span of an enqueue. */
  public static final String SEND = "send";
  /** Operation of the CONSUMER span of a run. */
  public static final String PROCESS = "process";
  /** {@code messaging.message.id}: the job id. */
  public static final String MESSAGE_ID = "messaging.message.id";
  /** {@code messaging.batch.message_count}: the number of jobs of a bulk enqueue. */
  public static final String BATCH_COUNT = "messaging.batch.message_count";
  /** {@code error.type}: the exception's class, or the outcome when there is none. */
  public static final String ERROR_TYPE = "error.type";

  /** {@code pgjobs.job.type}: the job type name. */
  public static final String JOB_TYPE = "pgjobs.job.type";
  /** {@code pgjobs.job.attempt}: the attempt (1-based). */
  public static final String JOB_ATTEMPT = "pgjobs.job.attempt";
  /** {@code pgjobs.job.max_attempts}: the job's attempt limit. */
  public static final String JOB_MAX_ATTEMPTS = "pgjobs.job.max_attempts";
  /**
   * {@code pgjobs.job.outcome}: how the attempt ended, as the {@code outcome} tag of the completed-jobs
   * metric: succeeded, retrying, failed, discarded, snoozed, cancelled, released, not_recorded (the write
   * matched nothing), error (the outcome could not be written), or let_go (the handler ignored its stop).
   */
  public static final String JOB_OUTCOME = "pgjobs.job.outcome";

  /** The longest stored trace context; longer ones keep their traceparent only. */
  public static final int TRACE_CONTEXT_MAX_CHARS = 1024;
}
