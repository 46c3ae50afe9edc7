package io.pgjobs.store;

/**
 * The LISTEN/NOTIFY channels of a pgjobs schema. The statements and the schema's triggers send on the
 * same names ({@code '{schema}_jobs_ready'} and so on).
 */
public final class Channels {
  private Channels() {}

  /** The LISTEN channel on which inserts of ready jobs are announced; the payload is the queue. */
  public static String ready(String schema) {
    return JobSql.requireSchema(schema) + "_jobs_ready";
  }

  /** The LISTEN channel on which cancellation of running jobs is announced; the payload is the job id. */
  public static String cancel(String schema) {
    return JobSql.requireSchema(schema) + "_jobs_cancel";
  }

  /** The LISTEN channel of job events (state changes and progress, one notification per statement). */
  public static String events(String schema) {
    return JobSql.requireSchema(schema) + "_job_events";
  }
}
